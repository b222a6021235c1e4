// loom/mr_cache.hpp — a registration cache: reuse of memory registrations by range and access.
//
// A cache hands out RAII handles to registrations that contain a requested range with at least
// the requested access; misses register the page-rounded range and index it. Idle (unreferenced)
// entries are retained, optionally up to entry/byte limits with LRU eviction. See docs/mr_cache.md.
#pragma once

#include <loom/detail/mr_cache_core.hpp>
#include <loom/domain.hpp>
#include <loom/domain_registrar.hpp>
#include <loom/error.hpp>
#include <loom/flags.hpp>
#include <loom/memory_region.hpp>
#include <loom/mr_cache_types.hpp>
#include <loom/provider_traits.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <span>
#include <utility>

namespace loom {

class endpoint;

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
