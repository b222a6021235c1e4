// loom/detail/mr_cache_core.hpp — the registration cache's machinery, shared by every
// registrar: the index and LRU nodes, the lock-free hint table and the locked core
// (loom/src/mr_cache.cpp; the protocol in docs/mr_cache.md).
#pragma once

#include <loom/detail/resource_alloc.hpp>
#include <loom/mr_cache_types.hpp>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

namespace loom::detail {

/// Intrusive index/LRU node; registrar-specific entries derive from it. The first cache line
/// holds everything a lookup passing through the node reads or writes.
///
/// Node memory is type-stable: a destroyed entry's node (deregistered, refs = retired_bit) goes
/// to the cache's free list and is reused by a later registration; it is freed only when the
/// cache is destroyed. Lock-free hits may therefore touch the reference word of any node they
/// ever saw, and take a reference with a CAS that fails on a retired node.
struct alignas(64) mr_cache_node {
    mr_cache_node* left{nullptr};
    mr_cache_node* right{nullptr};
    std::uint64_t start{0};
    std::uint64_t end{0};      ///< exclusive
    std::uint64_t max_end{0};  ///< largest `end` in this subtree
    mr_access_flags access{};
    // One word for the hot path: bits 0-31 count handles (< 2^32 per entry), bits 32-62 count hits not yet
    // drained into the cache total, bit 63 (retired_bit) is set once the entry left the index
    // (and while the node is on the free list). A hit is one CAS adding hit_unit + 1.
    std::atomic<std::uint64_t> refs{0};
    std::int32_t height{1};
    bool indexed{false};
    bool host{false};  ///< space is host memory (checked by lock-free hits without the cold line)
    // Cold: the memory space, and the LRU list of idle entries (bounded caches), the list of
    // retired entries, the free list, or a scratch link.
    memory_space space{};
    mr_cache_node* prev{nullptr};
    mr_cache_node* next{nullptr};

    static constexpr std::uint64_t retired_bit = std::uint64_t{1} << 63;
    static constexpr std::uint64_t count_mask = 0xffff'ffffULL;
    static constexpr unsigned hit_shift = 32;
    static constexpr std::uint64_t hit_unit = std::uint64_t{1} << hit_shift;
    static constexpr std::uint64_t hits_mask = retired_bit - hit_unit;
    /// Hits kept in the word before the hit that reaches this many moves them to the total.
    static constexpr std::uint64_t drain_at = std::uint64_t{1} << 30;
    [[nodiscard]] static constexpr auto count_of(std::uint64_t w) noexcept -> std::uint64_t { return w & count_mask; }
    [[nodiscard]] static constexpr auto hits_of(std::uint64_t w) noexcept -> std::uint64_t {
        return (w & hits_mask) >> hit_shift;
    }
    /// The word without its hit bits (for comparisons of count and retired state).
    [[nodiscard]] static constexpr auto state_of(std::uint64_t w) noexcept -> std::uint64_t { return w & ~hits_mask; }

    mr_cache_node() = default;
    mr_cache_node(const mr_cache_node&) = delete;
    auto operator=(const mr_cache_node&) -> mr_cache_node& = delete;
    ~mr_cache_node() = default;

    [[nodiscard]] auto key() const noexcept -> mr_cache_key { return {space, start, end}; }
};

/// One way of the hint table: a host page number (+1; 0 = empty) and a node that contained an
/// address of that page when it was stored. Either word may be stale or torn; a lock-free hit
/// validates the node after taking its reference.
struct mr_cache_hint {
    std::atomic<std::uint64_t> tag{0};
    std::atomic<mr_cache_node*> node{nullptr};
};
/// A set of the 4-way hint table: one cache line.
struct alignas(64) mr_cache_hint_set {
    static constexpr std::size_t ways = 4;
    mr_cache_hint way[ways];
};
struct mr_cache_hint_table {
    unsigned shift{0};  ///< 64 - log2(sets): the set is the top bits of a multiplicative hash
    std::size_t sets{0};
    mr_cache_hint_set* set{nullptr};  ///< `sets` sets, allocated from `mr`
    std::pmr::memory_resource* mr{nullptr};
    mr_cache_hint_table() = default;
    mr_cache_hint_table(const mr_cache_hint_table&) = delete;
    auto operator=(const mr_cache_hint_table&) -> mr_cache_hint_table& = delete;
    ~mr_cache_hint_table() {
        if (set != nullptr) mr->deallocate(set, sets * sizeof(mr_cache_hint_set), alignof(mr_cache_hint_set));
    }
};

/// The registrar-independent part of a cache: index, LRU, limits, statistics and locking.
class mr_cache_core {
public:
    /// Allocates its index, hint tables and entries from `mr` (null: the default resource).
    explicit mr_cache_core(mr_cache_limits limits, std::pmr::memory_resource* mr = nullptr);
    mr_cache_core(const mr_cache_core&) = delete;
    auto operator=(const mr_cache_core&) -> mr_cache_core& = delete;
    virtual ~mr_cache_core();

