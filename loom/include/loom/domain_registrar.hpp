// loom/domain_registrar.hpp — the registration back end of loom::mr_cache: registrations on a
// domain, bound to an endpoint where the domain asks for it.
#pragma once

#include <loom/domain.hpp>
#include <loom/error.hpp>
#include <loom/memory_region.hpp>
#include <loom/mr_cache_types.hpp>

#include <cstdint>

namespace loom {

class endpoint;

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

}  // namespace loom
