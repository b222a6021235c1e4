// The Asio front end allocates nothing per operation once warm: tagged receives and tagged
// sends of 8 bytes to the endpoint itself (shm), one pair or a window of them at a time, driven
// by io_context::run_one with the service polling at zero interval, as loom-bench's asio path
// runs them. The operation states, their completions and the service's posted passes all reuse
// memory.
#include "allocation_count.hpp"
#include "harness.hpp"

#include <loom/asio.hpp>

#include <gtest/gtest.h>

#include <array>
#include <optional>
#include <string>

using namespace loom_test;

namespace {

/// An Asio endpoint on an shm endpoint whose own address is its peer, its queue polled by the
/// started fabric service; `window` sends and receives of 8 bytes each.
struct served_self_loop {
    static constexpr std::size_t max_window = 16;
    std::optional<stack> st;  // first: its domain and queue outlive everything below
    std::array<std::byte, 8 * max_window> out{}, in{};
    std::optional<loom::memory_region> out_mr, in_mr;
    std::optional<loom::peer_addr> self;
    ::asio::io_context ioc;
    std::optional<::asio::executor_work_guard<::asio::io_context::executor_type>> work;
    std::optional<loom::asio::endpoint> ep;
    int done = 0;

    /// Empty when set up; else why not (`skip`: no shm here).
    auto open(bool& skip) -> std::string {
        auto opened = open_stack("shm", loom::capability::msg | loom::capability::tagged, 0, {.size = 64});
        skip = !opened && opened.error() == loom::make_error_code(loom::errc::no_data);
        if (!opened) return opened.error().message();
        st.emplace(std::move(*opened));  // in place before the endpoint and service refer to its queue
        auto a = st->av.insert(st->ep.name().value());
        auto o = loom::memory_region::register_memory(st->domain, std::span{out}, loom::mr_access_flags::send);
        auto i = loom::memory_region::register_memory(st->domain, std::span{in}, loom::mr_access_flags::recv);
        if (!a || !o || !i) return "address or registration refused";
        self.emplace(*a);
        out_mr.emplace(std::move(*o));
        in_mr.emplace(std::move(*i));
        work.emplace(ioc.get_executor());
        ep.emplace(ioc, std::move(st->ep), st->cq, st->cq);
        auto& service = loom::asio::fabric_service::use(ioc);
        if (!service.register_cq(st->cq)) return "register_cq refused";
        service.start();
        return {};
    }
    /// `rounds` times: `window` receives and `window` sends started, then run until all completed.
    void exchange(int rounds, std::size_t window) {
        for (int r = 0; r < rounds && done >= 0; ++r) {
            done = 0;
            auto count = [this](std::error_code ec, std::size_t n) { done += ec || n != 8 ? -1000 : 1; };
            for (std::size_t k = 0; k < window; ++k)
                ep->async_tagged_receive(
                    loom::asio::mutable_registered_buffer{::asio::buffer(in.data() + 8 * k, 8), &*in_mr}, k, 0, count);
            for (std::size_t k = 0; k < window; ++k)
                ep->async_tagged_send_to(
                    loom::asio::const_registered_buffer{::asio::buffer(out.data() + 8 * k, 8), &*out_mr}, *self, k,
                    count);
            while (done >= 0 && done < static_cast<int>(2 * window)) ioc.run_one();
        }
    }
    ~served_self_loop() {
        if (ep) loom::asio::fabric_service::use(ioc).stop();
    }
};

/// Runs `window`-wide exchanges until warm, then 1,000 more: what they allocated.
void expect_no_allocation_once_warm(std::size_t window) {
    served_self_loop l;
    bool skip = false;
    if (const auto e = l.open(skip); !e.empty()) {
        if (skip) GTEST_SKIP() << "no shm here";
        FAIL() << e;
    }
    l.exchange(64, window);  // caches warm: per-thread blocks, the io_context's queues
    ASSERT_EQ(l.done, static_cast<int>(2 * window));
    const long before = loom::test::allocations_so_far();
    const long aligned_before = loom::test::aligned_allocations_so_far();
    l.exchange(1000, window);
    const long allocated = loom::test::allocations_so_far() - before;
    const long aligned = loom::test::aligned_allocations_so_far() - aligned_before;
    ASSERT_EQ(l.done, static_cast<int>(2 * window));
    EXPECT_EQ(allocated, 0) << "operator new in 1,000 windows of " << window << " sends and receives";
    EXPECT_EQ(aligned, 0) << "aligned allocations in 1,000 windows (Asio's handler memory, operation states)";
}

TEST(asio_steady_state, a_send_and_receive_pair_allocates_nothing_once_warm) { expect_no_allocation_once_warm(1); }

// A stream keeps a window of operations in flight: their states come back to the thread's cache
// too (it kept 8, and the rest of a window of 16 went to the heap every time).
TEST(asio_steady_state, a_window_of_sixteen_in_flight_allocates_nothing_once_warm) {
    expect_no_allocation_once_warm(served_self_loop::max_window);
}

}  // namespace
