// The sender front end allocates nothing per operation: a tagged receive sender and a tagged
// send sender of 8 bytes to the endpoint itself (shm), connected into storage the program owns
// and driven by poll_completions; and, where shm offers RMA, a write and a read sender. Nothing
// is warmed up first: the operation states live in that storage, and the registry files them
// without allocating.
#include "allocation_count.hpp"
#include "harness.hpp"

#include <loom/execution.hpp>

#include <gtest/gtest.h>

#include <array>
#include <optional>

using namespace loom_test;

namespace {

namespace ex = loom::execution;

/// Counts completions; any failure makes the count negative.
struct count_receiver {
    using receiver_concept = ex::receiver_t;
    int* done;
    void set_value(auto&&...) && noexcept { ++*done; }
    void set_error(std::error_code) && noexcept { *done = -1000; }
    void set_stopped() && noexcept { *done = -1000; }
};

template <class Sender>
using op_of = ex::connect_result_t<Sender, count_receiver>;

/// Connects `s` into `storage` (the previous operation there has completed) and starts it.
template <class Op, class Sender>
void start_in(std::optional<Op>& storage, Sender&& s, int& done) {
    auto& op = storage.emplace(
        ex::detail::emplace_from{[&] { return ex::connect(static_cast<Sender&&>(s), count_receiver{&done}); }});
    ex::start(op);
}

/// Polls until `want` operations completed (or one failed).
void poll_until(loom::completion_queue& cq, const int& done, int want) {
    while (done >= 0 && done < want) {
        auto r = ex::poll_completions(cq);
        ASSERT_FALSE(r.unhandled) << r.unhandled->error.message();
    }
}

struct registered_pair {
    std::array<std::byte, 8> out{}, in{};
    loom::memory_region out_mr, in_mr;
};

TEST(sender_steady_state, message_senders_allocate_nothing_per_operation) {
    auto st = open_stack("shm", loom::capability::msg | loom::capability::tagged, 0, {.size = 64});
    if (!st && st.error() == loom::make_error_code(loom::errc::no_data)) GTEST_SKIP() << "no shm here";
    ASSERT_TRUE(st) << st.error().message();
    const auto self = st->av.insert(st->ep.name().value());
    ASSERT_TRUE(self);
    registered_pair b;
    b.out_mr = loom::memory_region::register_memory(st->domain, std::span{b.out}, loom::mr_access_flags::send).value();
    b.in_mr = loom::memory_region::register_memory(st->domain, std::span{b.in}, loom::mr_access_flags::recv).value();
    auto messages = loom::async(st->ep);
    std::optional<op_of<loom::message_senders::receive_sender>> recv_op;
    std::optional<op_of<loom::message_senders::send_sender>> send_op;

    const long before = loom::test::allocations_so_far();
    const long aligned_before = loom::test::aligned_allocations_so_far();
    int done = 0;
    for (int i = 0; i < 1000 && done >= 0; ++i) {
        done = 0;
        b.out[0] = static_cast<std::byte>(i);
        start_in(recv_op,
                 messages.tagged_recv_from(b.in, b.in_mr.descriptor(), loom::fabric_addrs::unspecified, 3, 0, &st->cq),
                 done);
        start_in(send_op, messages.tagged_send_to(b.out, b.out_mr.descriptor(), *self, 3, &st->cq), done);
        poll_until(st->cq, done, 2);
        ASSERT_EQ(b.in[0], static_cast<std::byte>(i)) << "pair " << i;
    }
    const long allocated = loom::test::allocations_so_far() - before;
    const long aligned = loom::test::aligned_allocations_so_far() - aligned_before;
    ASSERT_EQ(done, 2);
    EXPECT_EQ(allocated, 0) << "operator new in 1,000 send/receive sender pairs";
    EXPECT_EQ(aligned, 0) << "aligned allocations in 1,000 send/receive sender pairs";
}

TEST(sender_steady_state, rma_senders_allocate_nothing_per_operation) {
    auto st = open_stack("shm", loom::capability::msg | loom::capability::rma, 0, {.size = 64});
    if (!st && st.error() == loom::make_error_code(loom::errc::no_data)) GTEST_SKIP() << "no shm RMA here";
    ASSERT_TRUE(st) << st.error().message();
    const auto self = st->av.insert(st->ep.name().value());
    ASSERT_TRUE(self);
    using acc = loom::mr_access_flags;
    registered_pair b;
    b.out_mr =
        loom::memory_region::register_memory(st->domain, std::span{b.out}, acc::write | acc::remote_read).value();
    b.in_mr = loom::memory_region::register_memory(st->domain, std::span{b.in}, acc::read | acc::remote_write).value();
    const auto in_remote = loom::remote_memory::from_mr(b.in_mr).value();
    auto one_sided = loom::rma_async(st->ep);
    using write_sender = decltype(one_sided.write_to(b.out, b.out_mr, *self, in_remote, &st->cq));
    std::optional<op_of<write_sender>> write_op;

    const long before = loom::test::allocations_so_far();
    int done = 0;
    for (int i = 0; i < 1000 && done >= 0; ++i) {
        done = 0;
        b.out[1] = static_cast<std::byte>(i);
        start_in(write_op, one_sided.write_to(b.out, b.out_mr, *self, in_remote, &st->cq), done);
        poll_until(st->cq, done, 1);
        ASSERT_EQ(b.in[1], static_cast<std::byte>(i)) << "write " << i;
    }
    const long allocated = loom::test::allocations_so_far() - before;
    ASSERT_EQ(done, 1);
    EXPECT_EQ(allocated, 0) << "operator new in 1,000 RMA write senders";
}

}  // namespace
