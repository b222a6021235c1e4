// loom/memory_region.hpp — memory registration (fi_mr) and exported remote descriptors.
#pragma once

#include <loom/detail/child_link.hpp>
#include <loom/detail/fid.hpp>
#include <loom/domain.hpp>
#include <loom/endpoint.hpp>

#include <rdma/fi_domain.h>

#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <span>
#include <vector>

namespace loom {

class counter;
struct raw_remote_memory;

/// Where registered memory lives (libfabric's fi_hmem_iface).
enum class hmem_iface : std::uint32_t {
    system = 0,    ///< FI_HMEM_SYSTEM: host memory from the operating system (malloc, mmap, ...)
    cuda = 1,      ///< FI_HMEM_CUDA: NVIDIA CUDA device or managed memory
    rocr = 2,      ///< FI_HMEM_ROCR: AMD ROCr (ROCm) memory
    ze = 3,        ///< FI_HMEM_ZE: Intel oneAPI Level Zero memory
    neuron = 4,    ///< FI_HMEM_NEURON: AWS Neuron (Trainium) device memory
    synapseai = 5  ///< FI_HMEM_SYNAPSEAI: Habana Gaudi memory through SynapseAI
};

/// A DMA-BUF to register (FI_MR_DMABUF). The descriptor stays the caller's: keep it open while
/// the registration lives. [offset, offset + length) of the buffer is registered; base_addr is
/// the page-aligned address where the buffer's offset 0 is mapped (nullptr when it is not
/// mapped; providers that need an address then refuse the registration).
struct dmabuf_region {
    int fd{-1};                ///< the DMA-BUF's file descriptor
    std::uint64_t offset{0};   ///< first byte registered, from the buffer's start
    std::size_t length{0};     ///< bytes registered
    void* base_addr{nullptr};  ///< where the buffer's offset 0 is mapped; null: unmapped
};

/// Full registration request.
struct memory_registration {
    mr_access_flags access{};        ///< access the registration grants
    std::uint64_t offset{0};         ///< requested offset for non-virtual-address domains
    std::uint64_t requested_key{0};  ///< 0: loom picks a unique key when the provider does not
    bool rma_events{false};          ///< FI_RMA_EVENT: count remote accesses via a bound counter
    /// Device memory: the interface and the device id (CUDA/ROCr ordinal, fi_hmem_ze_device()
    /// for Level Zero). Anything but `system` needs a domain opened with capability::hmem
    /// (not_supported otherwise, before the provider is called).
    hmem_iface iface{hmem_iface::system};
    std::uint64_t device{0};  ///< device id on `iface`
};

/// A memory registration (fid_mr): local memory the provider may access, with the descriptor and key that operations
/// and peers need.
class memory_region {
public:
    memory_region() = default;
    /// Registers `buffer` with `access` in `dom` (fi_mr_regattr).
    [[nodiscard]] static auto register_memory(domain& dom, std::span<std::byte> buffer, mr_access_flags access,
                                              std::pmr::memory_resource* mr = nullptr) -> result<memory_region>;
    /// Read-only memory: only send/read/remote_read access is accepted.
    [[nodiscard]] static auto register_memory(domain& dom, std::span<const std::byte> buffer, mr_access_flags access,
                                              std::pmr::memory_resource* mr = nullptr) -> result<memory_region>;
    /// Fixed-extent spans (std::span{array}) of writable or read-only bytes.
    template <std::size_t N>
        requires(N != std::dynamic_extent)
    [[nodiscard]] static auto register_memory(domain& dom, std::span<std::byte, N> buffer, mr_access_flags access,
                                              std::pmr::memory_resource* mr = nullptr) -> result<memory_region> {
        return register_memory(dom, std::span<std::byte>{buffer}, access, mr);
    }
    /// The same for a fixed-extent read-only span.
    template <std::size_t N>
        requires(N != std::dynamic_extent)
    [[nodiscard]] static auto register_memory(domain& dom, std::span<const std::byte, N> buffer, mr_access_flags access,
                                              std::pmr::memory_resource* mr = nullptr) -> result<memory_region> {
        return register_memory(dom, std::span<const std::byte>{buffer}, access, mr);
    }
    /// Registers `buffer` as `request` describes (access, offset, key, RMA events, device memory).
    [[nodiscard]] static auto register_memory(domain& dom, std::span<std::byte> buffer,
                                              const memory_registration& request,
                                              std::pmr::memory_resource* mr = nullptr) -> result<memory_region>;