    /// Finds or registers an entry containing [p, p+n) with access ⊇ `access`; the returned
    /// node carries one reference for the caller. `read_only` restricts the accepted access.
    /// Inline part: the lock-free hit through the hint table; everything else is lookup_slow.
    [[nodiscard]] auto lookup_host(const void* p, std::size_t n, mr_access_flags access, bool read_only)
        -> result<mr_cache_node*> {
        const auto a = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p));
        const std::uint64_t b = a + n;
        const bool plain = !access.empty() && (access & ~mr_cache_known_access).empty() &&
                           (!read_only || (access & ~mr_cache_read_only_access).empty()) && p != nullptr && n != 0 &&
                           b >= a && b <= ~page_mask_;
        if (plain) [[likely]] {
            const std::uint64_t tag = (a >> page_shift_) + 1;
            const mr_cache_hint_table& t = *hints_.load(std::memory_order_acquire);
            const mr_cache_hint_set& set = t.set[(tag * hint_multiplier) >> t.shift];
            for (const auto& w : set.way) {
                if (w.tag.load(std::memory_order_relaxed) != tag) continue;
                mr_cache_node* e = w.node.load(std::memory_order_acquire);
                if (e != nullptr && try_fast(e, a, b, access)) return e;
            }
        }
        return lookup_slow(p, n, access, read_only);
    }
    /// Drops one reference (never throws; may deregister).
    void release(mr_cache_node* n) noexcept {
        if (!bounded_) {
            // Lock-free: the index and LRU do not change when an unbounded entry goes idle.
            const auto old = n->refs.fetch_sub(1, std::memory_order_acq_rel);
            if (mr_cache_node::state_of(old) == (mr_cache_node::retired_bit | 1)) [[unlikely]]
                destroy_retired(n);
            return;
        }
        release_bounded(n);
    }

    /// Device memory and DMA-BUF ranges: [a, a+n) in `space` (kind hmem or dmabuf), exact (no
    /// page rounding), found under the shared lock or registered under the exclusive one.
    [[nodiscard]] auto lookup_space(const memory_space& space, std::uint64_t a, std::uint64_t n, mr_access_flags access)
        -> result<mr_cache_node*>;

    auto invalidate_host(const void* p, std::size_t n) -> std::size_t;
    /// Unindexes every DMA-BUF entry of descriptor `fd`.
    auto invalidate_fd(std::uint64_t fd) -> std::size_t;
    auto evict_unreferenced() -> std::size_t;
    /// Exact once concurrent lookups have returned; a snapshot while they run. Sums the hit
    /// counts of the live entries (O(entries)).
    [[nodiscard]] auto stats() const -> mr_cache_stats;
    [[nodiscard]] auto limits() const noexcept -> mr_cache_limits { return limits_; }
    /// Number of entries in the index (idle or referenced).
    [[nodiscard]] auto indexed_entries() const -> std::size_t;
    /// Verifies AVL balance and heights, key order, subtree end bounds, LRU and counters.
    /// O(n); for tests and diagnostics. Empty string when consistent, else the first problem.
    [[nodiscard]] auto check_invariants() const -> std::string;

    [[nodiscard]] auto memory_resource() const noexcept -> std::pmr::memory_resource* { return mr_; }
    [[nodiscard]] static auto page_size() noexcept -> std::size_t;
    /// The hint table's hash: the set of page tag `t` is the top bits of t * hint_multiplier.
    static constexpr std::uint64_t hint_multiplier = 0x9E37'79B9'7F4A'7C15ULL;

protected:
    /// Registers `req` into `reuse` (a node of this cache that do_deregister emptied) or, when
    /// it is null, into a new node. Called with the exclusive lock. On failure `reuse` stays
    /// empty and owned by the cache.
    virtual auto do_register(const mr_cache_request& req, mr_cache_node* reuse) -> result<mr_cache_node*> = 0;
    /// Deregisters a node's registration and resets it, keeping the node's memory (lock-free
    /// hits may still read its reference word). Called with the exclusive lock (or from shutdown).
    virtual void do_deregister(mr_cache_node* n) noexcept = 0;
    /// Frees an empty node (from shutdown only).
    virtual void do_free(mr_cache_node* n) noexcept = 0;
    /// Configuration check run before a registration (invalid_argument when misconfigured).
    [[nodiscard]] virtual auto do_check() const -> void_result = 0;
    /// Destroys every node; derived destructors call it while their registrar still exists.
    void shutdown() noexcept;
    /// Hits an entry's word keeps before they move to the cache total (1 .. drain_at); lets
    /// tests reach the batch path. Set before the first lookup.
    void set_hit_batch(std::uint64_t n) noexcept {
        drain_at_ = std::clamp<std::uint64_t>(n, 1, mr_cache_node::drain_at);
    }

