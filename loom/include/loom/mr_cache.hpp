// loom/mr_cache.hpp — a registration cache: reuse of memory registrations by range and access.
//
// A cache hands out RAII handles to registrations that contain a requested range with at least
// the requested access; misses register the page-rounded range and index it. Idle (unreferenced)
// entries are retained, optionally up to entry/byte limits with LRU eviction. See docs/mr_cache.md.
#pragma once

#include <algorithm>
#include <atomic>
#include <compare>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <loom/detail/resource_alloc.hpp>
#include <loom/domain.hpp>
#include <loom/error.hpp>
#include <loom/flags.hpp>
#include <loom/memory_region.hpp>
#include <loom/provider_traits.hpp>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace loom {

class endpoint;

// ---------------------------------------------------------------- keys, limits, statistics

/// Where a cached range lives: host memory (page-rounded virtual ranges), device memory of one
/// HMEM interface and device (exact virtual ranges), or one DMA-BUF descriptor mapped at one
/// base (exact ranges: virtual addresses when mapped, file offsets when not).
enum class memory_kind : std::uint8_t {
    host = 0,   ///< host memory; ranges are page-rounded virtual addresses
    hmem = 1,   ///< device memory of one HMEM interface and device; exact virtual ranges
    dmabuf = 2  ///< one DMA-BUF descriptor mapped at one base; exact ranges (addresses or file offsets)
};

/// The address space a range belongs to; ranges of different spaces never match each other.
struct memory_space {
    memory_kind kind{memory_kind::host};  ///< host memory, a device's, or a DMA-BUF's
    std::uint32_t iface{0};               ///< hmem, dmabuf: fi_hmem_iface
    std::uint64_t device{0};              ///< hmem, dmabuf: device id
    std::uint64_t fd_identity{0};         ///< dmabuf: the borrowed descriptor
    std::uint64_t base{0};                ///< dmabuf: where offset 0 is mapped (0: unmapped)
    /// Ordered field by field.
    friend constexpr auto operator<=>(const memory_space&, const memory_space&) noexcept = default;
};

/// A cached range: [start, end) within `space` (virtual addresses for host memory).
struct mr_cache_key {
    memory_space space{};    ///< the address space
    std::uint64_t start{0};  ///< first byte
    std::uint64_t end{0};    ///< exclusive
    /// Same space and range.
    friend constexpr auto operator==(const mr_cache_key&, const mr_cache_key&) noexcept -> bool = default;
};

/// Retention bounds. Default-constructed limits are unbounded; an explicit 0 disables idle
/// retention of that dimension (every entry is deregistered when its last handle goes).
struct mr_cache_limits {
    static constexpr std::size_t unbounded = std::numeric_limits<std::size_t>::max();  ///< no bound
    std::size_t max_entries{unbounded};           ///< idle entries retained at most
    std::size_t max_registered_bytes{unbounded};  ///< host bytes include page rounding

    /// True when either dimension is bounded.
    [[nodiscard]] constexpr auto bounded() const noexcept -> bool {
        return max_entries != unbounded || max_registered_bytes != unbounded;
    }
    /// Same bounds.
    friend constexpr auto operator==(const mr_cache_limits&, const mr_cache_limits&) noexcept -> bool = default;
};

/// Exact counters. Every lookup that passes argument checks counts as exactly one hit or miss.
/// Every registration leaves the index exactly once, as an eviction (limits, clear,
/// evict_unreferenced, zero-limit release, replacement by a wider-access registration of the
/// same range) or as an invalidation. `entries` and `registered_bytes` cover every live
/// registration, including invalidated ones still held by handles.
struct mr_cache_stats {
    std::uint64_t hits{0};            ///< lookups an indexed registration served
    std::uint64_t misses{0};          ///< lookups that needed a new registration
    std::uint64_t registrations{0};   ///< registrations made
    std::uint64_t evictions{0};       ///< registrations that left the index by eviction
    std::uint64_t invalidations{0};   ///< registrations that left the index by invalidation
    std::size_t registered_bytes{0};  ///< bytes of live registrations
    std::size_t entries{0};           ///< live registrations
    /// Same counts.
    friend constexpr auto operator==(const mr_cache_stats&, const mr_cache_stats&) noexcept -> bool = default;
};