    /// Registers a DMA-BUF (FI_MR_DMABUF) of memory on `request.iface`/`request.device`. The
    /// region's address() is base_addr + offset (null for an unmapped buffer). invalid_argument
    /// for a negative fd, an empty or wrapping range; not_supported as for register_memory.
    [[nodiscard]] static auto register_dmabuf(domain& dom, const dmabuf_region& buffer,
                                              const memory_registration& request,
                                              std::pmr::memory_resource* mr = nullptr) -> result<memory_region>;

    /// The local descriptor to pass with operations (may be null for a valid registration).
    [[nodiscard]] auto descriptor() const noexcept -> void* { return desc_; }
    /// The resource the factory was given (a registration allocates no state of its own).
    [[nodiscard]] auto memory_resource() const noexcept -> std::pmr::memory_resource* { return mr_; }
    /// The remote protection key; not_supported for raw-key domains, again when the provider
    /// cannot report it yet, invalid_argument for an empty region.
    [[nodiscard]] auto key() const noexcept -> result<std::uint64_t>;
    /// The first registered byte (null for an unmapped DMA-BUF).
    [[nodiscard]] auto address() const noexcept -> std::byte* { return base_; }
    /// Bytes registered.
    [[nodiscard]] auto size() const noexcept -> std::size_t { return length_; }
    /// The access it was registered with.
    [[nodiscard]] auto access() const noexcept -> mr_access_flags { return access_; }
    /// The domain's registration modes, as they applied to it.
    [[nodiscard]] auto mode() const noexcept -> mr_mode_flags { return mode_; }
    /// True when [p, p+n) lies inside the registration (false for wrapping ranges and for an
    /// empty or closed region).
    [[nodiscard]] auto contains(const void* p, std::size_t n) const noexcept -> bool {
        return h_.get() != nullptr && in_range(p, n);
    }
    /// contains() for a span.
    [[nodiscard]] auto contains(std::span<const std::byte> s) const noexcept -> bool {
        return contains(s.data(), s.size());
    }
    /// True when the registration belongs to the endpoint's domain.
    [[nodiscard]] auto usable_with(const endpoint& ep) const noexcept -> bool {
        return h_.get() != nullptr && ep.domain_native() == domain_;
    }
    /// contains() and usable_with() together: what every operation taking a registration checks
    /// of its buffer (inline: RMA and atomics run it per call).
    [[nodiscard]] auto covers(const endpoint& ep, const void* p, std::size_t n) const noexcept -> bool {
        return usable_with(ep) && in_range(p, n);
    }
    /// covers() for a span.
    [[nodiscard]] auto covers(const endpoint& ep, std::span<const std::byte> s) const noexcept -> bool {
        return covers(ep, s.data(), s.size());
    }

    /// The raw key and mapping base (fi_mr_raw_attr) for domains using mr_mode_flags::raw, to
    /// be mapped by the initiator with mapped_remote_memory::map. `addr` is the RMA address
    /// (virtual address with FI_MR_VIRT_ADDR, otherwise 0), distinct from the native
    /// `base_addr`. invalid_argument for an empty or closed region; not_supported for
    /// domains with scalar keys (use key() / remote_memory::from_mr there).
    /// The key's storage comes from `mr` (null: the default resource).
    [[nodiscard]] auto export_raw(std::pmr::memory_resource* mr = nullptr) const -> result<raw_remote_memory>;

    // ------------------------------------------------------------ RMA events / enablement
    // Order: register (with .rma_events for counter bindings), bind(counter) / bind(endpoint),
    // then enable(). No binding after enable(). enable() calls fi_mr_enable where the domain
    // creates the registration disabled (mr_mode rma_event with .rma_events, or mr_mode
    // endpoint); elsewhere it only closes the binding phase. Bound counters and endpoints
    // must outlive the registration.