private:
    using node = mr_cache_node;
    auto lookup_miss(const memory_space& space, std::uint64_t a, std::uint64_t b, mr_access_flags access)
        -> result<node*>;
    [[nodiscard]] auto lookup_slow(const void* p, std::size_t n, mr_access_flags access, bool read_only)
        -> result<mr_cache_node*>;
    /// The lock-free hit: a reference (and a hit) by CAS unless the node is retired (or idle in
    /// a bounded cache), then validation of the node against the request. The CAS synchronizes
    /// with the registration that set up this incarnation of the node, whose fields cannot
    /// change while a reference is held.
    [[nodiscard]] auto try_fast(node* e, std::uint64_t a, std::uint64_t b, mr_access_flags access) noexcept -> bool {
        auto cur = e->refs.load(std::memory_order_relaxed);
        do {
            if ((cur & node::retired_bit) != 0 || (bounded_ && node::count_of(cur) == 0)) return false;
        } while (!e->refs.compare_exchange_weak(cur, cur + node::hit_unit + 1, std::memory_order_acquire,
                                                std::memory_order_relaxed));
        note_hit(e, cur);
        if (e->host && e->start <= a && b <= e->end && (access & ~e->access).empty()) [[likely]]
            return true;
        give_back(e);
        return false;
    }
    /// Undoes a lock-free hit on a node that does not serve the request (a stale or torn hint).
    void give_back(node* e) noexcept;
    void note_hit(node* n, std::uint64_t old) noexcept {
        // Exactly one hit sees the field at drain_at_ - 1; later hits cannot reach bit 63 before
        // it moves the batch (at most 2^30 of 2^31 values).
        if (node::hits_of(old) == drain_at_ - 1) [[unlikely]]
            drain(n);
    }
    void drain(node* n) noexcept;
    void acquire_shared(node* n) noexcept;
    void remember(std::uint64_t a, node* e) noexcept;
    void grow_hints(std::size_t sets) noexcept;
    void release_bounded(node* n) noexcept;
    void destroy(node* n) noexcept;
    void destroy_retired(node* n) noexcept;
    void unindex(node* n, bool invalidation) noexcept;
    void evict_one(node* n) noexcept;
    [[nodiscard]] auto try_evict_idle(node* n) noexcept -> bool;
    void trim(std::size_t extra_entries, std::size_t extra_bytes) noexcept;
    [[nodiscard]] auto over_limits(std::size_t extra_entries, std::size_t extra_bytes) const noexcept -> bool;
    void lru_push_back(node* n) noexcept;
    void lru_unlink(node* n) noexcept;

    /// One AVL tree per memory space (kept in insertion order; host memory is always first).
    struct space_root {
        memory_space space;
        node* root;
    };
    [[nodiscard]] auto root_of(const memory_space& s) -> node*&;

    // The hint table in use (read without any lock) and every table it replaced: tables are
    // freed with the cache, as lock-free readers may still be inside an old one.
    std::pmr::memory_resource* mr_;
    std::atomic<mr_cache_hint_table*> hints_{nullptr};
    std::pmr::vector<resource_ptr<mr_cache_hint_table>> hint_tables_;
    mutable std::shared_mutex mu_;
    std::mutex lru_mu_;  // bounded caches: idle <-> active transitions (under the shared lock)
    std::pmr::vector<space_root> roots_;
    std::uint64_t page_mask_;  // page size - 1
    node* lru_head_{nullptr};  // oldest idle
    node* lru_tail_{nullptr};
    node* retired_{nullptr};  // removed from the index, still referenced
    node* free_{nullptr};     // empty nodes for reuse (see mr_cache_node)
    unsigned page_shift_;
    mr_cache_limits limits_;
    bool bounded_;
    // Hits live in the entries' words; drained_hits_ takes each full batch, retired_hits_ the
    // remainder of destroyed entries. Everything else is written under the exclusive lock.
    std::atomic<std::uint64_t> drained_hits_{0};
    std::uint64_t retired_hits_{0};
    std::uint64_t drain_at_{mr_cache_node::drain_at};
    std::uint64_t misses_{0};
    std::uint64_t registrations_{0};
    std::uint64_t evictions_{0};
    std::uint64_t invalidations_{0};
    std::size_t bytes_{0};
    std::size_t entries_{0};
    std::size_t indexed_{0};
};

template <class R>
struct mr_cache_entry final : mr_cache_node {
    typename R::region_type region{};
};

}  // namespace loom::detail