/// What a registrar is asked to register: the (page-rounded, for host memory) range. For a
/// DMA-BUF the range is in the space's index coordinates: virtual addresses when the buffer
/// is mapped (space.base != 0), file offsets when it is not.
struct mr_cache_request {
    memory_space space{};          ///< the address space of the range
    std::span<std::byte> range{};  ///< the range to register
    mr_access_flags access{};      ///< the access it needs
};

/// A registration back end. register_range/deregister calls are serialized by the cache;
/// descriptor/key are called concurrently through handles.
template <class R>
concept mr_cache_registrar =
    std::movable<R> && std::default_initializable<typename R::region_type> && std::movable<typename R::region_type> &&
    requires(R& r, const R& cr, const mr_cache_request& req, typename R::region_type& region,
             const typename R::region_type& cregion) {
        { cr.check() } -> std::same_as<void_result>;
        { r.register_range(req) } -> std::same_as<result<typename R::region_type>>;
        { r.deregister(region) } noexcept;
        { R::descriptor(cregion) } noexcept -> std::same_as<void*>;
        { R::key(cregion) } noexcept -> std::same_as<result<std::uint64_t>>;
    };

/// Access bits a cache lookup accepts, and the subset a read-only buffer accepts.
inline constexpr mr_access_flags mr_cache_known_access =
    mr_access_flags::send | mr_access_flags::recv | mr_access_flags::read | mr_access_flags::write |
    mr_access_flags::remote_read | mr_access_flags::remote_write | mr_access_flags::collective;
/// Access bits a lookup of read-only memory accepts.
inline constexpr mr_access_flags mr_cache_read_only_access =
    mr_access_flags::send | mr_access_flags::read | mr_access_flags::remote_read;

namespace detail {

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

}  // namespace detail

template <mr_cache_registrar R>
class basic_mr_cache;

/// A reference to a cached registration. Move-only; releasing (or destroying) it returns the
/// entry to idle. Must not outlive its cache.
template <mr_cache_registrar R>
class basic_mr_handle {
public:
    /// The registration type of the registrar.
    using region_type = typename R::region_type;

    basic_mr_handle() noexcept = default;
    basic_mr_handle(const basic_mr_handle&) = delete;
    auto operator=(const basic_mr_handle&) -> basic_mr_handle& = delete;
    /// Takes over `o`'s reference; `o` is left empty.
    basic_mr_handle(basic_mr_handle&& o) noexcept
        : core_(std::exchange(o.core_, nullptr)), e_(std::exchange(o.e_, nullptr)) {}
    /// Gives this handle's reference back and takes over `o`'s.
    auto operator=(basic_mr_handle&& o) noexcept -> basic_mr_handle& {
        if (this != &o) {
            release();
            core_ = std::exchange(o.core_, nullptr);
            e_ = std::exchange(o.e_, nullptr);
        }
        return *this;
    }
    ~basic_mr_handle() { release(); }

    /// Gives the reference back now (no-op on an empty handle).
    void release() noexcept {
        // Both are set together; testing core_ as well lets GCC see that it is not null here
        // (at -O3 it otherwise warns, -Wnonnull, on paths through a moved-from handle).
        auto* core = std::exchange(core_, nullptr);
        auto* e = std::exchange(e_, nullptr);
        if (core != nullptr && e != nullptr) core->release(e);
    }
    /// True when it holds a reference.
    [[nodiscard]] auto valid() const noexcept -> bool { return e_ != nullptr; }
    /// True when it holds a reference.
    explicit operator bool() const noexcept { return valid(); }

    /// The local descriptor to pass with operations (null for an empty handle).
    [[nodiscard]] auto descriptor() const noexcept -> void* {
        return e_ != nullptr ? R::descriptor(e_->region) : nullptr;
    }
    /// The remote key; invalid_argument for an empty handle.
    [[nodiscard]] auto key() const noexcept -> result<std::uint64_t> {
        if (e_ == nullptr) return make_unexpected(errc::invalid_argument);
        return R::key(e_->region);
    }
    /// The registration (covering the whole registered, page-rounded range). Requires valid().
    [[nodiscard]] auto region() const noexcept -> const region_type& { return e_->region; }
    /// Start and length of the registered range (null/0 for an empty handle).
    [[nodiscard]] auto address() const noexcept -> std::byte* {
        // NOLINTNEXTLINE(performance-no-int-to-ptr): ranges are kept as integers (device and DMA-BUF too)
        return e_ != nullptr ? reinterpret_cast<std::byte*>(static_cast<std::uintptr_t>(e_->start)) : nullptr;
    }
    /// Bytes of the registered range.
    [[nodiscard]] auto size() const noexcept -> std::size_t {
        return e_ != nullptr ? static_cast<std::size_t>(e_->end - e_->start) : 0;
    }
    /// The access the registration grants (at least the requested).
    [[nodiscard]] auto access() const noexcept -> mr_access_flags {
        return e_ != nullptr ? e_->access : mr_access_flags{};
    }
    /// True when [p, p+n) lies inside the registered range.
    [[nodiscard]] auto contains(const void* p, std::size_t n) const noexcept -> bool {
        if (e_ == nullptr) return false;
        const auto a = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p));
        if (a + n < a) return false;
        return a >= e_->start && a + n <= e_->end;
    }
    /// contains() for a span.
    [[nodiscard]] auto contains(std::span<const std::byte> s) const noexcept -> bool {
        return contains(s.data(), s.size());
    }

