// loom/mr_cache_types.hpp — what a registration cache is keyed by, bounded by and reports, and
// what a registration back end (mr_cache_registrar) provides.
#pragma once

#include <loom/error.hpp>
#include <loom/flags.hpp>

#include <compare>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>

namespace loom {

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

}  // namespace loom
