// The plugin runtime's engine driven directly (no host ABI), in one process connected to
// itself: protocol choice by size, and a two-rail engine striping rendezvous writes.
#include <loom/plugins/engine.hpp>
#include <loom/plugins/liveness.hpp>

#include "allocation_count.hpp"
#include "engine_pair.hpp"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <string_view>
#include <vector>

namespace lp = loom::plugins;
using namespace engine_test;

namespace {

TEST(PluginEngine, DomainsAreOpenedForSerializedAccess) {
    // Every engine call runs under the engine lock, so the providers are asked for
    // FI_THREAD_DOMAIN; shm and tcp then drop their own locks. ofi_rxm (2.1) answers
    // FI_THREAD_SAFE to that request (accepted: it keeps its locks).
    for (const char* provider : {"shm", "tcp", "tcp;ofi_rxm"}) {
        auto nics = nics_for(provider, provider[0] == 's' ? "" : "lo");
        ASSERT_FALSE(nics.empty()) << provider;
        const auto dom = nics[0].info.get_domain_attr();
        ASSERT_TRUE(dom.has_value()) << provider;
        if (std::string_view(provider) == "tcp;ofi_rxm")
            EXPECT_TRUE(dom->threading == loom::threading_mode::domain || dom->threading == loom::threading_mode::safe);
        else
            EXPECT_EQ(dom->threading, loom::threading_mode::domain) << provider;
        // Control calls are serialized too (FI_PROGRESS_CONTROL_UNIFIED): no mutex around the
        // completion queue's endpoint list on every read.
        EXPECT_EQ(dom->control_progress, loom::progress_mode::control_unified) << provider;
    }
}

TEST(PluginEngine, SizeChoosesEagerOrRendezvous) {
    auto nics = nics_for("tcp", "lo");
    ASSERT_EQ(nics.size(), 1U);
    ASSERT_TRUE(nics[0].rma);
    pair_on_one_engine p({nics[0]});
    ASSERT_TRUE(p.eng && p.s && p.r);
    const auto eager_max = p.eng->eager_max();
    EXPECT_EQ(p.transfer(eager_max, eager_max, 1), eager_max);
    EXPECT_EQ(p.eng->stats().rendezvous_sends, 0U);
    EXPECT_EQ(p.transfer(eager_max + 1, eager_max + 1, 2), eager_max + 1);
    EXPECT_EQ(p.eng->stats().rendezvous_sends, 1U);
    EXPECT_EQ(p.eng->stats().eager_sends, 1U);
    // Rendezvous into a shorter receive writes only what the receiver offered.
    EXPECT_EQ(p.transfer(std::size_t{1} << 20, 100000, 3), 100000U);
}

// The host registration cache keeps idle registrations for reuse unless told to keep none (the
// default where the provider pins pages): then a deregistered buffer holds no registration,
// and registering it again registers anew.
TEST(PluginEngine, IdleHostRegistrationsAreKeptOnlyWhereConfigured) {
    auto nics = nics_for("tcp", "lo");
    ASSERT_EQ(nics.size(), 1U);
    std::vector<std::byte> buf(std::size_t{1} << 16);
    for (const std::optional<std::size_t> kept : {std::optional<std::size_t>{}, std::optional<std::size_t>{0}}) {
        lp::config cfg;
        cfg.mr_cache_entries = kept;
        auto e = lp::engine::open(nics[0], cfg);
        ASSERT_TRUE(e) << e.error().message();
        std::lock_guard lock((*e)->mutex());
        const auto before = (*e)->host_cache_stats();
        for (int round = 0; round < 2; ++round) {
            auto m = (*e)->register_memory(buf.data(), buf.size());
            ASSERT_TRUE(m) << m.error().message();
            EXPECT_EQ((*e)->host_cache_stats().entries, before.entries + 1);
            (*e)->deregister(**m);
        }
        const auto after = (*e)->host_cache_stats();
        if (kept) {  // none kept: two registrations, none left
            EXPECT_EQ(after.registrations - before.registrations, 2U);
            EXPECT_EQ(after.entries, before.entries);
        } else {  // the second registration was the first one, kept
            EXPECT_EQ(after.registrations - before.registrations, 1U);
            EXPECT_EQ(after.hits - before.hits, 1U);
            EXPECT_EQ(after.entries, before.entries + 1);
        }
    }
}

TEST(PluginEngine, SteadyStateDataPathAllocatesNothing) {
    for (const char* provider : {"tcp", "shm"}) {
        auto nics = nics_for(provider, provider == std::string("shm") ? "" : "lo");
        ASSERT_EQ(nics.size(), 1U) << provider;
        pair_on_one_engine p({nics[0]});
        ASSERT_TRUE(p.eng && p.s && p.r);
        std::vector<std::byte> src(std::size_t{1} << 20), dst(std::size_t{1} << 20);
        std::lock_guard lock(p.eng->mutex());
        auto smh = p.eng->register_memory(src.data(), src.size());
        auto rmh = p.eng->register_memory(dst.data(), dst.size());
        ASSERT_TRUE(smh && rmh);
        auto round = [&](std::size_t n) {
            void* d = dst.data();
            std::size_t cap = n;
            int tag = 11;
            lp::memory_handle* mhs[1] = {*rmh};
            auto rq = p.eng->irecv(*p.r, 1, &d, &cap, &tag, mhs);
            auto sq = p.eng->isend(*p.s, src.data(), n, 11, *smh);
            ASSERT_TRUE(rq && sq && *rq && *sq);
            bool rdone = false, sdone = false;
            std::size_t got = 0;
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
            while (!(rdone && sdone) && std::chrono::steady_clock::now() < deadline) {
                if (!rdone) {
                    ASSERT_EQ(p.eng->test(**rq, rdone, &got, 1), loom::errc::success);
                }
                if (!sdone) {
                    ASSERT_EQ(p.eng->test(**sq, sdone, nullptr, 0), loom::errc::success);
                }
            }
            ASSERT_TRUE(rdone && sdone);
            ASSERT_EQ(got, n);
        };
        const std::size_t sizes[] = {8, 4096, p.eng->eager_max() + 1, std::size_t{1} << 20};
        for (auto n : sizes) round(n);  // warm-up: first use of tags, cache entries, provider buffers
        const long before = loom::test::allocations_so_far();
        for (int i = 0; i < 50; ++i)
            for (auto n : sizes) round(n);
        EXPECT_EQ(loom::test::allocations_so_far() - before, 0) << provider << ": allocations on the data path";
        p.eng->deregister(**smh);
        p.eng->deregister(**rmh);
    }
}

// Pings and pongs get an endpoint of their own where one is cheap (tcp: on the data's domain;
// tcp;ofi_rxm: native tcp's beside it, not an rxm endpoint's pools), and go with the data
// elsewhere by default or when told to.
TEST(PluginEngine, LivenessRouteFollowsTheProviderAndTheSetting) {
    using lp::liveness_route;
    using lp::tristate;
    struct want {
        const char* provider;
        tristate setting;
        liveness_route route;
    };
    for (const auto& w : {want{"tcp", tristate::automatic, liveness_route::own_endpoint},
                          want{"tcp;ofi_rxm", tristate::automatic, liveness_route::another_provider},
                          want{"tcp;ofi_rxm", tristate::on, liveness_route::another_provider},
                          want{"tcp;ofi_rxm", tristate::off, liveness_route::with_the_data},
                          want{"shm", tristate::automatic, liveness_route::with_the_data},
                          want{"shm", tristate::on, liveness_route::own_endpoint}}) {
        const bool shm = std::string_view(w.provider) == "shm";
        auto nics = nics_for(w.provider, shm ? "" : "lo");
        ASSERT_EQ(nics.size(), 1U) << w.provider;
        lp::config cfg;
        cfg.liveness_endpoint = w.setting;
        auto e = lp::engine::open(nics[0], cfg);
        ASSERT_TRUE(e) << w.provider << ": " << e.error().message();
        EXPECT_EQ((*e)->route_of_liveness(), w.route) << w.provider << " setting " << static_cast<int>(w.setting);
    }
}

// A peer timeout too short for two checks between a ping and the silence limit is refused.
TEST(PluginEngine, RefusesAPeerTimeoutBelowTheShortest) {
    auto nics = nics_for("tcp", "lo");
    ASSERT_EQ(nics.size(), 1U);
    lp::config cfg;
    cfg.peer_timeout = lp::min_peer_timeout - std::chrono::milliseconds(1);
    auto e = lp::engine::open(nics[0], cfg);
    ASSERT_FALSE(e);
    EXPECT_EQ(e.error(), make_error_code(loom::errc::invalid_argument));
    cfg.peer_timeout = lp::min_peer_timeout;
    EXPECT_TRUE(lp::engine::open(nics[0], cfg));
}

/// One receive of up to buf.size() bytes with tag 5 on p.r (the caller holds the engine lock).
auto post_receive_of_tag_5(pair_on_one_engine& p, std::vector<std::byte>& buf) -> loom::result<lp::recv_request*> {
    void* d = buf.data();
    const std::size_t cap = buf.size();
    const int tag = 5;
    return p.eng->irecv(*p.r, 1, &d, &cap, &tag, nullptr);
}

// A receive that waits on a live peer for three peer timeouts: the pings and pongs travel on the
// liveness endpoint (under tcp;ofi_rxm a native tcp one, whose queue the peer checks read), and
// the peer is never declared dead.
TEST(PluginEngine, PingsAndPongsOnTheLivenessEndpointKeepAWaitingPeerAlive) {
    for (const char* provider : {"tcp", "tcp;ofi_rxm"}) {
        auto nics = nics_for(provider, "lo");
        ASSERT_EQ(nics.size(), 1U) << provider;
        lp::config cfg;
        cfg.peer_timeout = std::chrono::milliseconds(400);
        pair_on_one_engine p({nics[0]}, cfg);
        ASSERT_TRUE(p.eng && p.s && p.r) << provider;
        std::vector<std::byte> buf(64);
        std::lock_guard lock(p.eng->mutex());
        auto rq = post_receive_of_tag_5(p, buf);
        ASSERT_TRUE(rq && *rq) << provider;
        bool done = false;
        const auto until = std::chrono::steady_clock::now() + 3 * cfg.peer_timeout;
        while (std::chrono::steady_clock::now() < until) {
            ASSERT_EQ(p.eng->test(**rq, done, nullptr, 0), loom::errc::success) << provider << ": declared dead";
            ASSERT_FALSE(done) << provider;
        }
        EXPECT_GT(p.eng->stats().liveness_link_messages, 0U) << provider;
        EXPECT_EQ(p.eng->stats().peers_declared_dead, 0U) << provider;
        // The waiting receive still completes.
        const std::array<std::byte, 8> msg{std::byte{1}, std::byte{2}};
        auto sq = p.eng->isend(*p.s, msg.data(), msg.size(), 5, nullptr);
        ASSERT_TRUE(sq && *sq) << provider;
        bool sdone = false;
        std::size_t got = 0;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!(done && sdone) && std::chrono::steady_clock::now() < deadline) {
            if (!done) {
                ASSERT_EQ(p.eng->test(**rq, done, &got, 1), loom::errc::success) << provider;
            }
            if (!sdone) {
                ASSERT_EQ(p.eng->test(**sq, sdone, nullptr, 0), loom::errc::success) << provider;
            }
        }
        ASSERT_TRUE(done && sdone) << provider;
        EXPECT_EQ(got, msg.size());
        EXPECT_EQ(buf[1], std::byte{2});
    }
}

