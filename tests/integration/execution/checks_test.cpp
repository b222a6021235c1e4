// What the sender front end promises beyond moving data, over in-process loopbacks: a receive
// on an endpoint whose receive defaults carry FI_MULTI_RECV is refused before posting,
// poll_completions counts what it delivered, sends the provider refuses as busy reach it in
// the order they were started, and a poll's last delivery is its last use of the queue (that of
// a poll nested in a delivery is not).
#include "busy_sends.hpp"
#include "guard_page_resource.hpp"
#include "harness.hpp"
#include "sender_receiver.hpp"

#include <loom/execution.hpp>

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <functional>
#include <new>
#include <span>

using namespace loom_test;
namespace ex = loom::execution;

namespace {

TEST(SenderChecks, a_receive_inheriting_multi_receive_is_refused_before_posting) {
    auto st = open_multi_recv_default_stack();
    if (!st) GTEST_SKIP() << "no tcp;ofi_rxm with multi-receive here: " << st.error().message();
    auto& ep = st->ep;
    auto& cq = st->cq;
    ASSERT_TRUE(ep.rx_op_flags().any(loom::op_flag::multi_recv)) << "the receive defaults keep the flag";
    std::array<std::byte, 64> in{};
    recorded<std::size_t> rec;
    auto op = ex::connect(loom::async(ep).recv_from(in, nullptr, loom::fabric_addrs::unspecified, &cq),
                          recording_receiver<std::size_t>{&rec});
    ex::start(op);
    ASSERT_EQ(rec.how.load(), completion_kind::error) << "refused at start, before any poll";
    EXPECT_EQ(rec.error, loom::make_error_code(loom::errc::not_supported));
    EXPECT_EQ(cq.registry()->size(), 0u) << "nothing was registered for the provider to complete";
}

TEST(SenderChecks, poll_completions_counts_what_it_delivered) {
    auto st = open_stack("tcp", loom::capability::msg | loom::capability::tagged);
    ASSERT_TRUE(st) << st.error().message();
    const auto self = st->av.insert(st->ep.name().value()).value();
    std::array<std::byte, 8> out{}, in{};
    out.fill(std::byte{0x42});
    auto messages = loom::async(st->ep);
    recorded<std::size_t> received;
    recorded<> sent;
    auto r = ex::connect(messages.recv_from(in, nullptr, loom::fabric_addrs::unspecified, &st->cq),
                         recording_receiver<std::size_t>{&received});
    auto s = ex::connect(messages.send_to(out, nullptr, self, &st->cq), recording_receiver<>{&sent});
    ex::start(r);
    ex::start(s);
    std::size_t delivered = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (delivered < 2 && std::chrono::steady_clock::now() < deadline) {
        auto p = ex::poll_completions(st->cq);
        ASSERT_FALSE(p.unhandled);
        delivered += p.completed;
    }
    EXPECT_EQ(delivered, 2u);
    EXPECT_EQ(ex::poll_completions(st->cq).completed, 0u) << "nothing more to deliver";
    ASSERT_EQ(received.how.load(), completion_kind::value);
    EXPECT_EQ(*received.value, 8u);
    EXPECT_EQ(sent.how.load(), completion_kind::value);
    EXPECT_EQ(in, out);
}

TEST(SenderChecks, sends_refused_as_busy_reach_the_provider_in_the_order_started) {
    auto st = open_stack("shm", loom::capability::msg | loom::capability::tagged);
    if (!st) GTEST_SKIP() << "no shm here";
    const auto self = st->av.insert(st->ep.name().value()).value();
    std::array<std::byte, 8> first{}, second{}, in0{}, in1{};
    first.fill(std::byte{0xa1});
    second.fill(std::byte{0xb2});
    auto messages = loom::async(st->ep);
    recorded<std::size_t> got0, got1;
    recorded<> sent0, sent1;
    auto r0 = ex::connect(messages.tagged_recv_from(in0, nullptr, loom::fabric_addrs::unspecified, 7, 0, &st->cq),
                          recording_receiver<std::size_t>{&got0});
    auto r1 = ex::connect(messages.tagged_recv_from(in1, nullptr, loom::fabric_addrs::unspecified, 7, 0, &st->cq),
                          recording_receiver<std::size_t>{&got1});
    ex::start(r0);
    ex::start(r1);
    const busy_sends busy(st->ep.native(), 1);
    auto s0 = ex::connect(messages.tagged_send_to(first, nullptr, self, 7, &st->cq), recording_receiver<>{&sent0});
    auto s1 = ex::connect(messages.tagged_send_to(second, nullptr, self, 7, &st->cq), recording_receiver<>{&sent1});
    ex::start(s0);  // refused: deferred
    ex::start(s1);  // must not pass it
    EXPECT_EQ(busy_sends::calls(), 1) << "the second send went to the provider ahead of the first";
    EXPECT_EQ(st->cq.registry()->deferred_count(), 2u);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (got1.how.load() == completion_kind::none && std::chrono::steady_clock::now() < deadline)
        ASSERT_FALSE(ex::poll_completions(st->cq).unhandled);
    ASSERT_EQ(got0.how.load(), completion_kind::value);
    ASSERT_EQ(got1.how.load(), completion_kind::value);
    EXPECT_EQ(in0, first) << "the first receive got the second message";
    EXPECT_EQ(in1, second);
    EXPECT_GE(busy_sends::calls(), 3);  // shm may refuse the first send to a peer itself
    while ((sent0.how.load() == completion_kind::none || sent1.how.load() == completion_kind::none) &&
           std::chrono::steady_clock::now() < deadline)
        (void)ex::poll_completions(st->cq);
    EXPECT_EQ(sent0.how.load(), completion_kind::value);
    EXPECT_EQ(sent1.how.load(), completion_kind::value);
}

/// An operation of a front end of the test's own (a send or a receive): records its deliveries
/// and whether the last was final, and may run something inside its delivery.
struct recording_op : loom::registered_completion {
    recording_op() : registered_completion(&deliver) {}
    static void deliver(registered_completion& self, const loom::completion_event&, bool final_delivery) noexcept {
        auto& o = static_cast<recording_op&>(self);
        o.final_delivery = final_delivery;
        ++o.delivered;
        if (o.inside) o.inside(o);
    }
    int delivered{0};
    bool final_delivery{false};
    std::function<void(recording_op&)> inside;
};

/// Registers `op` and sends `out` to `dest` with it, polling while the provider is busy (the
/// first sends to a peer, while it connects).
auto send_polling(stack& st, recording_op& op, std::span<const std::byte> out, loom::fabric_addr dest) -> bool {
    if (!st.cq.registry()->add(op)) return false;
    for (int i = 0; i < 100000; ++i) {
        const auto sent = st.ep.send(out, dest, nullptr, op.context());
        if (sent) return true;
        if (!loom::is_again(sent.error())) return false;
        (void)ex::poll_completions(st.cq);
    }
    return false;
}

TEST(SenderChecks, a_polls_last_delivery_is_its_last_use_of_the_queue) {
    // The stack and the queue's registry lie in pages that lose all access when freed: a reader
    // that touched either after its last delivery would stop here with SIGSEGV.
    loom::test::guard_page_resource pool;
    const auto info = find_info("tcp", loom::capability::msg | loom::capability::tagged);
    ASSERT_TRUE(info) << info.error().message();
    auto made = open_stack_of(*info, 0, {.size = 64}, &pool);
    ASSERT_TRUE(made) << made.error().message();
    auto* st = new (pool.allocate(sizeof(stack), alignof(stack))) stack(std::move(*made));
    const auto self = st->av.insert(st->ep.name().value()).value();
    std::array<std::byte, 8> out{}, in{};
    bool ended = false;
    std::array<recording_op, 2> ops;  // a receive and a send: the first final delivery ends it all
    for (auto& o : ops)
        o.inside = [&](recording_op& op) {
            if (!op.final_delivery) return;
            st->~stack();
            pool.deallocate(st, sizeof(stack), alignof(stack));
            ended = true;
        };
    ASSERT_TRUE(st->cq.registry()->add(ops[0]));
    ASSERT_TRUE(st->ep.recv(in, loom::fabric_addrs::unspecified, nullptr, ops[0].context()));
    ASSERT_TRUE(send_polling(*st, ops[1], out, self));
    loom::completion_queue& cq = st->cq;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!ended && std::chrono::steady_clock::now() < deadline) ASSERT_FALSE(ex::poll_completions(cq).unhandled);
    ASSERT_TRUE(ended) << "no delivery was a poll's last";
    EXPECT_GE(ops[0].delivered + ops[1].delivered, 1);
    EXPECT_GE(pool.freed(), 2u) << "the registry and the stack went back to the resource";
}