private:
    friend class basic_mr_cache<R>;
    basic_mr_handle(detail::mr_cache_core* c, detail::mr_cache_entry<R>* e) noexcept : core_(c), e_(e) {}
    detail::mr_cache_core* core_{nullptr};
    detail::mr_cache_entry<R>* e_{nullptr};
};

/// A registration cache over registrar R. Movable; handles refer to the cache's shared state,
/// which stays in place when the cache object moves.
template <mr_cache_registrar R>
class basic_mr_cache {
public:
    /// The registrar type.
    using registrar_type = R;
    /// The handle type lookups return.
    using handle = basic_mr_handle<R>;

    /// The cache's own state (index, hint tables, entries) comes from `mr` (null: the default
    /// resource), which must outlive the cache.
    explicit basic_mr_cache(R registrar, mr_cache_limits limits = {}, std::pmr::memory_resource* mr = nullptr)
        : p_(detail::make_in<impl>(mr, std::move(registrar), limits, detail::resource_or_default(mr))) {}
    /// Moves the cache; handles stay valid (the shared state does not move).
    basic_mr_cache(basic_mr_cache&&) noexcept = default;
    /// Moves the cache; handles stay valid (the shared state does not move).
    auto operator=(basic_mr_cache&&) noexcept -> basic_mr_cache& = default;
    ~basic_mr_cache() = default;

    /// A handle to a registration containing `buffer` with access ⊇ `access`: a cached one
    /// (hit) or a new registration of the page-rounded range (miss). invalid_argument for an
    /// empty or wrapping buffer, empty or unknown access bits, or a misconfigured cache.
    [[nodiscard]] auto lookup(std::span<std::byte> buffer, mr_access_flags access) -> result<handle> {
        return wrap(p_->lookup_host(buffer.data(), buffer.size(), access, false));
    }
    /// Read-only memory: only send/read/remote_read access is accepted.
    [[nodiscard]] auto lookup(std::span<const std::byte> buffer, mr_access_flags access) -> result<handle> {
        return wrap(p_->lookup_host(buffer.data(), buffer.size(), access, true));
    }
    /// lookup() for a fixed-extent span.
    template <std::size_t N>
        requires(N != std::dynamic_extent)
    [[nodiscard]] auto lookup(std::span<std::byte, N> buffer, mr_access_flags access) -> result<handle> {
        return lookup(std::span<std::byte>{buffer}, access);
    }
    /// lookup() for a fixed-extent read-only span.
    template <std::size_t N>
        requires(N != std::dynamic_extent)
    [[nodiscard]] auto lookup(std::span<const std::byte, N> buffer, mr_access_flags access) -> result<handle> {
        return lookup(std::span<const std::byte>{buffer}, access);
    }