// Native tcp connects on a liveness link's first message, so its first ping is refused for now
// (FI_EAGAIN). The monitor pings again a millisecond later, not at the next check (a quarter
// of the timeout later, which left the pong one check to arrive in).
TEST(PluginEngine, APingTheProviderRefusesIsSentAgainAtOnce) {
    auto nics = nics_for("tcp", "lo");
    ASSERT_EQ(nics.size(), 1U);
    lp::config cfg;
    cfg.peer_timeout = std::chrono::milliseconds(800);  // checks every 100 ms (lp::check_period)
    pair_on_one_engine p({nics[0]}, cfg);
    ASSERT_TRUE(p.eng && p.s && p.r);
    std::vector<std::byte> buf(64);
    std::lock_guard lock(p.eng->mutex());
    auto rq = post_receive_of_tag_5(p, buf);
    ASSERT_TRUE(rq && *rq);
    bool done = false;
    auto drive_until = [&](auto condition, std::chrono::milliseconds limit) {
        const auto until = std::chrono::steady_clock::now() + limit;
        while (!condition() && std::chrono::steady_clock::now() < until)
            EXPECT_EQ(p.eng->test(**rq, done, nullptr, 0), loom::errc::success);
        return condition();
    };
    ASSERT_TRUE(drive_until([&] { return p.eng->stats().pings_refused + p.eng->stats().pings_sent > 0; },
                            std::chrono::seconds(5)));
    ASSERT_EQ(p.eng->stats().pings_refused, 1U) << "the first ping of a tcp liveness link is refused for now";
    ASSERT_EQ(p.eng->stats().pings_sent, 0U);
    const auto refused_at = std::chrono::steady_clock::now();
    EXPECT_TRUE(drive_until([&] { return p.eng->stats().pings_sent > 0; }, std::chrono::milliseconds(60)))
        << "no ping within 60 ms of the refusal (the next regular check is 100 ms away)";
    const auto retried_after = std::chrono::steady_clock::now() - refused_at;
    EXPECT_LT(retried_after, std::chrono::milliseconds(60));
    EXPECT_EQ(p.eng->stats().peers_declared_dead, 0U);
}