TEST(SenderChecks, a_poll_nested_in_a_delivery_is_not_the_last_use_of_the_queue) {
    auto st = open_stack("shm", loom::capability::msg | loom::capability::tagged);
    if (!st) GTEST_SKIP() << "no shm here";
    const auto self = st->av.insert(st->ep.name().value()).value();
    std::array<std::byte, 8> out{};
    std::array<recording_op, 4> ops;  // a warm-up send, a, b, and c sent from inside a's delivery
    ASSERT_TRUE(send_polling(*st, ops[0], out, self));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (ops[0].delivered == 0 && std::chrono::steady_clock::now() < deadline) (void)ex::poll_completions(st->cq);
    ASSERT_EQ(ops[0].delivered, 1);
    recording_op& a = ops[1];
    recording_op& b = ops[2];
    recording_op& c = ops[3];
    a.inside = [&](recording_op&) {
        ASSERT_TRUE(send_polling(*st, c, out, self));
        while (c.delivered == 0) (void)ex::poll_completions(st->cq);  // a reader nested in a's delivery
    };
    ASSERT_TRUE(send_polling(*st, a, out, self));
    ASSERT_TRUE(send_polling(*st, b, out, self));  // shm completes both sends as they are posted: one batch
    while (b.delivered == 0 && std::chrono::steady_clock::now() < deadline) (void)ex::poll_completions(st->cq);
    ASSERT_TRUE(a.delivered == 1 && b.delivered == 1 && c.delivered == 1);
    EXPECT_FALSE(a.final_delivery) << "a and b were read in one batch, a first";
    EXPECT_FALSE(c.final_delivery) << "the nested poll's last delivery was taken for the outer reader's";
    EXPECT_TRUE(b.final_delivery);
}

}  // namespace
