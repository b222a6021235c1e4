// An engine of the plugin runtime connected to itself (a sender and a receiver over one
// listener), for the engine's integration tests.
#pragma once

#include <loom/plugins/engine.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace engine_test {

namespace lp = loom::plugins;

inline auto pattern(std::size_t i, std::size_t seed) -> std::byte {
    return static_cast<std::byte>((i * 131 + seed * 7 + (i >> 9)) & 0xff);
}

struct pair_on_one_engine {
    std::unique_ptr<lp::engine> eng;
    lp::listener* l{nullptr};
    lp::sender* s{nullptr};
    lp::receiver* r{nullptr};

    explicit pair_on_one_engine(std::vector<lp::nic> nics, const lp::config& cfg = {}) {
        auto e = lp::engine::open(nics, cfg);
        EXPECT_TRUE(e) << e.error().message();
        if (!e) return;
        eng = std::move(*e);
        std::lock_guard lock(eng->mutex());
        lp::handle_bytes h{};
        auto lis = eng->listen(h);
        EXPECT_TRUE(lis);
        l = *lis;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while ((s == nullptr || r == nullptr) && std::chrono::steady_clock::now() < deadline) {
            if (s == nullptr) {
                auto c = eng->connect(h, &h);
                EXPECT_TRUE(c);
                s = *c;
            }
            if (r == nullptr) {
                auto a = eng->accept(*l);
                EXPECT_TRUE(a);
                r = *a;
            }
        }
        EXPECT_TRUE(s != nullptr && r != nullptr);
    }
    ~pair_on_one_engine() {
        if (!eng) return;
        std::lock_guard lock(eng->mutex());
        if (s != nullptr) eng->close(*s);
        if (r != nullptr) eng->close(*r);
        if (l != nullptr) eng->close(*l);
    }

    /// Moves `n` bytes from a send buffer into a receive buffer of `cap` bytes; returns the
    /// size the receive reported.
    auto transfer(std::size_t n, std::size_t cap, std::size_t seed) -> std::size_t {
        std::vector<std::byte> src(n), dst(cap);
        for (std::size_t i = 0; i < n; ++i) src[i] = pattern(i, seed);
        std::lock_guard lock(eng->mutex());
        void* d = dst.data();
        int tag = 3;
        auto rq = eng->irecv(*r, 1, &d, &cap, &tag, nullptr);
        auto sq = eng->isend(*s, src.data(), n, 3, nullptr);
        EXPECT_TRUE(rq && sq && *rq != nullptr && *sq != nullptr);
        bool rdone = false, sdone = false;
        std::size_t got = 0, sent = 0;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (!(rdone && sdone) && std::chrono::steady_clock::now() < deadline) {
            if (!rdone) {
                EXPECT_EQ(eng->test(**rq, rdone, &got, 1), loom::errc::success);
            }
            if (!sdone) {
                EXPECT_EQ(eng->test(**sq, sdone, &sent, 1), loom::errc::success);
            }
        }
        EXPECT_TRUE(rdone && sdone);
        for (std::size_t i = 0; i < std::min(n, cap); ++i)
            if (dst[i] != src[i]) {
                ADD_FAILURE() << "byte " << i << " of " << n;
                break;
            }
        return got;
    }
};

inline auto nics_for(const char* provider, const char* ifaces, std::optional<std::size_t> eager_max = std::nullopt)
    -> std::vector<lp::nic> {
    lp::config cfg;
    cfg.provider = provider;
    cfg.iface = ifaces;
    cfg.eager_max = eager_max;
    auto n = lp::discover_nics(cfg);
    return n ? *n : std::vector<lp::nic>{};
}

}  // namespace engine_test
