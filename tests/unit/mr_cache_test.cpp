// Unit tests of loom/mr_cache.hpp over a fake registrar (no provider): hits, misses,
// containment, permission upgrade, page rounding, LRU eviction under limits, invalidation,
// statistics, a property test against a brute-force model, and a 4-thread stress test.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <loom/endpoint.hpp>
#include <loom/mr_cache.hpp>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using loom::mr_access_flags;
using loom::mr_cache_limits;
using loom::mr_cache_stats;

const std::uint64_t ps = loom::detail::mr_cache_core::page_size();
// Synthetic, page-aligned addresses: the fake registrar never touches memory.
constexpr std::uint64_t base = 0x100000000000ULL;

auto at(std::uint64_t addr, std::size_t n) -> std::span<std::byte> {
    return {reinterpret_cast<std::byte*>(static_cast<std::uintptr_t>(addr)), n};
}

// ---------------------------------------------------------------- fake registrar

struct fake_region {
    std::uint64_t id{0};
    std::uint64_t start{0};
    std::uint64_t length{0};
    mr_access_flags access{};
};

struct fake_live {
    std::uint64_t start{0};
    std::uint64_t length{0};
    mr_access_flags access{};
    friend auto operator==(const fake_live&, const fake_live&) -> bool = default;
};

constexpr std::size_t max_ids = 1u << 20;

/// Shared between the test and the registrar copy inside the cache. Deliberately without a
/// lock: the cache must serialize register/deregister (TSan and `overlap` catch it if not).
struct fake_state {
    std::uint64_t next_id{1};
    std::map<std::uint64_t, fake_live> live;
    std::uint64_t register_calls{0};
    std::uint64_t deregister_calls{0};
    bool fail_next{false};
    loom::void_result config{};
    std::atomic<int> in_call{0};
    std::atomic<bool> overlap{false};
    std::unique_ptr<std::atomic<bool>[]> alive{new std::atomic<bool>[max_ids] {}};
};

struct fake_registrar {
    using region_type = fake_region;
    std::shared_ptr<fake_state> st = std::make_shared<fake_state>();

    [[nodiscard]] auto check() const -> loom::void_result { return st->config; }
    auto register_range(const loom::mr_cache_request& req) -> loom::result<fake_region> {
        if (st->in_call.exchange(1) != 0) st->overlap = true;
        ++st->register_calls;
        loom::result<fake_region> out = loom::make_unexpected(loom::errc::no_memory);
        if (!std::exchange(st->fail_next, false)) {
            const auto start = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(req.range.data()));
            const fake_region r{st->next_id++, start, req.range.size(), req.access};
            st->live[r.id] = fake_live{r.start, r.length, r.access};
            if (r.id < max_ids) st->alive[r.id].store(true);
            out = r;
        }
        st->in_call.store(0);
        return out;
    }
    void deregister(fake_region& r) noexcept {
        if (st->in_call.exchange(1) != 0) st->overlap = true;
        ++st->deregister_calls;
        st->live.erase(r.id);
        if (r.id < max_ids) st->alive[r.id].store(false);
        st->in_call.store(0);
    }
    [[nodiscard]] static auto descriptor(const fake_region& r) noexcept -> void* {
        return reinterpret_cast<void*>(static_cast<std::uintptr_t>(r.id * 16));
    }
    [[nodiscard]] static auto key(const fake_region& r) noexcept -> loom::result<std::uint64_t> {
        return r.id ^ 0x5a5a0000ULL;
    }
};
static_assert(loom::mr_cache_registrar<fake_registrar>);
static_assert(loom::mr_cache_registrar<loom::domain_registrar>);

using cache_t = loom::basic_mr_cache<fake_registrar>;
using handle_t = cache_t::handle;

const auto send = mr_access_flags::send;
const auto recv = mr_access_flags::recv;
const auto rread = mr_access_flags::remote_read;
const auto rwrite = mr_access_flags::remote_write;

auto err(const loom::result<handle_t>& r) -> std::string {
    return r ? std::string("ok") : loom::errc_name(static_cast<loom::errc>(r.error().value()));
}

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

// ---------------------------------------------------------------- property test

