// Shared pieces of the in-process core integration tests (core_*_test.cpp): the provider
// list, readable outcomes of loom results, and a loopback stack (one endpoint whose own
// address sits in its own AV, so it can send to itself).
#pragma once

#include "harness.hpp"

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace core_test {

using namespace std::chrono_literals;

inline const std::vector<std::string>& providers() {
    static const std::vector<std::string> all{"tcp;ofi_rxm", "tcp", "shm", "udp;ofi_rxd", "sockets"};
    return all;
}

/// gtest parameter names may hold only [A-Za-z0-9_].
inline auto safe_name(std::string s) -> std::string {
    for (auto& c : s)
        if (c == ';' || c == '-') c = '_';
    return s;
}

inline auto param_name(const ::testing::TestParamInfo<std::string>& info) -> std::string {
    return safe_name(info.param);
}

/// "ok", or the errc enumerator name of a loom error ("invalid_argument", ...).
inline auto outcome(const std::error_code& ec) -> std::string {
    if (!ec) return "ok";
    if (ec.category() == loom::fabric_category()) {
        std::string n = loom::errc_name(static_cast<loom::errc>(ec.value()));
        if (n == "unknown") n += "(" + std::to_string(ec.value()) + ")";
        return n;
    }
    return std::string(ec.category().name()) + ":" + std::to_string(ec.value());
}
template <class T>
auto outcome(const loom::result<T>& r) -> std::string {
    return r ? std::string("ok") : outcome(r.error());
}
inline auto name(loom::errc e) -> std::string { return loom::errc_name(e); }

/// Prints one observed provider behaviour so it shows in the test log.
inline void quirk(const std::string& provider, const std::string& what) {
    std::printf("[quirk] %s: %s\n", provider.c_str(), what.c_str());
    std::fflush(stdout);
}

/// A loopback endpoint and everything it uses, destroyed endpoint-first.
struct loop_stack {
    loom::fabric_info info;
    loom::fabric fabric;
    loom::domain domain;
    loom::completion_queue cq;
    loom::address_vector av;
    loom::counter cntr;
    loom::endpoint ep;
    loom::fabric_addr self{loom::fabric_addrs::unspecified};
    /// The same handle as insert returned it (sends to a peer_addr skip the destination check).
    std::optional<loom::peer_addr> peer;
};

struct loop_options {
    loom::capability caps{loom::capability::msg | loom::capability::tagged};
    loom::cq_attr cq{.size = 256};
    /// Bind a counter (flags below) before enabling.
    bool counter{false};
    loom::counter_bind counter_flags{loom::counter_bind::send};
};

/// Opens the fabric and domain of `info`; the error names the step that failed (empty on success).
inline auto open_fabric_domain(const loom::fabric_info& info, loom::fabric& fab, loom::domain& dom) -> std::string {
    auto f = loom::fabric::create(info);
    if (!f) return "fabric: " + outcome(f.error());
    fab = std::move(*f);
    auto d = loom::domain::create(fab, info);
    if (!d) return "domain: " + outcome(d.error());
    dom = std::move(*d);
    return {};
}

/// Opens info, fabric and domain of `provider` into any stack with those three members; the
/// error names the step that failed (empty on success).
template <class Stack>
auto open_domain(const std::string& provider, loom::capability caps, Stack& s) -> std::string {
    auto info = loom_test::find_info(provider, caps);
    if (!info) return "find_info: " + outcome(info.error());
    s.info = *info;
    return open_fabric_domain(s.info, s.fabric, s.domain);
}

/// Opens the rest of a loopback stack whose info, fabric and domain are open.
inline auto open_loop_on_domain(const loop_options& o, loop_stack& s) -> std::string {
    auto cq = loom::completion_queue::create(s.domain, o.cq);
    if (!cq) return "cq: " + outcome(cq.error());
    s.cq = std::move(*cq);
    auto av = loom::address_vector::create(s.domain);
    if (!av) return "av: " + outcome(av.error());
    s.av = std::move(*av);
    auto ep = loom::endpoint::create(s.domain, s.info);
    if (!ep) return "endpoint: " + outcome(ep.error());
    s.ep = std::move(*ep);
    if (auto r = s.ep.bind_cq(s.cq, loom::cq_bind::transmit | loom::cq_bind::recv); !r) return "bind_cq: " + outcome(r);
    if (auto r = s.ep.bind_av(s.av); !r) return "bind_av: " + outcome(r);
    if (o.counter) {
        auto c = loom::counter::create(s.domain);
        if (!c) return "counter: " + outcome(c.error());
        s.cntr = std::move(*c);
        if (auto r = s.ep.bind_counter(s.cntr, o.counter_flags); !r) return "bind_counter: " + outcome(r);
    }
    if (auto r = s.ep.enable(); !r) return "enable: " + outcome(r);
    auto me = s.ep.name();
    if (!me) return "name: " + outcome(me.error());
    auto self = s.av.insert(*me);
    if (!self) return "av insert self: " + outcome(self.error());
    s.self = *self;
    s.peer.emplace(*self);
    return {};
}

/// Opens a loopback stack; the error names the step that failed.
inline auto open_loop(const std::string& provider, const loop_options& o, loop_stack& s) -> std::string {
    if (auto err = open_domain(provider, o.caps, s); !err.empty()) return err;
    return open_loop_on_domain(o, s);
}

/// Opens a loopback stack from a given discovery entry.
inline auto open_loop(const loom::fabric_info& info, const loop_options& o, loop_stack& s) -> std::string {
    s.info = info;
    if (auto err = open_fabric_domain(s.info, s.fabric, s.domain); !err.empty()) return err;
    return open_loop_on_domain(o, s);
}

/// Opens a loopback stack or fails the current test (use with ASSERT_NO_FATAL_FAILURE).
inline void must_open_loop(const std::string& provider, const loop_options& o, loop_stack& s) {
    const auto err = open_loop(provider, o, s);
    ASSERT_TRUE(err.empty()) << provider << ": " << err;
}

/// Waits for the completion of `ctx` and requires it to be a success.
inline auto completed(loom_test::progress& prog, const void* ctx, std::chrono::milliseconds timeout = 5s)
    -> loom::completion_event {
    auto ev = prog.wait_for(ctx, timeout);
    if (!ev) {
        ADD_FAILURE() << "no completion: " << outcome(ev.error());
        return {};
    }
    if (ev->has_error()) ADD_FAILURE() << "completion error: " << outcome(ev->error) << " " << ev->error_text;
    return *ev;
}

/// Sends `out` to `in` through the loopback endpoint of `s` with the given descriptors and waits
/// for both completions (the receive must carry every byte).
inline void loop_roundtrip(loop_stack& s, std::span<const std::byte> out, void* out_desc, std::span<std::byte> in,
                           void* in_desc) {
    loom::request_context rctx, sctx;
    loom_test::progress prog(s.cq);
    ASSERT_EQ(outcome(s.ep.recv(in, loom::fabric_addrs::unspecified, in_desc, &rctx)), "ok");
    ASSERT_EQ(outcome(prog.retry([&] { return s.ep.send(out, s.self, out_desc, &sctx); }, 2s)), "ok");
    const auto ev = completed(prog, &rctx);
    EXPECT_EQ(ev.bytes_transferred, out.size());
    (void)completed(prog, &sctx);
}

/// The next event of the queue (polling), or nullopt after `timeout`.
inline auto next_event(loom::completion_queue& cq, std::chrono::milliseconds timeout)
    -> std::optional<loom::completion_event> {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (auto ev = cq.poll()) return ev;
        if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
        std::this_thread::yield();
    }
}

/// A tag the endpoint tests receive with and send.
inline constexpr std::uint64_t any_tag = 0x5A5A;

/// Requires that nothing shows up on the queue for a short while (an operation loom refused
/// must not have reached the provider; a canceled one completes once).
inline void expect_quiet(loom::completion_queue& cq) {
    auto ev = next_event(cq, std::chrono::milliseconds{20});
    EXPECT_FALSE(ev.has_value()) << "unexpected completion: " << (ev ? outcome(ev->error) : "");
}

inline auto bytes_of(std::span<const std::byte> s) -> std::vector<std::byte> { return {s.begin(), s.end()}; }

}  // namespace core_test
