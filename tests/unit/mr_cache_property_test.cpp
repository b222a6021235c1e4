// The MR cache against a brute-force model of its registrations: random lookups, releases,
// invalidations and clears under each kind of limit, over the fake registrar.
#include "fake_mr_registrar.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <loom/mr_cache.hpp>
#include <random>
#include <vector>

// In the helpers' namespace: their send and recv hide the C library's.
namespace loom_test::mr {
namespace {

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

}  // namespace
}  // namespace loom_test::mr