    /// Counts remote writes and modifying atomics into this registration on `c`
    /// (fi_mr_bind with FI_REMOTE_WRITE). invalid_argument for a closed region, a counter of
    /// another domain, a registration without .rma_events or without remote_write access;
    /// bad_state after enable(). Endpoints accessing the region need capability::rma_event.
    auto bind(counter& c) noexcept -> void_result;
    /// Associates the registration with an endpoint (fi_mr_bind, flags 0), as domains with
    /// mr_mode_flags::endpoint require. invalid_argument for another domain's endpoint or
    /// (with .rma_events) an endpoint without capability::rma_event; bad_state after enable().
    auto bind(endpoint& ep) noexcept -> void_result;
    /// Ends the binding phase (fi_mr_enable where required). invalid_argument for a closed
    /// region; idempotent.
    auto enable() noexcept -> void_result;
    /// True when the registration was requested with .rma_events.
    [[nodiscard]] auto rma_events() const noexcept -> bool { return rma_events_; }
    /// True when the domain created the registration disabled: enable() must run before use.
    [[nodiscard]] auto enable_required() const noexcept -> bool { return needs_enable_; }
    /// True after enable().
    [[nodiscard]] auto enabled() const noexcept -> bool { return enabled_; }

    /// The native fid_mr; null once closed.
    [[nodiscard]] auto native() const noexcept -> ::fid_mr* { return h_.get(); }
    /// The native domain it was registered in.
    [[nodiscard]] auto domain_native() const noexcept -> ::fid_domain* { return domain_; }
    /// True while registered.
    [[nodiscard]] auto valid() const noexcept -> bool { return static_cast<bool>(h_); }
    /// Deregisters now; on failure it stays registered and the call can be retried.
    auto close() noexcept -> void_result { return h_.close(); }

private:
    /// [p, p+n) inside [base, base+length). One subtraction covers both ends: below the base the
    /// offset wraps to a huge value, and offset + n <= length cannot wrap (a registration does
    /// not reach the top of the address space). Two compares: it runs on every RMA and atomic.
    [[nodiscard]] auto in_range(const void* p, std::size_t n) const noexcept -> bool {
        const auto offset = reinterpret_cast<std::uintptr_t>(p) - reinterpret_cast<std::uintptr_t>(base_);
        return n <= length_ && offset <= length_ - n;
    }
    /// Fills the fields every registration shares (access, offset, key, device), registers
    /// `attr` and wraps the result; [base, base+length) is what address()/size() report.
    [[nodiscard]] static auto register_native(domain& dom, ::fi_mr_attr& attr, std::uint64_t flags, std::byte* base,
                                              std::size_t length, const memory_registration& request,
                                              std::pmr::memory_resource* mr) -> result<memory_region>;
    // What every operation given this registration reads (covers(), descriptor()) side by side,
    // the handle's pointer last: in one cache line unless the object's placement splits them.
    void* desc_{nullptr};
    std::byte* base_{nullptr};
    std::size_t length_{0};
    ::fid_domain* domain_{nullptr};
    detail::unique_fid<::fid_mr> h_;
    std::uint64_t offset_{0};
    mr_access_flags access_{};
    mr_mode_flags mode_{};
    std::pmr::memory_resource* mr_{nullptr};
    bool rma_events_{false};
    bool needs_enable_{false};
    bool enabled_{false};
};

/// What a peer needs to reach a registration with RMA: address (virtual or offset), key, length.
struct remote_memory {
    std::uint64_t addr{0};  ///< address the peer uses: virtual address or offset
    std::uint64_t key{0};   ///< remote protection key
    std::size_t length{0};  ///< bytes reachable

