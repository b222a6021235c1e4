// Unit tests of loom/mr_cache.hpp over a fake registrar (no provider): hits, misses,
// containment, permission upgrade, page rounding, LRU eviction under limits, invalidation,
// and the domain registrar's binding rules. The property test against a brute-force model and
// the concurrency tests have files of their own.
#include "fake_mr_registrar.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <loom/endpoint.hpp>
#include <loom/mr_cache.hpp>
#include <vector>

// In the helpers' namespace: their send and recv hide the C library's.
namespace loom_test::mr {
namespace {

struct MrCacheTest : ::testing::Test {
    fake_registrar reg;
    std::shared_ptr<fake_state> st = reg.st;
    auto make(mr_cache_limits l = {}) -> cache_t { return cache_t{reg, l}; }
    auto get(cache_t& c, std::uint64_t addr, std::size_t n, mr_access_flags a) -> handle_t {
        auto r = c.lookup(at(addr, n), a);
        EXPECT_TRUE(r.has_value()) << err(r);
        return r ? std::move(*r) : handle_t{};
    }
};

// ---------------------------------------------------------------- basics

TEST_F(MrCacheTest, DefaultLimitsAreUnbounded) {
    const mr_cache_limits l{};
    EXPECT_FALSE(l.bounded());
    EXPECT_EQ(l.max_entries, mr_cache_limits::unbounded);
    EXPECT_EQ(l.max_registered_bytes, mr_cache_limits::unbounded);
    EXPECT_TRUE((mr_cache_limits{.max_entries = 0}).bounded());
    EXPECT_TRUE((mr_cache_limits{.max_registered_bytes = 4096}).bounded());
    auto c = make(mr_cache_limits{.max_entries = 256, .max_registered_bytes = 64 * 1024 * 1024});
    EXPECT_EQ(c.limits().max_entries, 256u);
    EXPECT_EQ(c.limits().max_registered_bytes, 64u * 1024 * 1024);
    EXPECT_EQ(make().limits(), mr_cache_limits{});
}

TEST_F(MrCacheTest, MissRegistersPageRoundedRangeThenHits) {
    auto c = make();
    auto h = get(c, base + 100, 200, send);
    ASSERT_TRUE(h);
    EXPECT_EQ(st->register_calls, 1u);
    ASSERT_EQ(st->live.size(), 1u);
    EXPECT_EQ(st->live.begin()->second, (fake_live{base, ps, send}));
    EXPECT_EQ(h.address(), at(base, 1).data());
    EXPECT_EQ(h.size(), ps);
    EXPECT_TRUE(h.contains(at(base + 100, 200)));
    EXPECT_TRUE(h.contains(at(base, ps)));
    EXPECT_FALSE(h.contains(at(base + ps - 1, 2)));
    EXPECT_EQ(h.descriptor(), fake_registrar::descriptor(h.region()));
    EXPECT_EQ(h.key().value(), h.region().id ^ 0x5a5a0000ULL);
    EXPECT_EQ(h.access(), send);

    // Anything inside the registered page hits, even outside the first request.
    auto h2 = get(c, base + ps - 10, 10, send);
    EXPECT_EQ(h2.region().id, h.region().id);
    auto h3 = get(c, base, 1, send);
    EXPECT_EQ(h3.region().id, h.region().id);
    EXPECT_EQ(st->register_calls, 1u);
    EXPECT_EQ(c.stats(),
              (mr_cache_stats{.hits = 2, .misses = 1, .registrations = 1, .registered_bytes = ps, .entries = 1}));
    EXPECT_EQ(c.check_invariants(), "");
}

TEST_F(MrCacheTest, RangeNotContainedMisses) {
    auto c = make();
    auto h = get(c, base + ps, ps, send);  // [base+ps, base+2ps)
    auto crossing = get(c, base + 2 * ps - 8, 16, send);
    EXPECT_NE(crossing.region().id, h.region().id);
    EXPECT_EQ(crossing.address(), at(base + ps, 1).data());
    EXPECT_EQ(crossing.size(), 2 * ps);
    auto before = get(c, base + ps - 1, 1, send);
    EXPECT_EQ(before.address(), at(base, 1).data());
    EXPECT_EQ(before.size(), ps);
    // Inside the wide entry: either wide entry may serve it, but no new registration.
    auto inside = get(c, base + 2 * ps - 4, 8, send);
    EXPECT_EQ(inside.region().id, crossing.region().id);
    const auto s = c.stats();
    EXPECT_EQ(s.misses, 3u);
    EXPECT_EQ(s.hits, 1u);
    EXPECT_EQ(s.registered_bytes, 4 * ps);
    EXPECT_EQ(s.entries, 3u);
}

TEST_F(MrCacheTest, ByteAccountingCountsRoundedPages) {
    auto c = make();
    {
        auto h = get(c, base + 1, 1, send);
    }  // 1 page
    {
        auto h = get(c, base + 10 * ps - 1, 2, send);
    }  // crosses a boundary: 2 pages
    {
        auto h = get(c, base + 20 * ps, 3 * ps, send);
    }  // aligned: 3 pages
    {
        auto h = get(c, base + 30 * ps + 5, 3 * ps, send);
    }  // unaligned: 4 pages
    const auto s = c.stats();
    EXPECT_EQ(s.registered_bytes, 10 * ps);
    EXPECT_EQ(s.entries, 4u);
    std::uint64_t sum = 0;
    for (const auto& [id, l] : st->live) {
        EXPECT_EQ(l.start % ps, 0u);
        EXPECT_EQ(l.length % ps, 0u);
        sum += l.length;
    }
    EXPECT_EQ(sum, 10 * ps);
}

TEST_F(MrCacheTest, PermissionMustBeASuperset) {
    auto c = make();
    auto sr = get(c, base, 64, send | recv);
    auto s_only = get(c, base + 8, 8, send);  // subset: hit
    EXPECT_EQ(s_only.region().id, sr.region().id);
    auto r_only = get(c, base + 8, 8, recv);
    EXPECT_EQ(r_only.region().id, sr.region().id);
    EXPECT_EQ(c.stats().hits, 2u);
    // remote_write is not in send|recv: miss, and the new entry carries the union.
    auto up = get(c, base + 8, 8, rwrite);
    EXPECT_NE(up.region().id, sr.region().id);
    EXPECT_EQ(up.access(), send | recv | rwrite);
    EXPECT_EQ(st->live.at(up.region().id).access, send | recv | rwrite);
    // The replaced entry is out of the index but alive while referenced.
    EXPECT_EQ(c.indexed_entries(), 1u);
    EXPECT_TRUE(st->live.contains(sr.region().id));
    const auto old_id = sr.region().id;
    sr.release();
    s_only.release();
    EXPECT_TRUE(st->live.contains(old_id));
    r_only.release();
    EXPECT_FALSE(st->live.contains(old_id)) << "last release of a replaced entry deregisters it";
    auto again = get(c, base, 1, send | rwrite);
    EXPECT_EQ(again.region().id, up.region().id);
    EXPECT_EQ(c.stats(),
              (mr_cache_stats{
                  .hits = 3, .misses = 2, .registrations = 2, .evictions = 1, .registered_bytes = ps, .entries = 1}));
    EXPECT_EQ(c.check_invariants(), "");
}

TEST_F(MrCacheTest, IdleReplacedEntryIsDeregisteredAtOnce) {
    auto c = make();
    {
        auto h = get(c, base, 8, send);
    }
    ASSERT_EQ(st->live.size(), 1u);
    auto h = get(c, base, 8, rread);
    EXPECT_EQ(st->live.size(), 1u);
    EXPECT_EQ(h.access(), send | rread);
    EXPECT_EQ(c.stats().evictions, 1u);
}

TEST_F(MrCacheTest, WiderEntryWithMissingAccessIsKept) {
    auto c = make();
    auto wide = get(c, base, 3 * ps, send);
    auto narrow = get(c, base + ps, 8, recv);  // union send|recv over one page
    EXPECT_EQ(narrow.access(), send | recv);
    EXPECT_EQ(narrow.size(), ps);
    EXPECT_EQ(c.indexed_entries(), 2u) << "the 3-page entry still serves its other pages";
    auto other = get(c, base + 2 * ps, 8, send);
    EXPECT_EQ(other.region().id, wide.region().id);
}

TEST_F(MrCacheTest, ArgumentChecks) {
    auto c = make();
    EXPECT_EQ(err(c.lookup(at(base, 8), mr_access_flags{})), "invalid_argument");
    EXPECT_EQ(err(c.lookup(at(base, 8), mr_access_flags{1ULL << 40})), "invalid_argument");
    EXPECT_EQ(err(c.lookup(at(base, 0), send)), "invalid_argument");
    EXPECT_EQ(err(c.lookup(std::span<std::byte>{}, send)), "invalid_argument");
    EXPECT_EQ(err(c.lookup(at(~std::uint64_t{0} - 10, 100), send)), "invalid_argument");  // wraps
    const std::span<const std::byte> ro = at(base, 8);
    EXPECT_EQ(err(c.lookup(ro, rwrite)), "invalid_argument");
    EXPECT_EQ(err(c.lookup(ro, recv)), "invalid_argument");
    EXPECT_EQ(c.stats(), mr_cache_stats{});
    EXPECT_EQ(st->register_calls, 0u);
    auto ok = c.lookup(ro, send | rread | mr_access_flags::read);
    ASSERT_TRUE(ok) << err(ok);
    // Fixed-extent spans pick the right overload.
    std::array<std::byte, 16> arr{};
    auto fixed = c.lookup(std::span{arr}, send);
    EXPECT_TRUE(fixed) << err(fixed);
    const std::array<std::byte, 16> carr{};
    EXPECT_EQ(err(c.lookup(std::span{carr}, rwrite)), "invalid_argument");
}

TEST_F(MrCacheTest, MisconfiguredRegistrarFailsBeforeRegistration) {
    st->config = loom::make_unexpected(loom::errc::invalid_argument);
    auto c = make();
    EXPECT_EQ(err(c.lookup(at(base, 8), send)), "invalid_argument");
    EXPECT_FALSE(c.status());
    EXPECT_EQ(st->register_calls, 0u);
    EXPECT_EQ(c.stats(), mr_cache_stats{});
}

TEST_F(MrCacheTest, FailedRegistrationLeavesNoEntry) {
    auto c = make();
    st->fail_next = true;
    EXPECT_EQ(err(c.lookup(at(base, 8), send)), "no_memory");
    EXPECT_EQ(c.stats(), (mr_cache_stats{.misses = 1}));
    EXPECT_EQ(c.indexed_entries(), 0u);
    auto h = get(c, base, 8, send);
    EXPECT_EQ(c.stats(), (mr_cache_stats{.misses = 2, .registrations = 1, .registered_bytes = ps, .entries = 1}));
}

// ---------------------------------------------------------------- handles

TEST_F(MrCacheTest, HandleMoveAndRelease) {
    auto c = make(mr_cache_limits{.max_entries = 0});
    handle_t empty;
    EXPECT_FALSE(empty);
    EXPECT_EQ(empty.descriptor(), nullptr);
    EXPECT_EQ(empty.size(), 0u);
    EXPECT_FALSE(empty.contains(at(base, 1)));
    EXPECT_EQ(empty.key().error(), loom::make_error_code(loom::errc::invalid_argument));
    auto a = get(c, base, 8, send);
    const auto id = a.region().id;
    handle_t b = std::move(a);
    EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move)
    EXPECT_TRUE(b);
    EXPECT_TRUE(st->live.contains(id));
    handle_t d;
    d = std::move(b);
    EXPECT_TRUE(st->live.contains(id));
    d = handle_t{};  // move-assigning releases the old reference
    EXPECT_FALSE(st->live.contains(id)) << "zero limits: the release deregisters";
    d.release();  // no-op on an empty handle
    EXPECT_EQ(c.stats().entries, 0u);
}

TEST_F(MrCacheTest, CacheMoveKeepsHandlesValid) {
    auto c = make();
    auto h = get(c, base, 8, send);
    cache_t moved = std::move(c);
    auto h2 = get(moved, base, 8, send);
    EXPECT_EQ(h2.region().id, h.region().id);
    h.release();
    h2.release();
    EXPECT_EQ(moved.stats().hits, 1u);
    EXPECT_EQ(moved.evict_unreferenced(), 1u);
    EXPECT_TRUE(st->live.empty());
}

TEST_F(MrCacheTest, DestroyingTheCacheDeregistersEverything) {
    {
        auto c = make();
        for (std::uint64_t i = 0; i < 10; ++i) (void)get(c, base + i * 2 * ps, 8, send);
        auto h = get(c, base + 100 * ps, 8, send);
        h.release();
        EXPECT_EQ(st->live.size(), 11u);
    }
    EXPECT_TRUE(st->live.empty());
    EXPECT_EQ(st->deregister_calls, st->register_calls);
}

// ---------------------------------------------------------------- limits and LRU

TEST_F(MrCacheTest, EvictsLeastRecentlyIdleFirst) {
    auto c = make(mr_cache_limits{.max_entries = 3});
    auto a = get(c, base, 8, send);
    auto b = get(c, base + 2 * ps, 8, send);
    auto d = get(c, base + 4 * ps, 8, send);
    const auto ida = a.region().id, idb = b.region().id, idd = d.region().id;
    b.release();
    a.release();
    d.release();  // idle order: b, a, d
    {
        auto e = get(c, base + 6 * ps, 8, send);  // evicts b
        EXPECT_FALSE(st->live.contains(idb));
        EXPECT_TRUE(st->live.contains(ida));
    }  // idle order: a, d, e
    {
        auto again = get(c, base, 8, send);
        EXPECT_EQ(again.region().id, ida);
    }  // a becomes newest: d, e, a
    {
        auto f = get(c, base + 8 * ps, 8, send);  // evicts d
        EXPECT_FALSE(st->live.contains(idd));
        EXPECT_TRUE(st->live.contains(ida));
    }
    EXPECT_EQ(c.stats().evictions, 2u);
    EXPECT_EQ(c.stats().entries, 3u);
    EXPECT_EQ(c.check_invariants(), "");
}

TEST_F(MrCacheTest, LiveHandlesMayExceedBoundsUntilReleased) {
    auto c = make(mr_cache_limits{.max_entries = 2});
    std::vector<handle_t> hs;
    std::vector<std::uint64_t> ids;
    for (std::uint64_t i = 0; i < 5; ++i) {
        hs.push_back(get(c, base + i * 2 * ps, 8, send));
        ids.push_back(hs.back().region().id);
    }
    EXPECT_EQ(c.stats().entries, 5u);
    EXPECT_EQ(c.stats().evictions, 0u);
    for (std::size_t i = 0; i < 5; ++i) {
        hs[i].release();
        // After each release: every idle entry beyond the bound is gone, oldest first.
        EXPECT_LE(c.stats().entries, std::max<std::size_t>(2, 5 - (i + 1))) << i;
    }
    EXPECT_EQ(c.stats().entries, 2u);
    EXPECT_EQ(c.stats().evictions, 3u);
    EXPECT_TRUE(st->live.contains(ids[3]));
    EXPECT_TRUE(st->live.contains(ids[4]));
    EXPECT_EQ(c.check_invariants(), "");
}

TEST_F(MrCacheTest, ByteLimitCountsRoundedBytes) {
    auto c = make(mr_cache_limits{.max_registered_bytes = 4 * ps});
    {
        auto h = get(c, base + 1, 2 * ps, send);
    }  // 3 pages
    EXPECT_EQ(c.stats().registered_bytes, 3 * ps);
    {
        auto h = get(c, base + 10 * ps, 8, send);
    }  // 1 page: exactly at the bound
    EXPECT_EQ(c.stats().entries, 2u);
    {
        auto h = get(c, base + 20 * ps, 8, send);
    }  // needs room: evicts the 3-page entry
    EXPECT_EQ(c.stats().entries, 2u);
    EXPECT_EQ(c.stats().registered_bytes, 2 * ps);
    EXPECT_EQ(c.stats().evictions, 1u);
    // Larger than the bound: registered anyway, deregistered on release.
    {
        auto big = get(c, base + 40 * ps, 5 * ps, send);
        EXPECT_EQ(c.stats().registered_bytes, 5 * ps);
        EXPECT_EQ(c.stats().entries, 1u);
    }
    EXPECT_EQ(c.stats().entries, 0u);
    EXPECT_EQ(c.stats().registered_bytes, 0u);
}

TEST_F(MrCacheTest, EvictionHappensEvenWhenRegistrationFails) {
    auto c = make(mr_cache_limits{.max_entries = 1});
    {
        auto h = get(c, base, 8, send);
    }
    st->fail_next = true;
    EXPECT_EQ(err(c.lookup(at(base + 4 * ps, 8), send)), "no_memory");
    EXPECT_TRUE(st->live.empty());
    EXPECT_EQ(c.stats(), (mr_cache_stats{.misses = 2, .registrations = 1, .evictions = 1}));
}

TEST_F(MrCacheTest, ZeroLimitsDisableIdleRetention) {
    for (const auto l : {mr_cache_limits{.max_entries = 0}, mr_cache_limits{.max_registered_bytes = 0}}) {
        fake_registrar r;
        cache_t c{r, l};
        auto h = c.lookup(at(base, 8), send).value();
        auto h2 = c.lookup(at(base, 8), send).value();  // a live entry still serves hits
        EXPECT_EQ(h2.region().id, h.region().id);
        EXPECT_EQ(r.st->live.size(), 1u);
        h.release();
        EXPECT_EQ(r.st->live.size(), 1u);
        h2.release();
        EXPECT_TRUE(r.st->live.empty());
        {
            auto h3 = c.lookup(at(base, 8), send).value();
        }
        EXPECT_EQ(c.stats(), (mr_cache_stats{.hits = 1, .misses = 2, .registrations = 2, .evictions = 2}));
        EXPECT_EQ(c.check_invariants(), "");
    }
}

// ---------------------------------------------------------------- invalidation and clearing

TEST_F(MrCacheTest, InvalidateRemovesOverlappingRanges) {
    auto c = make();
    auto held = get(c, base, 8, send);  // [0, 1p)
    {
        auto h = get(c, base + 2 * ps, 2 * ps, send);
    }  // [2p, 4p) idle
    {
        auto h = get(c, base + 5 * ps, 8, send);
    }  // [5p, 6p) idle
    const auto held_id = held.region().id;
    // [1p, 2p) touches no entry: the end of [0,1p) and start of [2p,4p) are exclusive/inclusive bounds.
    EXPECT_EQ(c.invalidate(at(base + ps, 1).data(), ps), 0u);
    EXPECT_EQ(c.invalidate(at(base + ps, 1).data(), 0), 0u);
    // One byte at the very end of the held entry's page.
    EXPECT_EQ(c.invalidate(at(base + ps - 1, 1).data(), 1), 1u);
    EXPECT_TRUE(st->live.contains(held_id)) << "handles keep their registration";
    EXPECT_EQ(held.descriptor(), fake_registrar::descriptor(held.region()));
    // A new lookup no longer finds it.
    auto fresh = get(c, base, 8, send);
    EXPECT_NE(fresh.region().id, held_id);
    held.release();
    EXPECT_FALSE(st->live.contains(held_id));
    // Overlapping two idle entries at once (the last byte of [2p,4p) through [5p,..)).
    EXPECT_EQ(c.invalidate(at(base + 4 * ps - 1, 1).data(), ps + 2), 2u);
    EXPECT_EQ(st->live.size(), 1u);
    const auto s = c.stats();
    EXPECT_EQ(s.invalidations, 3u);
    EXPECT_EQ(s.evictions, 0u);
    EXPECT_EQ(s.entries, 1u);
    EXPECT_EQ(s.registered_bytes, ps);
    EXPECT_EQ(c.check_invariants(), "");
}

TEST_F(MrCacheTest, InvalidateInBoundedCache) {
    auto c = make(mr_cache_limits{.max_entries = 4});
    auto held = get(c, base, 8, send);
    {
        auto h = get(c, base + 2 * ps, 8, send);
    }
    EXPECT_EQ(c.invalidate(at(base, 1).data(), 3 * ps), 2u);
    EXPECT_EQ(st->live.size(), 1u);
    EXPECT_EQ(c.check_invariants(), "");
    held.release();
    EXPECT_TRUE(st->live.empty());
    EXPECT_EQ(c.check_invariants(), "");
}

TEST_F(MrCacheTest, ClearEvictsOnlyUnreferenced) {
    for (const auto l : {mr_cache_limits{}, mr_cache_limits{.max_entries = 100}}) {
        fake_registrar r;
        cache_t c{r, l};
        auto keep = c.lookup(at(base, 8), send).value();
        for (std::uint64_t i = 1; i <= 5; ++i) (void)c.lookup(at(base + i * 2 * ps, 8), send).value();
        EXPECT_EQ(c.clear(), 5u);
        EXPECT_EQ(r.st->live.size(), 1u);
        EXPECT_EQ(c.evict_unreferenced(), 0u);
        auto hit = c.lookup(at(base, 8), send).value();
        EXPECT_EQ(hit.region().id, keep.region().id);
        keep.release();
        hit.release();
        EXPECT_EQ(c.evict_unreferenced(), 1u);
        EXPECT_TRUE(r.st->live.empty());
        EXPECT_EQ(c.stats(), (mr_cache_stats{.hits = 1, .misses = 6, .registrations = 6, .evictions = 6}));
        EXPECT_EQ(c.check_invariants(), "");
    }
}

TEST_F(MrCacheTest, ManyDisjointEntriesStayBalanced) {
    auto c = make();
    constexpr std::uint64_t n = 5000;
    for (std::uint64_t i = 0; i < n; ++i) (void)get(c, base + i * 2 * ps, 8, send);  // ascending inserts
    EXPECT_EQ(c.check_invariants(), "");
    for (std::uint64_t i = n; i-- > 0;) (void)get(c, base + i * 2 * ps + 100, 8, send);  // all hits
    EXPECT_EQ(c.stats().hits, n);
    // Again in a scattered order (served by the hint table, which grew with the index).
    for (std::uint64_t i = 0; i < n; ++i) {
        const std::uint64_t k = (i * 2957) % n;
        auto h = get(c, base + k * 2 * ps + 200, 64, send);
        ASSERT_EQ(h.address(), at(base + k * 2 * ps, 1).data());
    }
    EXPECT_EQ(c.stats().hits, 2 * n);
    // Gaps between the allocations miss.
    (void)get(c, base + 2 * ps + ps + 1, 8, send);
    EXPECT_EQ(c.stats().misses, n + 1);
    EXPECT_EQ(c.invalidate(at(base, 1).data(), n * ps), n / 2 + 1);
    EXPECT_EQ(c.check_invariants(), "");
}

/// A hint left pointing at a node that was destroyed and reused for another range: the
/// lock-free hit takes the reference, sees the wrong range, and gives hit and reference back.
TEST_F(MrCacheTest, StaleHintToRecycledNodeIsNotAHit) {
    for (const auto l : {mr_cache_limits{}, mr_cache_limits{.max_entries = 100}}) {
        fake_registrar r;
        cache_t c{r, l};
        auto first = c.lookup(at(base, 8), send).value();  // hint: page 0 -> node X
        const auto* first_region = &first.region();
        first.release();
        EXPECT_EQ(c.invalidate(at(base, 1).data(), 1), 1u);  // X goes to the free list
        auto other = c.lookup(at(base + 10 * ps, 8), send).value();
        EXPECT_EQ(&other.region(), first_region) << "the node is reused";
        // Page 0 again: the stale hint leads to X (now [10p, 11p), referenced): a miss.
        auto again = c.lookup(at(base + 16, 8), send).value();
        EXPECT_EQ(again.address(), at(base, 1).data());
        EXPECT_NE(again.region().id, other.region().id);
        EXPECT_EQ(c.stats(), (mr_cache_stats{.hits = 0,
                                             .misses = 3,
                                             .registrations = 3,
                                             .invalidations = 1,
                                             .registered_bytes = 2 * ps,
                                             .entries = 2}));
        EXPECT_EQ(c.check_invariants(), "");
        // Hits through the refreshed hint; the undone reference left X's count exact.
        {
            auto h = c.lookup(at(base + 32, 8), send).value();
        }
        {
            auto h = c.lookup(at(base + 10 * ps + 8, 8), send).value();
        }
        EXPECT_EQ(c.stats().hits, 2u);
        EXPECT_EQ(c.evict_unreferenced(), 0u);  // both entries are held
        other.release();
        again.release();
        EXPECT_EQ(c.evict_unreferenced(), 2u);
        EXPECT_TRUE(r.st->live.empty());
        EXPECT_EQ(c.check_invariants(), "");
    }
}

/// Permission mismatch on the hinted entry: the lookup falls back to the index and upgrades.
TEST_F(MrCacheTest, HintWithTooLittleAccessFallsBack) {
    auto c = make();
    auto s1 = get(c, base, 8, send);
    auto r1 = get(c, base + 64, 8, recv);  // hint names the send-only entry: upgrade miss
    EXPECT_EQ(r1.access(), send | recv);
    auto s2 = get(c, base + 128, 8, send | recv);
    EXPECT_EQ(s2.region().id, r1.region().id);
    EXPECT_EQ(c.stats().hits, 1u);
    EXPECT_EQ(c.stats().misses, 2u);
    EXPECT_EQ(c.check_invariants(), "");
}

// ---------------------------------------------------------------- domain registrar rules

TEST(MrCacheBinding, EndpointRules) {
    using loom::detail::mr_cache_binding_check;
    const auto ep_mode = loom::mr_mode_flags::endpoint | loom::mr_mode_flags::local;
    const auto plain = loom::mr_mode_flags::virt_addr;
    EXPECT_TRUE(mr_cache_binding_check(true, plain, false, false, false));
    EXPECT_TRUE(mr_cache_binding_check(true, plain, true, true, true));
    EXPECT_TRUE(mr_cache_binding_check(true, ep_mode, true, true, true));
    EXPECT_FALSE(mr_cache_binding_check(true, ep_mode, false, false, false)) << "endpoint required";
    EXPECT_FALSE(mr_cache_binding_check(true, ep_mode, true, true, false)) << "foreign endpoint";
    EXPECT_FALSE(mr_cache_binding_check(true, plain, true, true, false)) << "foreign endpoint";
    EXPECT_FALSE(mr_cache_binding_check(true, plain, true, false, false)) << "closed endpoint";
    EXPECT_FALSE(mr_cache_binding_check(false, plain, false, false, false)) << "closed domain";
    EXPECT_EQ(mr_cache_binding_check(true, ep_mode, false, false, false).error(),
              loom::make_error_code(loom::errc::invalid_argument));
}

TEST(MrCacheBinding, ClosedDomainOrEndpointIsRejected) {
    loom::domain dom;
    loom::endpoint ep;
    EXPECT_EQ(loom::make_mr_cache(dom).status().error(), loom::make_error_code(loom::errc::invalid_argument));
    EXPECT_EQ(loom::make_mr_cache<loom::provider::generic_tag>(dom, ep).status().error(),
              loom::make_error_code(loom::errc::invalid_argument));
    loom::mr_cache c(dom, mr_cache_limits{.max_entries = 4});
    EXPECT_FALSE(c.status());
    EXPECT_EQ(c.limits().max_entries, 4u);
    std::array<std::byte, 64> buf{};
    auto r = c.lookup(std::span{buf}, send);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), loom::make_error_code(loom::errc::invalid_argument));
    EXPECT_EQ(c.stats(), mr_cache_stats{});
}

}  // namespace
}  // namespace loom_test::mr