TEST(PluginEngine, VirtualDeviceStripesLargeWritesOverEveryRail) {
    // A 16 KiB eager limit, so that a rendezvous below the striping threshold exists.
    auto nics = nics_for("tcp", "lo,eth0", 16384);
    if (nics.size() < 2) GTEST_SKIP() << "needs two tcp interfaces (lo and eth0)";
    pair_on_one_engine p(nics);
    ASSERT_TRUE(p.eng && p.s && p.r);
    ASSERT_EQ(p.eng->rail_count(), 2);
    ASSERT_EQ(p.s->rails, 2);
    ASSERT_EQ(p.r->rails, 2);
    // Below the striping threshold one rail carries it.
    const std::size_t small = std::max(p.eng->eager_max() + 1, lp::stripe_min);
    EXPECT_EQ(p.transfer(small, small, 4), small);
    EXPECT_EQ(p.eng->rail_writes(0), 1U);
    EXPECT_EQ(p.eng->rail_writes(1), 0U);
    // Large: one stripe per rail.
    const std::size_t big = std::size_t{8} << 20;
    EXPECT_EQ(p.transfer(big, big, 5), big);
    EXPECT_EQ(p.eng->rail_writes(0), 2U);
    EXPECT_EQ(p.eng->rail_writes(1), 1U);
    // A receive shorter than the send: the stripes cover exactly what the receiver offered.
    EXPECT_EQ(p.transfer(big, big / 2 + 12345, 6), big / 2 + 12345);
    EXPECT_EQ(p.eng->rail_writes(1), 2U);
    // Half of it a whole number of pages, one byte over: every byte lands (the last byte used to
    // belong to no stripe and the transfer never completed).
    const std::size_t odd = 4 * lp::stripe_min + 1;
    EXPECT_EQ(p.transfer(odd, odd, 7), odd);
    EXPECT_EQ(p.eng->rail_writes(1), 3U);
}

}  // namespace
