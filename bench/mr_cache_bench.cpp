// MR cache lookups: the AVL-indexed loom::basic_mr_cache next to a sorted-vector cache whose
// lookups scan linearly. Both use the same locking (shared for hits, exclusive for misses) and
// a registrar that only hands out ids, so the numbers measure the index and its locking.
//
//   hit  : lookups of 64-byte ranges inside N cached one-page entries (random entry per lookup,
//          cycling through 4096 precomputed addresses, so at most 4096 distinct entries),
//          handle released every iteration.
//   hit16: the same over a working set of 16 entries (reused communication buffers).
//   hitall: every one of the N entries at least once per cycle, in random order
//          (bit_ceil(max(N, 4096)) precomputed addresses): the working set is the whole cache.
//   miss : a cache bounded to N entries, each lookup a page not cached: search, evict the
//          oldest idle entry, register, insert, release.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <loom/mr_cache.hpp>
#include <memory>
#include <mutex>
#include <random>
#include <shared_mutex>
#include <vector>

namespace {

const std::uint64_t page = loom::detail::mr_cache_core::page_size();
constexpr std::uint64_t region_base = 0x100000000000ULL;         // synthetic addresses, never touched
constexpr std::uint64_t region_stride = std::uint64_t{1} << 40;  // per-thread miss regions
constexpr std::size_t lookup_size = 64;
constexpr auto access = loom::mr_access_flags::send;

auto at(std::uint64_t addr) -> std::span<std::byte> {
    return {reinterpret_cast<std::byte*>(static_cast<std::uintptr_t>(addr)), lookup_size};
}

// ---------------------------------------------------------------- the cache under test

struct id_registrar {
    using region_type = std::uint64_t;
    std::uint64_t next{1};
    [[nodiscard]] auto check() const -> loom::void_result { return {}; }
    auto register_range(const loom::mr_cache_request&) -> loom::result<std::uint64_t> { return next++; }
    void deregister(std::uint64_t&) noexcept {}
    [[nodiscard]] static auto descriptor(const std::uint64_t& r) noexcept -> void* {
        return reinterpret_cast<void*>(static_cast<std::uintptr_t>(r));
    }
    [[nodiscard]] static auto key(const std::uint64_t& r) noexcept -> loom::result<std::uint64_t> { return r; }
};

struct avl_cache {
    loom::basic_mr_cache<id_registrar> cache;
    explicit avl_cache(loom::mr_cache_limits l) : cache(id_registrar{}, l) {}
    void fill(std::uint64_t first, std::size_t n) {
        for (std::size_t i = 0; i < n; ++i) (void)cache.lookup(at(first + 2 * i * page), access);
    }
    auto lookup(std::uint64_t a) { return cache.lookup(at(a), access); }
    auto hits() const { return cache.stats().hits; }
    auto misses() const { return cache.stats().misses; }
    auto size() const { return cache.stats().entries; }
};

// ---------------------------------------------------------------- the baseline

/// Entries sorted by start in one vector; lookups scan from the front until start > address.
class sorted_vector_cache {
public:
    struct node {
        std::atomic<std::uint32_t> refs{0};
        std::atomic<std::uint64_t> idle_since{0};
        std::uint64_t id{0};
    };
    class handle {
    public:
        handle() = default;
        handle(sorted_vector_cache* c, node* n) : c_(c), n_(n) {}
        handle(handle&& o) noexcept : c_(std::exchange(o.c_, nullptr)), n_(std::exchange(o.n_, nullptr)) {}
        handle(const handle&) = delete;
        auto operator=(handle&&) -> handle& = delete;
        ~handle() {
            if (n_ != nullptr) c_->release(n_);
        }
        [[nodiscard]] auto descriptor() const noexcept -> void* {
            return reinterpret_cast<void*>(static_cast<std::uintptr_t>(n_->id));
        }

    private:
        sorted_vector_cache* c_{nullptr};
        node* n_{nullptr};
    };

