// Triggered-work tests' shared set-up: two endpoints in one sockets domain, counters, and a spy
// on the domain's fi_control (the only way deferred work reaches the provider).
#pragma once

#include <gtest/gtest.h>
#include <rdma/fi_atomic.h>

#include <atomic>
#include <chrono>
#include <loom/trigger.hpp>
#include <string>
#include <thread>

#include "core_support.hpp"
#include "ops_swap.hpp"

namespace trigger_test {

using namespace core_test;
using namespace std::chrono_literals;

constexpr auto trigger_caps = loom::capability::msg | loom::capability::tagged | loom::capability::rma |
                              loom::capability::atomic | loom::capability::trigger;

/// Counts fi_control calls on a domain: FI_QUEUE_WORK / FI_CANCEL_WORK / FI_FLUSH_WORK are
/// the only ways deferred work reaches the provider. Installs a copy of the provider's
/// fi_ops with `control` wrapped; restores the original on destruction. One at a time.
class control_spy {
public:
    explicit control_spy(loom::domain& d) : ops_(d.native()->fid.ops) {
        ops_.copy().control = &control_spy::control;
        active_ = this;
    }
    control_spy(const control_spy&) = delete;
    auto operator=(const control_spy&) -> control_spy& = delete;
    ~control_spy() { active_ = nullptr; }
    [[nodiscard]] auto calls() const -> int { return calls_.load(); }
    [[nodiscard]] auto last_command() const -> int { return last_.load(); }

    /// Non-zero: answer every call with this (negative) code instead of the provider.
    int refuse_with{0};

private:
    static auto control(::fid* f, int command, void* arg) -> int {
        active_->calls_.fetch_add(1);
        active_->last_.store(command);
        if (active_->refuse_with != 0) return active_->refuse_with;
        return active_->ops_.provider()->control(f, command, arg);
    }
    loom_test::ops_swap<::fi_ops> ops_;
    std::atomic<int> calls_{0};
    std::atomic<int> last_{-1};
    static inline control_spy* active_ = nullptr;
};

/// Two enabled RDM endpoints in one sockets domain sharing an AV; each knows the other.
struct pair_stack {
    loom::fabric_info info;
    loom::fabric fabric;
    loom::domain domain;
    loom::address_vector av;
    loom::completion_queue cq_a, cq_b;
    loom::counter recv_a;  ///< counts A's receive completions
    loom::endpoint a, b;
    loom::fabric_addr addr_a{loom::fabric_addrs::unspecified}, addr_b{loom::fabric_addrs::unspecified};
};

inline auto open_pair(const std::string& provider, loom::capability caps, pair_stack& s) -> std::string {
    if (auto err = open_domain(provider, caps, s); !err.empty()) return err;
    auto av = loom::address_vector::create(s.domain);
    if (!av) return "av: " + outcome(av.error());
    s.av = std::move(*av);
    for (auto* cq : {&s.cq_a, &s.cq_b}) {
        auto c = loom::completion_queue::create(s.domain, {.size = 64});
        if (!c) return "cq: " + outcome(c.error());
        *cq = std::move(*c);
    }
    auto rc = loom::counter::create(s.domain);
    if (!rc) return "counter: " + outcome(rc.error());
    s.recv_a = std::move(*rc);
    for (auto [ep, cq] : {std::pair{&s.a, &s.cq_a}, std::pair{&s.b, &s.cq_b}}) {
        auto e = loom::endpoint::create(s.domain, s.info);
        if (!e) return "endpoint: " + outcome(e.error());
        *ep = std::move(*e);
        if (auto r = ep->bind_cq(*cq, loom::cq_bind::transmit | loom::cq_bind::recv); !r)
            return "bind_cq: " + outcome(r);
        if (auto r = ep->bind_av(s.av); !r) return "bind_av: " + outcome(r);
        if (ep == &s.a) {
            if (auto r = ep->bind_counter(s.recv_a, loom::counter_bind::recv); !r) return "bind_counter: " + outcome(r);
        }
        if (auto r = ep->enable(); !r) return "enable: " + outcome(r);
    }
    for (auto [ep, out] : {std::pair{&s.a, &s.addr_a}, std::pair{&s.b, &s.addr_b}}) {
        auto me = ep->name();
        if (!me) return "name: " + outcome(me.error());
        auto h = s.av.insert(*me);
        if (!h) return "av insert: " + outcome(h.error());
        *out = *h;
    }
    return {};
}

inline auto make_counter(loom::domain& d) -> loom::counter {
    auto c = loom::counter::create(d);
    EXPECT_TRUE(c) << outcome(c.error());
    return c ? std::move(*c) : loom::counter{};
}

/// Waits until `c` reads `value` (or more); false after `timeout`.
inline auto reaches(loom::counter& c, std::uint64_t value, std::chrono::milliseconds timeout = 5s) -> bool {
    return c.wait(value, timeout).has_value();
}

/// Reads `c` repeatedly for `window` and reports whether it ever moved away from `value`.
inline auto stays(loom::counter& c, std::uint64_t value, std::chrono::milliseconds window = 150ms) -> bool {
    const auto end = std::chrono::steady_clock::now() + window;
    while (std::chrono::steady_clock::now() < end) {
        if (c.read() != value) return false;
        std::this_thread::sleep_for(5ms);
    }
    return true;
}

class core_trigger_sockets : public ::testing::Test {
protected:
    void SetUp() override {
        const auto err = open_pair("sockets", trigger_caps, s_);
        if (err.rfind("find_info", 0) == 0) GTEST_SKIP() << "sockets with triggers unavailable: " << err;
        ASSERT_TRUE(err.empty()) << err;
    }
    pair_stack s_;
};

}  // namespace trigger_test