    /// Device memory of HMEM interface `iface` on `device`: a handle to a registration of
    /// exactly `buffer` (or a cached one containing it). Device ranges never match host
    /// lookups. not_supported when the domain was opened without capability::hmem.
    [[nodiscard]] auto lookup_device(std::span<std::byte> buffer, hmem_iface iface, std::uint64_t device,
                                     mr_access_flags access) -> result<handle> {
        const memory_space space{
            .kind = memory_kind::hmem, .iface = static_cast<std::uint32_t>(iface), .device = device};
        return wrap(p_->lookup_space(space, reinterpret_cast<std::uintptr_t>(buffer.data()), buffer.size(), access));
    }
    /// A DMA-BUF range of device memory on `iface`/`device` (FI_MR_DMABUF). Hits need the same
    /// descriptor and mapping base and a containing range. The descriptor stays the caller's:
    /// invalidate_dmabuf() before closing or reusing it.
    [[nodiscard]] auto lookup_dmabuf(const dmabuf_region& buffer, hmem_iface iface, std::uint64_t device,
                                     mr_access_flags access) -> result<handle> {
        if (buffer.fd < 0) return make_unexpected(errc::invalid_argument);
        const auto base = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(buffer.base_addr));
        const memory_space space{.kind = memory_kind::dmabuf,
                                 .iface = static_cast<std::uint32_t>(iface),
                                 .device = device,
                                 .fd_identity = static_cast<std::uint64_t>(buffer.fd),
                                 .base = base};
        if (base != 0 && base + buffer.offset < base) return make_unexpected(errc::invalid_argument);
        return wrap(p_->lookup_space(space, base + buffer.offset, buffer.length, access));
    }
    /// Removes the entries of DMA-BUF descriptor `fd` from the index (handles keep theirs).
    auto invalidate_dmabuf(int fd) -> std::size_t { return p_->invalidate_fd(static_cast<std::uint64_t>(fd)); }

    /// Removes every entry whose registered range overlaps [p, p+n) from the index; handles
    /// keep their registrations until released. Returns the number of entries removed.
    auto invalidate(const void* p, std::size_t n) -> std::size_t { return p_->invalidate_host(p, n); }
    /// Deregisters every unreferenced entry; referenced entries stay. Returns the number evicted.
    auto evict_unreferenced() -> std::size_t { return p_->evict_unreferenced(); }
    /// Same as evict_unreferenced(): live handles keep their entries.
    auto clear() -> std::size_t { return p_->evict_unreferenced(); }

    /// Counters since construction.
    [[nodiscard]] auto stats() const -> mr_cache_stats { return p_->stats(); }
    /// The retention bounds.
    [[nodiscard]] auto limits() const noexcept -> mr_cache_limits { return p_->limits(); }
    /// Entries in the index.
    [[nodiscard]] auto indexed_entries() const -> std::size_t { return p_->indexed_entries(); }
    /// A description of the first broken internal invariant; empty when all hold (for tests).
    [[nodiscard]] auto check_invariants() const -> std::string { return p_->check_invariants(); }
    /// The registrar.
    [[nodiscard]] auto registrar() const noexcept -> const R& { return p_->reg; }
    /// Where the cache's own state lives.
    [[nodiscard]] auto memory_resource() const noexcept -> std::pmr::memory_resource* { return p_->memory_resource(); }
    /// invalid_argument when the registrar is misconfigured (see mr_cache).
    [[nodiscard]] auto status() const -> void_result { return p_->check(); }

private:
    using entry = detail::mr_cache_entry<R>;
    struct impl final : detail::mr_cache_core {
        R reg;
        impl(R r, mr_cache_limits l, std::pmr::memory_resource* mr) : mr_cache_core(l, mr), reg(std::move(r)) {}
        impl(const impl&) = delete;
        auto operator=(const impl&) -> impl& = delete;
        ~impl() override { shutdown(); }
        [[nodiscard]] auto check() const -> void_result { return reg.check(); }

    protected:
        auto do_register(const mr_cache_request& req, detail::mr_cache_node* reuse)
            -> result<detail::mr_cache_node*> override {
            detail::resource_ptr<entry> fresh;
            if (reuse == nullptr) fresh = detail::make_in<entry>(memory_resource());
            auto r = reg.register_range(req);
            if (!r) return std::unexpected(r.error());
            auto* e = reuse != nullptr ? static_cast<entry*>(reuse) : fresh.release();
            e->region = std::move(*r);
            return e;
        }
        void do_deregister(detail::mr_cache_node* n) noexcept override {
            auto* e = static_cast<entry*>(n);
            reg.deregister(e->region);
            e->region = typename R::region_type{};
        }
        void do_free(detail::mr_cache_node* n) noexcept override {
            detail::resource_delete<entry>{memory_resource()}(static_cast<entry*>(n));
        }
        [[nodiscard]] auto do_check() const -> void_result override { return reg.check(); }
    };

    auto wrap(result<detail::mr_cache_node*> r) -> result<handle> {
        if (!r) return std::unexpected(r.error());
        return handle{p_.get(), static_cast<entry*>(*r)};
    }

    detail::resource_ptr<impl> p_;
};