    explicit sorted_vector_cache(loom::mr_cache_limits l) : max_entries_(l.max_entries) {}

    /// N idle one-page entries at every other page from `first` (ascending: appended directly,
    /// as N lookups would be quadratic here), counted as misses like the lookups they replace.
    void fill(std::uint64_t first, std::size_t n) {
        slots_.reserve(n);
        for (std::size_t i = 0; i < n; ++i) {
            auto nd = std::make_unique<node>();
            nd->id = ++next_id_;
            nd->idle_since.store(clock_.fetch_add(1), std::memory_order_relaxed);
            const std::uint64_t start = first + 2 * i * page;
            slots_.push_back(slot{start, start + page, access.get(), std::move(nd)});
        }
        misses_ += n;
    }

    auto lookup(std::uint64_t a) -> loom::result<handle> {
        const std::uint64_t b = a + lookup_size;
        {
            std::shared_lock lk(mu_);
            if (node* n = scan(a, b)) {
                n->refs.fetch_add(1, std::memory_order_relaxed);
                hits_.fetch_add(1, std::memory_order_relaxed);
                return handle{this, n};
            }
        }
        std::unique_lock lk(mu_);
        if (node* n = scan(a, b)) {
            n->refs.fetch_add(1, std::memory_order_relaxed);
            hits_.fetch_add(1, std::memory_order_relaxed);
            return handle{this, n};
        }
        ++misses_;
        if (slots_.size() >= max_entries_) evict_oldest_idle();
        const std::uint64_t ra = a & ~(page - 1), rb = (b + page - 1) & ~(page - 1);
        auto n = std::make_unique<node>();
        n->id = ++next_id_;
        n->refs.store(1, std::memory_order_relaxed);
        const auto pos = std::upper_bound(slots_.begin(), slots_.end(), ra,
                                          [](std::uint64_t v, const slot& s) { return v < s.start; });
        node* raw = n.get();
        slots_.insert(pos, slot{ra, rb, access.get(), std::move(n)});
        return handle{this, raw};
    }
    void release(node* n) noexcept {
        if (n->refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
            n->idle_since.store(clock_.fetch_add(1, std::memory_order_relaxed), std::memory_order_relaxed);
    }
    auto hits() const { return hits_.load(); }
    auto misses() const { return misses_; }
    auto size() const { return slots_.size(); }

private:
    struct slot {
        std::uint64_t start, end, access;
        std::unique_ptr<node> n;
    };
    auto scan(std::uint64_t a, std::uint64_t b) -> node* {
        for (const auto& s : slots_) {
            if (s.start > a) break;
            if (s.end >= b && (access.get() & ~s.access) == 0) return s.n.get();
        }
        return nullptr;
    }
    void evict_oldest_idle() {
        auto victim = slots_.end();
        for (auto it = slots_.begin(); it != slots_.end(); ++it)
            if (it->n->refs.load(std::memory_order_acquire) == 0 &&
                (victim == slots_.end() || it->n->idle_since.load(std::memory_order_relaxed) <
                                               victim->n->idle_since.load(std::memory_order_relaxed)))
                victim = it;
        if (victim != slots_.end()) slots_.erase(victim);
    }

    std::shared_mutex mu_;
    std::vector<slot> slots_;
    std::size_t max_entries_;
    std::uint64_t next_id_{0};
    std::atomic<std::uint64_t> hits_{0};
    std::uint64_t misses_{0};
    std::atomic<std::uint64_t> clock_{0};
};

// ---------------------------------------------------------------- benchmarks

template <class Impl>
std::unique_ptr<Impl> shared_cache;  // one per implementation; set up and torn down by thread 0

/// N one-page entries at every other page of region 0.
template <class Impl>
auto populate(std::size_t n, loom::mr_cache_limits l) -> std::unique_ptr<Impl> {
    auto c = std::make_unique<Impl>(l);
    c->fill(region_base, n);
    return c;
}

/// Hits spread uniformly over all N entries (`working_set` 0), or over a fixed working set
/// of buffers among them (temporal locality, as with reused communication buffers). Both
/// cycle through 4096 addresses. `every_entry` instead visits all N entries in random order.
template <class Impl, std::size_t working_set, bool every_entry = false>
void hit(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    if (state.thread_index() == 0) shared_cache<Impl> = populate<Impl>(n, {});
    std::mt19937_64 rng(42 + static_cast<std::uint64_t>(state.thread_index()));
    std::vector<std::uint64_t> entries(working_set == 0 ? n : std::min(n, working_set));
    for (auto& e : entries) e = rng() % n;
    std::vector<std::uint64_t> addrs(4096);
    for (auto& a : addrs) a = region_base + 2 * entries[rng() % entries.size()] * page + (rng() % (page - lookup_size));
    if constexpr (every_entry) {
        addrs.resize(std::bit_ceil(std::max<std::size_t>(n, 4096)));
        for (std::size_t i = 0; i < addrs.size(); ++i)
            addrs[i] = region_base + 2 * (i % n) * page + (rng() % (page - lookup_size));
        std::shuffle(addrs.begin(), addrs.end(), rng);
    }
    const std::size_t mask = addrs.size() - 1;
    std::size_t k = 0;
    for (auto _ : state) {
        auto h = shared_cache<Impl>->lookup(addrs[k++ & mask]);
        benchmark::DoNotOptimize(h->descriptor());
    }
    state.SetItemsProcessed(state.iterations());
    if (state.thread_index() == 0) {
        auto& c = *shared_cache<Impl>;
        state.counters["miss_ratio"] = static_cast<double>(c.misses() - n) / static_cast<double>(c.hits() + 1);
        shared_cache<Impl>.reset();
    }
}

template <class Impl>
void miss(benchmark::State& state) {
    const auto n = static_cast<std::size_t>(state.range(0));
    if (state.thread_index() == 0) shared_cache<Impl> = populate<Impl>(n, {.max_entries = n});
    // Each thread cycles through 2N + 64 pages of its own region: a page is always evicted
    // before it comes round again.
    const std::uint64_t region = region_base + region_stride * (1 + static_cast<std::uint64_t>(state.thread_index()));
    const std::size_t cycle = 2 * n + 64;
    std::size_t k = 0;
    for (auto _ : state) {
        auto h = shared_cache<Impl>->lookup(region + 2 * k * page);
        benchmark::DoNotOptimize(h->descriptor());
        if (++k == cycle) k = 0;
    }
    state.SetItemsProcessed(state.iterations());
    if (state.thread_index() == 0) {
        auto& c = *shared_cache<Impl>;
        state.counters["hits"] = static_cast<double>(c.hits());
        state.counters["entries"] = static_cast<double>(c.size());
        shared_cache<Impl>.reset();
    }
}

void sizes(benchmark::internal::Benchmark* b) {
    for (const auto n : {10, 1'000, 10'000, 100'000}) b->Arg(n);
    b->ArgName("entries")->Threads(1)->Threads(4)->UseRealTime();
}

BENCHMARK(hit<avl_cache, 0>)->Name("hit/avl")->Apply(sizes);
BENCHMARK(hit<sorted_vector_cache, 0>)->Name("hit/sorted_vector")->Apply(sizes);
BENCHMARK(hit<avl_cache, 16>)->Name("hit16/avl")->Apply(sizes);
BENCHMARK(hit<sorted_vector_cache, 16>)->Name("hit16/sorted_vector")->Apply(sizes);
BENCHMARK(hit<avl_cache, 0, true>)->Name("hitall/avl")->Apply(sizes);
BENCHMARK(miss<avl_cache>)->Name("miss/avl")->Apply(sizes);
BENCHMARK(miss<sorted_vector_cache>)->Name("miss/sorted_vector")->Apply(sizes);

}  // namespace

BENCHMARK_MAIN();