/// Brute-force model: a vector of live registrations.
struct model {
    struct entry {
        std::uint64_t id, start, end;
        mr_access_flags access;
        int refs;
        bool indexed;
        std::uint64_t idle_seq;
    };
    mr_cache_limits lim;
    std::vector<entry> live;
    mr_cache_stats s{};
    std::uint64_t clock{0};

    auto find(std::uint64_t id) -> entry& {
        return *std::find_if(live.begin(), live.end(), [id](const entry& e) { return e.id == id; });
    }
    void erase(std::uint64_t id) {
        auto& e = find(id);
        s.registered_bytes -= e.end - e.start;
        --s.entries;
        live.erase(live.begin() + (&e - live.data()));
    }
    auto over(std::size_t ee, std::size_t eb) const -> bool {
        return s.entries + ee > lim.max_entries || s.registered_bytes + eb > lim.max_registered_bytes;
    }
    void trim(std::size_t ee, std::size_t eb) {
        if (!lim.bounded()) return;
        while (over(ee, eb)) {
            const entry* oldest = nullptr;
            for (const auto& e : live)
                if (e.indexed && e.refs == 0 && (oldest == nullptr || e.idle_seq < oldest->idle_seq)) oldest = &e;
            if (oldest == nullptr) return;
            ++s.evictions;
            erase(oldest->id);
        }
    }
    void unindex(std::uint64_t id, bool invalidation) {
        auto& e = find(id);
        e.indexed = false;
        ++(invalidation ? s.invalidations : s.evictions);
        if (e.refs == 0) erase(id);
    }
    void release(std::uint64_t id) {
        auto& e = find(id);
        if (--e.refs > 0) return;
        if (!e.indexed) {
            erase(id);
            return;
        }
        e.idle_seq = ++clock;
        trim(0, 0);
    }
};

