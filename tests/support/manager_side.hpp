// Two endpoint managers over a real provider (LOOM_PROVIDER) in one test process: a side
// records its manager's events; helpers poll both sides and connect them.
#pragma once

#include <loom/plugins/endpoint_manager.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace loom_test::manager {

namespace lp = loom::plugins;
using namespace std::chrono_literals;

inline auto code(loom::errc e) { return loom::make_error_code(e); }
inline auto text(std::span<const std::byte> b) -> std::string {
    return {reinterpret_cast<const char*>(b.data()), b.size()};
}
inline auto bytes(const std::string& s) -> std::span<const std::byte> {
    return std::as_bytes(std::span{s.data(), s.size()});
}
/// prefix + i. (Not "m" + std::to_string(i): GCC 12 at -O3 raises a false -Wrestrict in it.)
inline auto numbered(std::string_view prefix, int i) -> std::string {
    std::string s(prefix);
    s += std::to_string(i);
    return s;
}

/// An event with copies of what its spans showed.
struct seen {
    lp::event e;
    std::string data, header;
};

/// A manager whose events are recorded.
struct side {
    std::mutex mu;
    std::vector<seen> events;
    std::unique_ptr<lp::endpoint_manager> m;

    explicit side(bool progress_thread = false, bool thread_safe = false)
        : side(lp::manager_options{.thread_safe = thread_safe, .progress_thread = progress_thread}) {}
    explicit side(lp::manager_options o, bool must_open = true) {
        o.on_event = [this](const lp::event& e) {
            std::lock_guard lock(mu);
            events.push_back({e, text(e.data), text(e.header)});
        };
        auto r = lp::endpoint_manager::create(std::move(o));
        if (must_open) {
            EXPECT_TRUE(r) << r.error().message();
        }
        if (r) m = std::move(*r);
    }
    auto count(lp::event_kind k) -> std::size_t {
        std::lock_guard lock(mu);
        return static_cast<std::size_t>(std::ranges::count_if(events, [&](const seen& s) { return s.e.kind == k; }));
    }
    auto of(lp::event_kind k) -> std::vector<seen> {
        std::lock_guard lock(mu);
        std::vector<seen> out;
        for (const auto& s : events)
            if (s.e.kind == k) out.push_back(s);
        return out;
    }
};

/// Polls both sides (those without a progress thread) until `done` or 20 s.
template <class F>
inline auto poll_until(side& a, side& b, F&& done) -> bool {
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        a.m->poll();
        b.m->poll();
    }
    return true;
}

/// A receive endpoint on rx and a connected send endpoint of tx to it.
inline void connect_sides(side& rx, side& tx, const lp::receive_parameters& rp, const lp::connection_parameters& cp,
                          lp::receive_endpoint_id& in, lp::send_endpoint_id& out) {
    ASSERT_TRUE(rx.m && tx.m);
    auto r = rx.m->open_receive_endpoint(rp, &rx);
    ASSERT_TRUE(r) << r.error().message();
    in = *r;
    auto s = tx.m->open_send_endpoint(rx.m->address_of(in).value(), cp, &tx);
    ASSERT_TRUE(s) << s.error().message();
    out = *s;
    ASSERT_TRUE(poll_until(rx, tx, [&] {
        return tx.count(lp::event_kind::connected) == 1 && rx.count(lp::event_kind::peer_connected) == 1;
    }));
    EXPECT_EQ(tx.of(lp::event_kind::connected)[0].e.context, &tx);
    EXPECT_EQ(tx.of(lp::event_kind::connected)[0].e.sender, out);
}

}  // namespace loom_test::manager