// ---------------------------------------------------------------- the domain registrar

namespace detail {
/// The endpoint rules of a cache: invalid_argument when the domain is not open, when it
/// requires mr_mode_flags::endpoint and no endpoint is given, or when the endpoint is not open
/// or belongs to another domain.
[[nodiscard]] auto mr_cache_binding_check(bool domain_valid, mr_mode_flags mode, bool have_endpoint,
                                          bool endpoint_valid, bool endpoint_belongs) noexcept -> void_result;
}  // namespace detail

/// Registers with memory_region::register_memory on a domain; for domains with
/// mr_mode_flags::endpoint the registration is bound to the endpoint (fi_mr_bind) and enabled
/// (fi_mr_enable) before it is cached.
class domain_registrar {
public:
    /// The registration type.
    using region_type = memory_region;

    domain_registrar() = default;
    /// Registers in `dom`.
    explicit domain_registrar(domain& dom) noexcept : dom_(&dom) {}
    /// Registers in `dom`, bound to `ep` (for mr_mode_flags::endpoint domains).
    domain_registrar(domain& dom, endpoint& ep) noexcept : dom_(&dom), ep_(&ep) {}

    /// invalid_argument when the domain is not open, or the endpoint is missing, not open or another domain's.
    [[nodiscard]] auto check() const -> void_result;
    /// Registers `req.range` with `req.access` (host, device or DMA-BUF memory).
    [[nodiscard]] auto register_range(const mr_cache_request& req) -> result<memory_region>;
    /// Deregisters `r`.
    void deregister(memory_region& r) noexcept { (void)r.close(); }
    /// The registration's local descriptor.
    [[nodiscard]] static auto descriptor(const memory_region& r) noexcept -> void* { return r.descriptor(); }
    /// The registration's remote key.
    [[nodiscard]] static auto key(const memory_region& r) noexcept -> result<std::uint64_t> { return r.key(); }

    /// The domain it registers in.
    [[nodiscard]] auto domain_ptr() const noexcept -> domain* { return dom_; }
    /// The endpoint registrations are bound to; null for none.
    [[nodiscard]] auto endpoint_ptr() const noexcept -> endpoint* { return ep_; }

private:
    domain* dom_{nullptr};
    endpoint* ep_{nullptr};
};

/// A handle to a registration of an mr_cache.
using mr_handle = basic_mr_handle<domain_registrar>;

/// The host registration cache of a domain (and, for mr_mode_flags::endpoint domains, of one
/// endpoint). The domain and endpoint must outlive the cache; the cache must outlive its handles.
/// A cache constructed with a missing or foreign endpoint reports invalid_argument from status()
/// and from every lookup, before any registration.
class mr_cache : public basic_mr_cache<domain_registrar> {
public:
    /// The cache of `dom`'s host registrations.
    explicit mr_cache(domain& dom, mr_cache_limits limits = {}, std::pmr::memory_resource* mr = nullptr)
        : basic_mr_cache(domain_registrar{dom}, limits, mr) {}
    /// The cache of `dom`'s registrations bound to `ep` (mr_mode_flags::endpoint domains).
    mr_cache(domain& dom, endpoint& ep, mr_cache_limits limits = {}, std::pmr::memory_resource* mr = nullptr)
        : basic_mr_cache(domain_registrar{dom, ep}, limits, mr) {}
};

/// The spec's spelling of the constructors: a cache whose misconfiguration (a missing or
/// foreign endpoint) status() and every lookup report as invalid_argument. A provider whose
/// default registrations bind to endpoints (mr_mode_flags::endpoint in its traits) has no
/// overload without an endpoint; the domain's negotiated mode is still checked at run time.
template <provider_tag ProviderTag = provider::generic_tag>
    requires(!get_mr_mode<ProviderTag>().has(mr_mode_flags::endpoint))
[[nodiscard]] auto make_mr_cache(domain& dom, mr_cache_limits limits = {}, std::pmr::memory_resource* mr = nullptr)
    -> mr_cache {
    return mr_cache(dom, limits, mr);
}
/// The constructor's spelling with an endpoint.
template <provider_tag ProviderTag = provider::generic_tag>
[[nodiscard]] auto make_mr_cache(domain& dom, endpoint& ep, mr_cache_limits limits = {},
                                 std::pmr::memory_resource* mr = nullptr) -> mr_cache {
    return mr_cache(dom, ep, limits, mr);
}

}  // namespace loom
