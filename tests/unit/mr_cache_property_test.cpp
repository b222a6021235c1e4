// The MR cache against a brute-force model of its registrations: random lookups, releases,
// invalidations and clears under each kind of limit, over the fake registrar.
#include "fake_mr_registrar.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
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

/// One random run: the cache and the model take the same steps, and must agree after each.
class property_runner {
public:
    property_runner(mr_cache_limits lim, std::uint64_t seed) : cache_{reg_, lim}, rng_(seed) { m_.lim = lim; }

    void run(int ops) {
        for (int op = 0; op < ops; ++op) {
            const auto dice = uni(0, 99);
            if (dice < 55 || held_.empty())
                lookup(op);
            else if (dice < 90)
                release_one();
            else if (dice < 99)
                invalidate(op);
            else
                evict_idle(op);
            if (::testing::Test::HasFatalFailure()) return;
            while (held_.size() > 48) {
                m_.release(held_.front().second);
                held_.erase(held_.begin());
            }
            agree(op);
            if (::testing::Test::HasFatalFailure()) return;
        }
        held_.clear();
        ASSERT_EQ(cache_.check_invariants(), "");
        ASSERT_FALSE(st_.overlap.load());
    }
    [[nodiscard]] auto stats() const -> mr_cache_stats { return cache_.stats(); }

private:
    static constexpr std::uint64_t pages = 32;

    auto uni(std::uint64_t lo, std::uint64_t hi) -> std::uint64_t {
        return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng_);
    }
    /// A lookup of a random range and access, failing the registration one time in 50.
    void lookup(int op) {
        const std::uint64_t a = base + uni(0, pages * ps - 1);
        const auto size_class = uni(0, 99);
        const std::uint64_t n = size_class < 70 ? uni(1, ps / 2) : size_class < 95 ? uni(1, 2 * ps) : uni(1, 8 * ps);
        const auto acc = pool_[uni(0, pool_.size() - 1)];
        const bool inject = uni(0, 49) == 0;
        st_.fail_next = inject;
        auto r = cache_.lookup(at(a, n), acc);
        st_.fail_next = false;
        bool candidate = false;
        for (const auto& e : m_.live)
            if (e.indexed && e.start <= a && e.end >= a + n && (acc & ~e.access).empty()) candidate = true;
        if (candidate) return expect_hit(op, std::move(r), a, n, acc);
        ++m_.s.misses;
        const std::uint64_t ra = a & ~(ps - 1), rb = (a + n + ps - 1) & ~(ps - 1);
        m_.trim(1, rb - ra);
        if (inject) {
            ASSERT_FALSE(r.has_value()) << "op " << op;
            return;
        }
        mr_access_flags want = acc;
        for (const auto& e : m_.live)
            if (e.indexed && e.start <= a && e.end >= a + n) want |= e.access;
        expect_registration(op, std::move(r), ra, rb, want);
    }
    template <class R>
    void expect_hit(int op, R r, std::uint64_t a, std::uint64_t n, mr_access_flags acc) {
        ASSERT_TRUE(r.has_value()) << "op " << op << ": expected a hit";
        const auto id = r->region().id;
        auto& e = m_.find(id);
        ASSERT_TRUE(e.indexed && e.start <= a && e.end >= a + n && (acc & ~e.access).empty())
            << "op " << op << ": hit returned a non-matching entry";
        ++m_.s.hits;
        ++e.refs;
        held_.emplace_back(std::move(*r), id);
    }
    /// A miss registers [ra, rb) with `want`, and replaces the entries it covers exactly.
    template <class R>
    void expect_registration(int op, R r, std::uint64_t ra, std::uint64_t rb, mr_access_flags want) {
        ASSERT_TRUE(r.has_value()) << "op " << op << ": " << err(r);
        const auto id = r->region().id;
        ASSERT_EQ(id, st_.next_id - 1) << "op " << op << ": expected a new registration";
        ASSERT_EQ(r->access(), want);
        ASSERT_EQ(r->address(), at(ra, 1).data());
        ASSERT_EQ(r->size(), rb - ra);
        ++m_.s.registrations;
        ++m_.s.entries;
        m_.s.registered_bytes += rb - ra;
        m_.live.push_back({id, ra, rb, want, 1, true, 0});
        std::vector<std::uint64_t> replaced;
        for (const auto& e : m_.live)
            if (e.id != id && e.indexed && e.start == ra && e.end == rb && (e.access & ~want).empty())
                replaced.push_back(e.id);
        for (auto rid : replaced) m_.unindex(rid, false);
        held_.emplace_back(std::move(*r), id);
    }
    /// Drops a random handle (its destructor releases).
    void release_one() {
        const auto i = uni(0, held_.size() - 1);
        const auto id = held_[i].second;
        std::swap(held_[i], held_.back());
        held_.pop_back();
        m_.release(id);
    }
    void invalidate(int op) {
        const std::uint64_t a = base + uni(0, pages * ps - 1);
        const std::uint64_t n = uni(0, 3 * ps);
        std::vector<std::uint64_t> hit;
        for (const auto& e : m_.live)
            if (e.indexed && n > 0 && e.start < a + n && e.end > a) hit.push_back(e.id);
        ASSERT_EQ(cache_.invalidate(at(a, 1).data(), n), hit.size()) << "op " << op;
        for (auto id : hit) m_.unindex(id, true);
    }
    void evict_idle(int op) {
        std::vector<std::uint64_t> idle;
        for (const auto& e : m_.live)
            if (e.indexed && e.refs == 0) idle.push_back(e.id);
        ASSERT_EQ(cache_.evict_unreferenced(), idle.size()) << "op " << op;
        for (auto id : idle) {
            ++m_.s.evictions;
            m_.erase(id);
        }
    }
    /// The cache's counters and live registrations are the model's.
    void agree(int op) {
        ASSERT_EQ(cache_.stats(), m_.s) << "op " << op;
        ASSERT_EQ(st_.live.size(), m_.live.size()) << "op " << op;
        for (const auto& e : m_.live) {
            auto it = st_.live.find(e.id);
            ASSERT_NE(it, st_.live.end()) << "op " << op << ": id " << e.id << " deregistered early";
            ASSERT_EQ(it->second, (fake_live{e.start, e.end - e.start, e.access})) << "op " << op;
        }
        if (op % 997 == 0) {
            ASSERT_EQ(cache_.check_invariants(), "") << "op " << op;
        }
    }

    const std::array<mr_access_flags, 6> pool_{send, recv, send | recv, rread, rread | rwrite, send | rwrite};
    fake_registrar reg_;
    fake_state& st_{*reg_.st};
    cache_t cache_;
    model m_;
    std::mt19937_64 rng_;
    std::vector<std::pair<handle_t, std::uint64_t>> held_;
};

void property_run(mr_cache_limits lim, std::uint64_t seed, int ops) {
    SCOPED_TRACE("seed " + std::to_string(seed) + " max_entries " + std::to_string(lim.max_entries) + " max_bytes " +
                 std::to_string(lim.max_registered_bytes));
    property_runner runner(lim, seed);
    runner.run(ops);
    if (::testing::Test::HasFatalFailure()) return;
    const auto s = runner.stats();
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
