// The fabric service used from several threads at once: two threads run the io_context, the
// test thread starts operations and polls, a third registers and deregisters another queue.
// Built once normally and once under ThreadSanitizer (label tsan).
#include "core_support.hpp"

#include <loom/asio.hpp>

#include <asio/executor_work_guard.hpp>

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

/// A tcp endpoint that sends to itself, in a domain that takes submissions and reads from any
/// thread, as an Asio endpoint whose queue the io_context's fabric service reads.
struct served_loop {
    core_test::loop_stack s;
    ::asio::io_context ioc;
    std::optional<loom::asio::endpoint> ep;
    loom::asio::fabric_service& service{loom::asio::fabric_service::use(ioc)};

    /// What failed, or empty.
    auto open() -> std::string {
        auto info = loom::query_fabric({.capabilities = loom::capability::msg | loom::capability::tagged,
                                        .ep_type = loom::endpoint_types::rdm,
                                        .provider = "tcp",
                                        .domain_name = "lo",
                                        .threading = loom::threading_mode::safe});
        if (!info) return info.error().message();
        if (auto e = core_test::open_loop(*info, core_test::loop_options{}, s); !e.empty()) return e;
        ep.emplace(ioc, std::move(s.ep), s.cq, s.cq);
        ep->set_default_peer(s.self);
        if (auto r = service.register_cq(s.cq); !r) return r.error().message();
        return {};
    }
    /// Two threads running the io_context.
    auto run_on_two_threads() -> std::vector<std::thread> {
        std::vector<std::thread> runners;
        runners.reserve(2);
        for (int i = 0; i < 2; ++i) runners.emplace_back([this] { ioc.run(); });
        return runners;
    }
};

TEST(AsioServiceThreads, operations_started_polled_and_completed_from_several_threads) {
    served_loop l;
    ASSERT_EQ(l.open(), "");
    auto& ep = *l.ep;
    auto& service = l.service;
    auto other_cq = loom::completion_queue::create(l.s.domain, {.size = 16}).value();
    service.start();
    auto work = ::asio::make_work_guard(l.ioc);
    auto runners = l.run_on_two_threads();
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
    EXPECT_FALSE(service.deregister_cq(l.s.cq));
}

// Every pair starts from idle on the test thread while two threads run the io_context, and a
// third thread keeps adding and removing a timer-polled queue: the start alternates between
// posting a pass without the service's lock (every queue spins) and scheduling under it. A
// start whose pass is lost leaves its pair waiting until the deadline.
TEST(AsioServiceThreads, operations_started_from_idle_on_another_thread_are_always_polled) {
    served_loop l;
    ASSERT_EQ(l.open(), "");
    auto& ep = *l.ep;
    auto& service = l.service;
    ASSERT_EQ(service.progress_of(l.s.cq), loom::asio::fabric_service::progress_kind::timer);  // it spins
    auto timed_cq = loom::completion_queue::create(l.s.domain, {.size = 16}).value();
    service.start();
    auto work = ::asio::make_work_guard(l.ioc);
    auto runners = l.run_on_two_threads();
    std::atomic<bool> stop{false};
    std::thread churn([&] {
        const loom::asio::queue_options timed{.use_fd_polling = false, .poll_interval = std::chrono::microseconds(50)};
        while (!stop.load(std::memory_order_acquire)) {
            (void)service.register_cq(timed_cq, timed);
            std::this_thread::yield();
            EXPECT_FALSE(service.deregister_cq(timed_cq));
        }
    });

    std::array<std::byte, 8> in{}, out{};
    std::atomic<int> done{0}, failed{0};
    int pairs = 0;
    for (; pairs < 300; ++pairs) {
        ASSERT_EQ(service.outstanding_operations(), 0u);  // from idle
        done.store(0);
        ep.async_tagged_receive(::asio::buffer(in), 7, [&](std::error_code ec, std::size_t) {
            if (ec) failed.fetch_add(1);
            done.fetch_add(1);
        });
        ep.async_tagged_send(::asio::buffer(out), 7, [&](std::error_code ec, std::size_t) {
            if (ec) failed.fetch_add(1);
            done.fetch_add(1);
        });
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (done.load() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
        if (done.load() < 2) break;
        while (service.outstanding_operations() != 0) std::this_thread::yield();  // the handlers have returned
    }
    stop.store(true, std::memory_order_release);
    churn.join();
    work.reset();
    l.ioc.stop();  // run() returns, a lost pair outstanding or not
    for (auto& t : runners) t.join();
    EXPECT_EQ(pairs, 300) << "pair " << pairs << " was never polled";
    EXPECT_EQ(failed.load(), 0);
}

}  // namespace