    /// Exports a local registration (virtual address when the domain uses FI_MR_VIRT_ADDR,
    /// otherwise its offset).
    [[nodiscard]] static auto from_mr(const memory_region& mr) noexcept -> result<remote_memory>;
    /// [offset, offset+len) of this region; invalid_argument outside it or when its start or
    /// its exclusive end address is not representable. Inline: initiators call it per operation.
    [[nodiscard]] auto subregion(std::size_t offset, std::size_t len) const noexcept -> result<remote_memory> {
        const std::uint64_t start = addr + offset;
        if (offset > length || len > length - offset || start < addr || len > UINT64_MAX - start) [[unlikely]]
            return make_unexpected(errc::invalid_argument);
        return remote_memory{start, key, len};
    }
    /// True when [addr, addr + n) lies in this region without wrapping.
    [[nodiscard]] auto holds(std::size_t n) const noexcept -> bool {
        return n <= length && (n == 0 || addr + (n - 1) >= addr);
    }
    /// The tail from offset on.
    [[nodiscard]] auto offset_by(std::size_t offset) const noexcept -> result<remote_memory> {
        if (offset > length) [[unlikely]]
            return make_unexpected(errc::invalid_argument);
        return subregion(offset, length - offset);
    }
    /// Field-wise equality.
    friend auto operator==(const remote_memory&, const remote_memory&) noexcept -> bool = default;
};

/// What a peer needs to map a raw-key registration (mr_mode_flags::raw): exchange every
/// field, and every key byte, through the application's own protocol.
struct raw_remote_memory {
    std::uint64_t base_addr{0};          ///< the native mapping base (fi_mr_raw_attr)
    std::uint64_t addr{0};               ///< the RMA address of the region's first byte
    std::size_t length{0};               ///< bytes reachable
    std::pmr::vector<std::uint8_t> key;  ///< the raw protection key
    /// Field-wise equality, key bytes included.
    friend auto operator==(const raw_remote_memory&, const raw_remote_memory&) -> bool = default;
};

/// A peer's raw key mapped into this (initiating) domain (fi_mr_map_raw). Untested on
/// hardware: no provider available to loom's tests uses FI_MR_RAW.
///
/// Counts as an open child of the domain (domain close is busy) until close() or
/// destruction, which unmap the key (fi_mr_unmap_key). A failed close() keeps the mapping
/// for a retry. Move construction transfers the mapping; move assignment exchanges the two
/// mappings (neither is closed). Use remote() only with endpoints of the initiating domain;
/// copying the remote_memory does not keep the mapping alive.
class mapped_remote_memory {
public:
    mapped_remote_memory() = default;
    /// invalid_argument for an invalid domain, an empty key, a zero length, an address range
    /// that wraps, or a key longer than the domain's mr_key_size; not_supported for domains
    /// without mr_mode_flags::raw; otherwise the provider's fi_mr_map_raw result. The
    /// mapping keeps its copy of the key in storage from `mr` (null: the default resource).
    [[nodiscard]] static auto map(domain& dom, const raw_remote_memory& raw, std::pmr::memory_resource* mr = nullptr)
        -> result<mapped_remote_memory>;

    mapped_remote_memory(const mapped_remote_memory&) = delete;
    auto operator=(const mapped_remote_memory&) -> mapped_remote_memory& = delete;
    /// Takes over `o`'s mapping; `o` is left unmapped.
    mapped_remote_memory(mapped_remote_memory&& o) noexcept;
    /// Exchanges the two mappings (neither is closed).
    auto operator=(mapped_remote_memory&& o) noexcept -> mapped_remote_memory&;
    ~mapped_remote_memory();

    /// {addr, mapped key, length} for RMA and atomics; bad_state when not mapped.
    [[nodiscard]] auto remote() const noexcept -> result<remote_memory>;
    /// The metadata it was mapped from (raw bytes kept).
    [[nodiscard]] auto raw() const noexcept -> const raw_remote_memory& { return raw_; }
    /// True while mapped.
    [[nodiscard]] auto valid() const noexcept -> bool { return domain_ != nullptr; }
    /// The native domain it is mapped into.
    [[nodiscard]] auto domain_native() const noexcept -> ::fid_domain* { return domain_; }
    /// Where its copy of the key lives.
    [[nodiscard]] auto memory_resource() const noexcept -> std::pmr::memory_resource* {
        return raw_.key.get_allocator().resource();
    }
    /// Unmaps the key; no-op when not mapped. A failure keeps the mapping.
    auto close() noexcept -> void_result;
    /// Exchanges the two mappings.
    void swap(mapped_remote_memory& o) noexcept;

private:
    explicit mapped_remote_memory(raw_remote_memory&& raw) noexcept : raw_(std::move(raw)) {}
    raw_remote_memory raw_;
    ::fid_domain* domain_{nullptr};
    std::uint64_t key_{0};
    detail::child_link link_;
};

}  // namespace loom
