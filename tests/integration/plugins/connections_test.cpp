// The engine's connection set-up over shm: a connect nobody accepts fails at
// LOOM_CONNECT_TIMEOUT_MS; malformed CONNECT messages sent straight to a listener's control tag
// are dropped and the listener still accepts a real connector afterwards.
#include <loom/plugins/engine.hpp>

#include <loom/loom.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <random>
#include <string_view>

namespace lp = loom::plugins;
using clk = std::chrono::steady_clock;

namespace {

auto config_with(std::string_view name, const char* value) -> lp::config {
    auto cfg = lp::config::from([&](const char* n) -> const char* { return name == n ? value : nullptr; });
    EXPECT_TRUE(cfg);
    return cfg ? *cfg : lp::config{};
}

auto shm_engine(const lp::config& cfg) -> std::unique_ptr<lp::engine> {
    lp::config named = cfg;
    named.provider = "shm";
    auto nics = lp::discover_nics(named);
    EXPECT_TRUE(nics && !nics->empty());
    if (!nics || nics->empty()) return nullptr;
    auto e = lp::engine::open(nics->front(), named);
    EXPECT_TRUE(e) << e.error().message();
    return e ? std::move(*e) : nullptr;
}

TEST(EngineConnections, AConnectNobodyAcceptsFailsAtTheDeadline) {
    auto eng = shm_engine(config_with("LOOM_CONNECT_TIMEOUT_MS", "300"));
    ASSERT_TRUE(eng);
    std::lock_guard lock(eng->mutex());
    lp::handle_bytes h{};
    auto l = eng->listen(h);
    ASSERT_TRUE(l);
    const auto t0 = clk::now();
    loom::result<lp::sender*> c = nullptr;
    while (c && *c == nullptr && clk::now() - t0 < std::chrono::seconds(10)) c = eng->connect(h, &h);
    const auto waited = clk::now() - t0;
    ASSERT_FALSE(c) << "connect completed without an accept";
    EXPECT_EQ(c.error(), loom::errc::connection_refused);
    EXPECT_GE(waited, std::chrono::milliseconds(300));
    EXPECT_LT(waited, std::chrono::seconds(5));
    eng->close(**l);
}

/// A shm endpoint of its own that sends raw bytes to a listener's control tag.
struct foreign_endpoint {
    loom::fabric_info fi;
    loom::fabric fabric;
    loom::domain domain;
    loom::completion_queue cq;
    loom::address_vector av;
    loom::endpoint ep;
    loom::peer_addr peer;
    std::uint64_t tag;

    explicit foreign_endpoint(const lp::listen_info& to)
        : fi(loom::query_fabric({.capabilities = loom::capability::msg | loom::capability::tagged,
                                 .ep_type = loom::endpoint_types::rdm,
                                 .provider = "shm"})
                 .value()),
          fabric(loom::fabric::create(fi).value()),
          domain(loom::domain::create(fabric, fi).value()),
          cq(loom::completion_queue::create(domain, {.size = 64}).value()),
          av(loom::address_vector::create(domain).value()),
          ep(loom::endpoint::create(domain, fi).value()),
          peer(av.insert(to.endpoint_address).value()),
          tag(lp::match_bits::make_tag(lp::message_kind::control, static_cast<std::uint32_t>(to.channel_id), 0, 0)) {
        EXPECT_TRUE(ep.bind_cq(cq, loom::cq_bind::transmit | loom::cq_bind::recv));
        EXPECT_TRUE(ep.bind_av(av));
        EXPECT_TRUE(ep.enable());
    }
    /// Injects `b`, retrying while the provider is busy (at most 5 s).
    auto send(const std::vector<std::byte>& b) -> loom::void_result {
        const auto deadline = clk::now() + std::chrono::seconds(5);
        for (;;) {
            auto r = ep.tagged_inject(b, tag, peer);
            if (r || r.error() != loom::errc::again || clk::now() >= deadline) return r;
            (void)cq.poll();
        }
    }
};

/// CONNECT messages the listener of `to` must drop: empty, truncated, for another listener,
/// random bytes.
auto malformed_connect_messages(const lp::listen_info& to) -> std::vector<std::vector<std::byte>> {
    lp::connect_message good{.sender_channel = 9,
                             .listen_channel = static_cast<std::uint32_t>(to.channel_id),
                             .pid = 1,
                             .host = 2,
                             .sender_address = to.endpoint_address};
    std::vector<std::byte> valid(lp::control_capacity);
    valid.resize(lp::encode(good, valid).value());
    std::vector<std::vector<std::byte>> bad;
    bad.push_back({});                                    // empty
    bad.emplace_back(valid.begin(), valid.begin() + 20);  // truncated header
    bad.emplace_back(valid.begin(), valid.end() - 1);     // truncated rail list
    auto wrong_listener = good;
    wrong_listener.listen_channel = static_cast<std::uint32_t>(to.channel_id) + 1;
    std::vector<std::byte> w(lp::control_capacity);
    w.resize(lp::encode(wrong_listener, w).value());
    bad.push_back(w);  // another listener's id
    std::mt19937 rng(5);
    for (int i = 0; i < 20; ++i) {  // random bytes
        std::vector<std::byte> b(8 + rng() % 120);
        for (auto& x : b) x = static_cast<std::byte>(rng());
        bad.push_back(std::move(b));
    }
    return bad;
}

TEST(EngineConnections, MalformedConnectMessagesAreDroppedAndRealOnesStillAccepted) {
    auto eng = shm_engine(lp::config{});
    ASSERT_TRUE(eng);
    lp::handle_bytes h{};
    lp::listener* l = nullptr;
    {
        std::lock_guard lock(eng->mutex());
        l = eng->listen(h).value();
    }
    const auto info = lp::decode_handle(h).value();
    foreign_endpoint foreign(info);
    for (const auto& b : malformed_connect_messages(info)) {
        auto r = foreign.send(b);
        ASSERT_TRUE(r) << r.error().message();
    }
    // The engine reads them all (and drops them): accept finds no connector.
    const auto settle = clk::now() + std::chrono::milliseconds(500);
    while (clk::now() < settle) {
        std::lock_guard lock(eng->mutex());
        auto a = eng->accept(*l);
        ASSERT_TRUE(a);
        ASSERT_EQ(*a, nullptr) << "a malformed connect message was accepted";
    }
    // A real connector still gets through.
    lp::sender* s = nullptr;
    lp::receiver* rc = nullptr;
    const auto deadline = clk::now() + std::chrono::seconds(20);
    while ((s == nullptr || rc == nullptr) && clk::now() < deadline) {
        std::lock_guard lock(eng->mutex());
        if (s == nullptr) s = eng->connect(h, &h).value();
        if (rc == nullptr) rc = eng->accept(*l).value();
    }
    ASSERT_TRUE(s != nullptr && rc != nullptr);
    std::lock_guard lock(eng->mutex());
    eng->close(*s);
    eng->close(*rc);
    eng->close(*l);
}

}  // namespace
