// domain_registrar.cpp — how the registration cache registers a range with a domain (and,
// under FI_MR_ENDPOINT, binds it to an endpoint).
#include <loom/domain_registrar.hpp>
#include <loom/endpoint.hpp>

#include <rdma/fi_domain.h>

namespace loom {
namespace detail {

namespace {
[[nodiscard]] auto invalid() noexcept { return make_unexpected(errc::invalid_argument); }
}  // namespace

auto mr_cache_binding_check(bool domain_valid, mr_mode_flags mode, bool have_endpoint, bool endpoint_valid,
                            bool endpoint_belongs) noexcept -> void_result {
    if (!domain_valid) return invalid();
    if (have_endpoint) {
        if (!endpoint_valid || !endpoint_belongs) return invalid();
        return {};
    }
    if (mode.any(mr_mode_flags::endpoint)) return invalid();
    return {};
}

}  // namespace detail

auto domain_registrar::check() const -> void_result {
    const bool dom_ok = dom_ != nullptr && dom_->valid();
    const bool ep_ok = ep_ != nullptr && ep_->valid();
    return detail::mr_cache_binding_check(dom_ok, dom_ok ? dom_->get_memory_region_mode() : mr_mode_flags{},
                                          ep_ != nullptr, ep_ok, ep_ok && dom_ok && ep_->belongs_to(*dom_));
}

auto domain_registrar::register_range(const mr_cache_request& req) -> result<memory_region> {
    if (auto ok = check(); !ok) return std::unexpected(ok.error());
    result<memory_region> mr = make_unexpected(errc::not_supported);
    const memory_registration how{
        .access = req.access, .iface = static_cast<hmem_iface>(req.space.iface), .device = req.space.device};
    switch (req.space.kind) {
        case memory_kind::host: mr = memory_region::register_memory(*dom_, req.range, req.access); break;
        case memory_kind::hmem: mr = memory_region::register_memory(*dom_, req.range, how); break;
        case memory_kind::dmabuf: {
            // Mapped buffers are indexed by virtual address, unmapped ones by file offset.
            const auto at = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(req.range.data()));
            const dmabuf_region buf{.fd = static_cast<int>(req.space.fd_identity),
                                    .offset = at - req.space.base,
                                    .length = req.range.size(),
                                    // NOLINTNEXTLINE(performance-no-int-to-ptr): kept as an integer
                                    .base_addr = reinterpret_cast<void*>(static_cast<std::uintptr_t>(req.space.base))};
            mr = memory_region::register_dmabuf(*dom_, buf, how);
            break;
        }
    }
    if (!mr) return std::unexpected(mr.error());
    if (ep_ != nullptr && dom_->get_memory_region_mode().any(mr_mode_flags::endpoint)) {
        // FI_MR_ENDPOINT: the registration is usable only once bound to the endpoint and
        // enabled. On failure `mr` closes the registration: nothing is cached.
        if (const int rc = ::fi_mr_bind(mr->native(), &ep_->native()->fid, 0); rc != 0) return native_unexpected(rc);
        if (const int rc = ::fi_mr_enable(mr->native()); rc != 0) return native_unexpected(rc);
    }
    return mr;
}

}  // namespace loom
