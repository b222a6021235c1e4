// The MR cache under concurrent use: threads hitting, missing, releasing, invalidating and
// evicting at once over the fake registrar (also built with ThreadSanitizer).
#include "fake_mr_registrar.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <loom/mr_cache.hpp>
#include <random>
#include <thread>
#include <vector>

// In the helpers' namespace: their send and recv hide the C library's.
namespace loom_test::mr {
namespace {

/// 4 threads: hits, misses, releases, invalidations and evictions at once. Every handle must
/// refer to a registration that is still alive; the counters must add up exactly.
void concurrent_run(mr_cache_limits lim) {
    fake_registrar reg;
    auto& st = *reg.st;
    cache_t cache{reg, lim};
    constexpr int threads = 4;
    constexpr int iterations = 20'000;
    constexpr std::uint64_t pages = 64;
    std::atomic<std::uint64_t> lookups{0};
    std::atomic<int> bad{0};
    auto worker = [&](int t) {
        std::mt19937_64 rng(1234 + t);
        auto uni = [&](std::uint64_t lo, std::uint64_t hi) {
            return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
        };
        std::array<handle_t, 4> ring;
        for (int i = 0; i < iterations; ++i) {
            const std::uint64_t a = base + uni(0, pages - 1) * ps + uni(0, ps - 64);
            const auto acc = uni(0, 3) == 0 ? mr_access_flags{send | recv} : send;
            auto r = cache.lookup(at(a, 64), acc);
            lookups.fetch_add(1, std::memory_order_relaxed);
            if (!r) {
                bad.fetch_add(1);
                continue;
            }
            if (!r->contains(at(a, 64)) || !(acc & ~r->access()).empty() || !st.alive[r->region().id].load())
                bad.fetch_add(1);
            ring[static_cast<std::size_t>(i) % ring.size()] = std::move(*r);
            for (const auto& h : ring)
                if (h && !st.alive[h.region().id].load()) bad.fetch_add(1);
            if (t == 0 && i % 50 == 0) (void)cache.invalidate(at(base + uni(0, pages - 1) * ps, 1).data(), ps);
            if (t == 1 && i % 1000 == 0) (void)cache.evict_unreferenced();
            if (t == 2 && i % 500 == 0) (void)cache.stats();
        }
    };
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(worker, t);
    for (auto& th : pool) th.join();
    EXPECT_EQ(bad.load(), 0);
    EXPECT_FALSE(st.overlap.load()) << "register/deregister calls overlapped";
    const auto s = cache.stats();
    EXPECT_EQ(s.hits + s.misses, lookups.load()) << "hit and miss counters must be exact";
    EXPECT_GT(s.hits, lookups.load() / 10);
    EXPECT_GT(s.misses, 100u);
    EXPECT_EQ(s.registrations, st.register_calls);
    EXPECT_EQ(s.entries, st.live.size());
    EXPECT_EQ(cache.check_invariants(), "");
    if (lim.bounded()) {
        EXPECT_LE(s.entries, lim.max_entries);
    }
    (void)cache.clear();
    EXPECT_EQ(cache.stats().entries, 0u);
    EXPECT_EQ(cache.stats().registered_bytes, 0u);
    EXPECT_TRUE(st.live.empty());
    EXPECT_EQ(st.deregister_calls, st.register_calls);
}

TEST(MrCacheConcurrency, FourThreadsUnbounded) { concurrent_run({}); }
TEST(MrCacheConcurrency, FourThreadsBounded) { concurrent_run({.max_entries = 32}); }

/// All threads sweep the same fresh pages in the same order, so they keep colliding on pages
/// nobody has registered yet: one registers each page, the others hit it or miss under the
/// shared lock and find it when they recheck under the exclusive one.
TEST(MrCacheConcurrency, SameRangeRacesRegisterOnce) {
    for (const auto lim : {mr_cache_limits{}, mr_cache_limits{.max_entries = 8}}) {
        fake_registrar reg;
        cache_t cache{reg, lim};
        constexpr int threads = 4;
        constexpr int rounds = 50000;
        std::atomic<int> bad{0};
        std::atomic<int> ready{0};
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t) {
            pool.emplace_back([&, t] {
                ready.fetch_add(1);
                while (ready.load() < threads) std::this_thread::yield();
                for (int r = 0; r < rounds; ++r) {
                    const std::uint64_t a =
                        base + static_cast<std::uint64_t>(r) * 2 * ps + static_cast<std::uint64_t>(t) * 64;
                    auto h = cache.lookup(at(a, 64), send);
                    if (!h || !h->contains(at(a, 64))) bad.fetch_add(1);
                }
            });
        }
        for (auto& th : pool) th.join();
        EXPECT_EQ(bad.load(), 0);
        const auto s = cache.stats();
        EXPECT_EQ(s.hits + s.misses, static_cast<std::uint64_t>(threads * rounds));
        EXPECT_EQ(s.misses, s.registrations);
        if (!lim.bounded()) {
            EXPECT_EQ(s.registrations, static_cast<std::uint64_t>(rounds)) << "one registration per page";
        } else {
            // A thread that falls behind by more than 8 pages finds its page evicted.
            EXPECT_GE(s.registrations, static_cast<std::uint64_t>(rounds));
        }
        EXPECT_EQ(cache.check_invariants(), "");
    }
}

/// Lock-free hits on a few pages while another thread keeps invalidating and evicting them,
/// so hints go stale and nodes are recycled under the readers.
TEST(MrCacheConcurrency, LockFreeHitsRaceRemoval) {
    for (const auto lim : {mr_cache_limits{}, mr_cache_limits{.max_entries = 6}}) {
        fake_registrar reg;
        auto& st = *reg.st;
        cache_t cache{reg, lim};
        constexpr int readers = 3;
        constexpr int iterations = 20'000;
        constexpr std::uint64_t pages = 8;
        std::atomic<int> bad{0};
        std::atomic<int> running{readers};
        std::atomic<std::uint64_t> lookups{0};
        std::vector<std::thread> pool;
        for (int t = 0; t < readers; ++t) {
            pool.emplace_back([&, t] {
                std::mt19937_64 rng(77 + t);
                std::array<handle_t, 2> ring;
                for (int i = 0; i < iterations; ++i) {
                    const std::uint64_t a = base + (rng() % pages) * ps + (rng() % (ps - 64));
                    auto r = cache.lookup(at(a, 64), send);
                    lookups.fetch_add(1, std::memory_order_relaxed);
                    if (!r || !r->contains(at(a, 64)) || !st.alive[r->region().id].load()) {
                        bad.fetch_add(1);
                        continue;
                    }
                    ring[static_cast<std::size_t>(i) % ring.size()] = std::move(*r);
                }
                running.fetch_sub(1);
            });
        }
        pool.emplace_back([&] {
            std::mt19937_64 rng(99);
            for (int i = 0; running.load() > 0; ++i) {
                if (i % 4 == 3)
                    (void)cache.evict_unreferenced();
                else
                    (void)cache.invalidate(at(base + (rng() % pages) * ps, 1).data(), 1);
            }
        });
        for (auto& th : pool) th.join();
        EXPECT_EQ(bad.load(), 0);
        EXPECT_FALSE(st.overlap.load());
        const auto s = cache.stats();
        EXPECT_EQ(s.hits + s.misses, lookups.load());
        EXPECT_EQ(s.registrations, st.register_calls);
        EXPECT_EQ(s.entries, st.live.size());
        EXPECT_EQ(cache.check_invariants(), "");
        (void)cache.clear();
        EXPECT_TRUE(st.live.empty());
    }
}

/// The bare core with a small hit batch: hits move from the entries' words to the cache
/// total every `batch` hits, and the remainder when an entry is destroyed.
struct batch_core final : loom::detail::mr_cache_core {
    struct node_t : loom::detail::mr_cache_node {};
    std::atomic<long> live{0};
    batch_core(mr_cache_limits l, std::uint64_t batch) : mr_cache_core(l) { set_hit_batch(batch); }
    batch_core(const batch_core&) = delete;
    auto operator=(const batch_core&) -> batch_core& = delete;
    ~batch_core() override { shutdown(); }

protected:
    auto do_register(const loom::mr_cache_request&, loom::detail::mr_cache_node* reuse)
        -> loom::result<loom::detail::mr_cache_node*> override {
        ++live;
        return reuse != nullptr ? reuse : new node_t;
    }
    void do_deregister(loom::detail::mr_cache_node*) noexcept override { --live; }
    void do_free(loom::detail::mr_cache_node* n) noexcept override { delete static_cast<node_t*>(n); }
    [[nodiscard]] auto do_check() const -> loom::void_result override { return {}; }
};

TEST(MrCacheConcurrency, HitBatchesStayExact) {
    for (const auto lim : {mr_cache_limits{}, mr_cache_limits{.max_entries = 2}}) {
        for (const std::uint64_t batch : {1u, 3u, 7u}) {
            batch_core core(lim, batch);
            constexpr int threads = 4;
            constexpr int per_thread = 5000;
            std::vector<std::thread> pool;
            for (int t = 0; t < threads; ++t) {
                pool.emplace_back([&core, t] {
                    for (int i = 0; i < per_thread; ++i) {
                        // Threads 0-1 share one page, 2-3 another; every 1000th lookup invalidates.
                        const std::uint64_t a = base + static_cast<std::uint64_t>(t / 2) * 4 * ps + 8;
                        auto r = core.lookup_host(at(a, 8).data(), 8, send, false);
                        if (r) core.release(*r);
                        if (i % 1000 == 999) (void)core.invalidate_host(at(a, 1).data(), 1);
                    }
                });
            }
            for (auto& th : pool) th.join();
            const auto s = core.stats();
            EXPECT_EQ(s.hits + s.misses, static_cast<std::uint64_t>(threads * per_thread))
                << "batch " << batch << " bounded " << lim.bounded();
            EXPECT_GT(s.hits, s.misses);
            EXPECT_EQ(core.check_invariants(), "");
            EXPECT_EQ(static_cast<std::size_t>(core.live.load()), s.entries);
        }
    }
}

}  // namespace
}  // namespace loom_test::mr