void property_run(mr_cache_limits lim, std::uint64_t seed, int ops) {
    SCOPED_TRACE("seed " + std::to_string(seed) + " max_entries " + std::to_string(lim.max_entries) + " max_bytes " +
                 std::to_string(lim.max_registered_bytes));
    fake_registrar reg;
    auto& st = *reg.st;
    cache_t cache{reg, lim};
    model m;
    m.lim = lim;
    std::mt19937_64 rng(seed);
    auto uni = [&](std::uint64_t lo, std::uint64_t hi) {
        return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
    };
    const std::array<mr_access_flags, 6> pool{send, recv, send | recv, rread, rread | rwrite, send | rwrite};
    constexpr std::uint64_t pages = 32;
    std::vector<std::pair<handle_t, std::uint64_t>> held;

    for (int op = 0; op < ops; ++op) {
        const auto dice = uni(0, 99);
        if (dice < 55 || held.empty()) {
            // ---- lookup
            const std::uint64_t a = base + uni(0, pages * ps - 1);
            const auto size_class = uni(0, 99);
            const std::uint64_t n = size_class < 70   ? uni(1, ps / 2)
                                    : size_class < 95 ? uni(1, 2 * ps)
                                                      : uni(1, 8 * ps);
            const auto acc = pool[uni(0, pool.size() - 1)];
            const bool inject = uni(0, 49) == 0;
            st.fail_next = inject;
            auto r = cache.lookup(at(a, n), acc);
            st.fail_next = false;
            bool candidate = false;
            for (const auto& e : m.live)
                if (e.indexed && e.start <= a && e.end >= a + n && (acc & ~e.access).empty()) candidate = true;
            if (candidate) {
                ASSERT_TRUE(r.has_value()) << "op " << op << ": expected a hit";
                const auto id = r->region().id;
                auto& e = m.find(id);
                ASSERT_TRUE(e.indexed && e.start <= a && e.end >= a + n && (acc & ~e.access).empty())
                    << "op " << op << ": hit returned a non-matching entry";
                ++m.s.hits;
                ++e.refs;
                held.emplace_back(std::move(*r), id);
            } else {
                ++m.s.misses;
                const std::uint64_t ra = a & ~(ps - 1), rb = (a + n + ps - 1) & ~(ps - 1);
                mr_access_flags want = acc;
                for (const auto& e : m.live)
                    if (e.indexed && e.start <= a && e.end >= a + n) want |= e.access;
                m.trim(1, rb - ra);
                if (inject) {
                    ASSERT_FALSE(r.has_value()) << "op " << op;
                } else {
                    ASSERT_TRUE(r.has_value()) << "op " << op << ": " << err(r);
                    const auto id = r->region().id;
                    ASSERT_EQ(id, st.next_id - 1) << "op " << op << ": expected a new registration";
                    ASSERT_EQ(r->access(), want);
                    ASSERT_EQ(r->address(), at(ra, 1).data());
                    ASSERT_EQ(r->size(), rb - ra);
                    ++m.s.registrations;
                    ++m.s.entries;
                    m.s.registered_bytes += rb - ra;
                    m.live.push_back({id, ra, rb, want, 1, true, 0});
                    std::vector<std::uint64_t> replaced;
                    for (const auto& e : m.live)
                        if (e.id != id && e.indexed && e.start == ra && e.end == rb && (e.access & ~want).empty())
                            replaced.push_back(e.id);
                    for (auto rid : replaced) m.unindex(rid, false);
                    held.emplace_back(std::move(*r), id);
                }
            }
        } else if (dice < 90) {
            // ---- release a random handle
            const auto i = uni(0, held.size() - 1);
            const auto id = held[i].second;
            std::swap(held[i], held.back());
            held.pop_back();  // the handle's destructor releases
            m.release(id);
        } else if (dice < 99) {
            // ---- invalidate a random range
            const std::uint64_t a = base + uni(0, pages * ps - 1);
            const std::uint64_t n = uni(0, 3 * ps);
            std::vector<std::uint64_t> hit;
            for (const auto& e : m.live)
                if (e.indexed && n > 0 && e.start < a + n && e.end > a) hit.push_back(e.id);
            ASSERT_EQ(cache.invalidate(at(a, 1).data(), n), hit.size()) << "op " << op;
            for (auto id : hit) m.unindex(id, true);
        } else {
            // ---- evict everything idle
            std::vector<std::uint64_t> idle;
            for (const auto& e : m.live)
                if (e.indexed && e.refs == 0) idle.push_back(e.id);
            ASSERT_EQ(cache.evict_unreferenced(), idle.size()) << "op " << op;
            for (auto id : idle) {
                ++m.s.evictions;
                m.erase(id);
            }
        }
        while (held.size() > 48) {
            m.release(held.front().second);
            held.erase(held.begin());
        }
        ASSERT_EQ(cache.stats(), m.s) << "op " << op;
        ASSERT_EQ(st.live.size(), m.live.size()) << "op " << op;
        for (const auto& e : m.live) {
            auto it = st.live.find(e.id);
            ASSERT_NE(it, st.live.end()) << "op " << op << ": id " << e.id << " deregistered early";
            ASSERT_EQ(it->second, (fake_live{e.start, e.end - e.start, e.access})) << "op " << op;
        }
        if (op % 997 == 0) {
            ASSERT_EQ(cache.check_invariants(), "") << "op " << op;
        }
    }
    held.clear();
    ASSERT_EQ(cache.check_invariants(), "");
    ASSERT_FALSE(st.overlap.load());
    const auto s = cache.stats();
    EXPECT_GT(s.hits, static_cast<std::uint64_t>(ops) / 20) << "the workload should produce hits";
    EXPECT_GT(s.misses, 100u);
    EXPECT_GT(s.invalidations, 100u);
    if (lim.bounded()) {
        EXPECT_GT(s.evictions, 100u);
    }
}

TEST(MrCacheProperty, UnboundedAgainstModel) { property_run({}, 0xC0FFEE, 100'000); }
TEST(MrCacheProperty, EntryBoundAgainstModel) { property_run({.max_entries = 12}, 0xBEEF, 100'000); }
TEST(MrCacheProperty, ByteBoundAgainstModel) { property_run({.max_registered_bytes = 20 * ps}, 0xFACE, 100'000); }
TEST(MrCacheProperty, BothBoundsAgainstModel) {
    property_run({.max_entries = 6, .max_registered_bytes = 10 * ps}, 0xD00D, 100'000);
}
TEST(MrCacheProperty, ZeroLimitAgainstModel) { property_run({.max_entries = 0}, 0xABBA, 50'000); }

// ---------------------------------------------------------------- concurrency

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
