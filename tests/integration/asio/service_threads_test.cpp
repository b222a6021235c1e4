// The fabric service used from several threads at once: two threads run the io_context, the
// test thread starts operations and polls, a third registers and deregisters another queue.
// Built once normally and once under ThreadSanitizer (label tsan).
#include "core_support.hpp"

#include <loom/asio.hpp>

#include <asio/executor_work_guard.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace {

TEST(AsioServiceThreads, operations_started_polled_and_completed_from_several_threads) {
    // Submissions and reads from different threads: a provider domain that allows it.
    auto info = loom::query_fabric({.capabilities = loom::capability::msg | loom::capability::tagged,
                                    .ep_type = loom::endpoint_types::rdm,
                                    .provider = "tcp",
                                    .domain_name = "lo",
                                    .threading = loom::threading_mode::safe});
    ASSERT_TRUE(info) << info.error().message();
    core_test::loop_stack s;
    ASSERT_TRUE(core_test::open_loop(*info, core_test::loop_options{}, s).empty());
    auto other_cq = loom::completion_queue::create(s.domain, {.size = 16}).value();
    ::asio::io_context ioc;
    loom::asio::endpoint ep(ioc, std::move(s.ep), s.cq, s.cq);  // it sends to itself
    ep.set_default_peer(s.self);
    auto& service = loom::asio::fabric_service::use(ioc);
    ASSERT_TRUE(service.register_cq(s.cq));
    service.start();
    auto work = ::asio::make_work_guard(ioc);
    std::vector<std::thread> runners;
    for (int i = 0; i < 2; ++i) runners.emplace_back([&] { ioc.run(); });
    std::atomic<bool> stop{false};
    std::thread churn([&] {  // registrations change while passes run
        while (!stop.load(std::memory_order_acquire)) {
            (void)service.register_cq(other_cq);
            (void)service.progress_of(other_cq);
            EXPECT_FALSE(service.deregister_cq(other_cq));
        }
    });

    constexpr int pairs = 400;
    std::atomic<int> received{0}, sent{0}, failed{0};
    std::vector<std::array<std::byte, 32>> in(pairs), out(pairs);
    for (int i = 0; i < pairs; ++i) {
        out[i].fill(static_cast<std::byte>(i));
        ep.async_tagged_receive(::asio::buffer(in[i]), 0x1000 + i, [&, i](std::error_code ec, std::size_t n) {
            if (ec || n != 32 || in[i][31] != static_cast<std::byte>(i)) failed.fetch_add(1);
            received.fetch_add(1);
        });
        ep.async_tagged_send(::asio::buffer(out[i]), 0x1000 + i, [&](std::error_code ec, std::size_t) {
            if (ec) failed.fetch_add(1);
            sent.fetch_add(1);
        });
        if (i % 16 == 0) (void)service.poll_once();
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while ((received.load() < pairs || sent.load() < pairs) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    stop.store(true, std::memory_order_release);
    churn.join();
    work.reset();
    for (auto& t : runners) t.join();
    EXPECT_EQ(received.load(), pairs);
    EXPECT_EQ(sent.load(), pairs);
    EXPECT_EQ(failed.load(), 0);
    EXPECT_EQ(service.outstanding_operations(), 0u);
    service.stop();
    EXPECT_FALSE(service.deregister_cq(s.cq));
}

}  // namespace
