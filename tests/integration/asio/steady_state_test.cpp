// The Asio front end allocates nothing per operation once warm: a tagged receive and a tagged
// send of 8 bytes to the endpoint itself (shm), driven by io_context::run_one with the service
// polling at zero interval, as loom-bench's asio path runs them. The operation states, their
// completions and the service's posted passes all reuse memory.
#include "allocation_count.hpp"
#include "harness.hpp"

#include <loom/asio.hpp>

#include <gtest/gtest.h>

#include <array>
#include <optional>

using namespace loom_test;

namespace {

TEST(asio_steady_state, a_send_and_receive_pair_allocates_nothing_once_warm) {
    auto st = open_stack("shm", loom::capability::msg | loom::capability::tagged, 0, {.size = 64});
    if (!st && st.error() == loom::make_error_code(loom::errc::no_data)) GTEST_SKIP() << "no shm here";
    ASSERT_TRUE(st) << st.error().message();
    const auto self = st->av.insert(st->ep.name().value());
    ASSERT_TRUE(self);
    std::array<std::byte, 8> out{}, in{};
    auto out_mr = loom::memory_region::register_memory(st->domain, std::span{out}, loom::mr_access_flags::send);
    auto in_mr = loom::memory_region::register_memory(st->domain, std::span{in}, loom::mr_access_flags::recv);
    ASSERT_TRUE(out_mr && in_mr);

    ::asio::io_context ioc;
    auto work = ::asio::make_work_guard(ioc);
    loom::asio::endpoint ep(ioc, std::move(st->ep), st->cq, st->cq);
    auto& service = loom::asio::fabric_service::use(ioc);
    ASSERT_TRUE(service.register_cq(st->cq));
    service.start();
    const loom::asio::mutable_registered_buffer rb{::asio::buffer(in.data(), in.size()), &*in_mr};
    const loom::asio::const_registered_buffer sb{::asio::buffer(out.data(), out.size()), &*out_mr};
    int done = 0;
    auto exchange = [&](int rounds) {
        for (int i = 0; i < rounds && done >= 0; ++i) {
            done = 0;
            auto count = [&done](std::error_code ec, std::size_t n) { done += ec || n != 8 ? -1000 : 1; };
            ep.async_tagged_receive(rb, 1, count);
            ep.async_tagged_send_to(sb, *self, 1, count);
            while (done >= 0 && done < 2) ioc.run_one();
        }
    };
    exchange(64);  // caches warm: per-thread blocks, the io_context's queues
    ASSERT_EQ(done, 2);
    const long before = loom::test::allocations_so_far();
    const long aligned_before = loom::test::aligned_allocations_so_far();
    exchange(1000);
    const long allocated = loom::test::allocations_so_far() - before;
    const long aligned = loom::test::aligned_allocations_so_far() - aligned_before;
    ASSERT_EQ(done, 2);
    EXPECT_EQ(allocated, 0) << "operator new in 1,000 send/receive pairs";
    EXPECT_EQ(aligned, 0) << "aligned allocations in 1,000 send/receive pairs (Asio's handler memory)";
    service.stop();
}

}  // namespace
