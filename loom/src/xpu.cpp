#include "loom/xpu.hpp"

#include "loom/detail/resource_alloc.hpp"
#include "xpu_native.hpp"

#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include <cstring>

namespace loom {
namespace {

// libfabric 2.7's XPU interface, declared from its published layouts so that this file builds
// against older headers too. Each operation is a member appended to an existing operations
// table; a provider's table holds it when the table's `size` reaches past it. With 2.7
// headers the member's offset comes from the header itself.
struct native_xpu_attr {
    ::fi_hmem_iface iface;
    std::uint64_t device;
    void* ops;  // struct fi_xpu_ops*: null, libfabric's own allocation routines
};
struct native_xpu_ctx_attr {
    std::uint64_t caps;
    std::size_t av_addr_size;
    std::size_t mr_desc_size;
};
struct native_xpu_ctx_ops {
    std::size_t size;
    int (*query)(detail::xpu_ctx_fid* ctx, native_xpu_ctx_attr* attr);
};
struct native_fid_xpu {
    std::uint32_t fclass;
    std::uint32_t prov_id;
    std::uint64_t prov_ctx;
};
constexpr std::uint64_t xpu_cap_endpoint = 1ULL << 0;
constexpr std::uint64_t xpu_cap_cq = 1ULL << 1;
constexpr std::uint64_t xpu_cap_counter = 1ULL << 2;

using domain_xpu_ctx_fn = int (*)(::fid_domain*, native_xpu_attr*, detail::xpu_ctx_fid**, void*);
using ep_export_fn = int (*)(::fid_ep*, std::uint64_t, native_fid_xpu*);
using cq_export_fn = int (*)(::fid_cq*, std::uint64_t, native_fid_xpu*);
using cntr_export_fn = int (*)(::fid_cntr*, std::uint64_t, native_fid_xpu*);

constexpr std::uint64_t native_xpu_flag = 1ULL << 44;  // FI_XPU (libfabric 2.7)

#if defined(FI_MR_XPU_DESC)  // libfabric >= 2.7 headers
constexpr std::size_t domain_xpu_offset = offsetof(::fi_ops_domain, xpu_ctx);
constexpr std::size_t ep_export_offset = offsetof(::fi_ops_ep, export_xpu);
constexpr std::size_t cq_export_offset = offsetof(::fi_ops_cq, export_xpu);
constexpr std::size_t cntr_export_offset = offsetof(::fi_ops_cntr, export_xpu);
#else  // appended after the last member these headers know
constexpr std::size_t domain_xpu_offset = sizeof(::fi_ops_domain);
constexpr std::size_t ep_export_offset = sizeof(::fi_ops_ep);
constexpr std::size_t cq_export_offset = sizeof(::fi_ops_cq);
constexpr std::size_t cntr_export_offset = sizeof(::fi_ops_cntr);
#endif

/// The appended operation at `offset` of a provider's table, or null when the table (whose
/// first member is its size) is too short or the provider leaves it empty.
template <class Fn>
auto appended_op(const void* ops, std::size_t offset) noexcept -> Fn {
    if (ops == nullptr || !xpu_supported()) return nullptr;
    std::size_t size = 0;
    std::memcpy(&size, ops, sizeof size);
    if (size < offset + sizeof(Fn)) return nullptr;
    Fn fn = nullptr;
    std::memcpy(static_cast<void*>(&fn), static_cast<const std::byte*>(ops) + offset, sizeof fn);
    return fn;
}

auto known_device_iface(hmem_iface iface) noexcept -> bool {
    return iface == hmem_iface::cuda || iface == hmem_iface::rocr || iface == hmem_iface::ze ||
           iface == hmem_iface::neuron || iface == hmem_iface::synapseai;
}

auto to_handle(const native_fid_xpu& h) noexcept -> xpu_handle { return {h.fclass, h.prov_id, h.prov_ctx}; }

template <class Fn, class Native>
auto export_with(Fn fn, Native* object) -> result<xpu_handle> {
    if (fn == nullptr) return make_unexpected(errc::not_supported);
    native_fid_xpu out{};
    if (const int rc = fn(object, 0, &out); rc != 0) return native_unexpected(rc);
    return to_handle(out);
}

/// Writes the context into the member libfabric 2.7 appends to `attr` (an attribute structure
/// of these headers, `appended_at` its size under older headers). The caller has checked that
/// the running libfabric is 2.7, whose allocations and readers know the member.
template <class Attr>
struct with_xpu_member {
    Attr base;
    void* xpu_ctx;
};

/// 0 when `ctx` may serve objects of `dom`, else the FI_E* code to refuse with.
auto usable_for(const domain& dom, const xpu_context& ctx) noexcept -> int {
    if (!dom.valid() || !ctx.valid() || ctx.domain_native() != dom.native()) return -FI_EINVAL;
    if (!xpu_supported()) return -FI_EOPNOTSUPP;
    return 0;
}

}  // namespace

namespace {
/// `open` (fi_cq_open or fi_cntr_open) with `attr` extended by FI_XPU and the context.
template <class Attr, class Fid, class Open>
auto open_with_xpu(domain& dom, const Attr& attr, const xpu_context& ctx, Fid** out, Open open) -> int {
    if (const int rc = usable_for(dom, ctx)) return rc;
#if defined(FI_MR_XPU_DESC)
    Attr a = attr;
    a.flags |= FI_XPU;
    a.xpu_ctx = reinterpret_cast<::fid_xpu_ctx*>(ctx.native());
    return open(dom.native(), &a, out, nullptr);
#else
    with_xpu_member<Attr> a{attr, ctx.native()};
    a.base.flags |= native_xpu_flag;
    return open(dom.native(), &a.base, out, nullptr);
#endif
}
}  // namespace

auto detail::open_xpu_cq(domain& dom, const ::fi_cq_attr& attr, const xpu_context& ctx, ::fid_cq** out) -> int {
    return open_with_xpu(dom, attr, ctx, out, [](auto... a) { return ::fi_cq_open(a...); });
}

auto detail::open_xpu_counter(domain& dom, const ::fi_cntr_attr& attr, const xpu_context& ctx, ::fid_cntr** out)
    -> int {
    return open_with_xpu(dom, attr, ctx, out, [](auto... a) { return ::fi_cntr_open(a...); });
}

auto xpu_supported() noexcept -> bool { return ::fi_version() >= FI_VERSION(2, 7); }

auto xpu_context::create(domain& dom, hmem_iface iface, std::uint64_t device) -> result<xpu_context> {
    if (!dom.valid() || !known_device_iface(iface)) return make_unexpected(errc::invalid_argument);
    const auto fn = appended_op<domain_xpu_ctx_fn>(dom.native()->ops, domain_xpu_offset);
    if (fn == nullptr) return make_unexpected(errc::not_supported);
    native_xpu_attr attr{static_cast<::fi_hmem_iface>(iface), device, nullptr};
    detail::xpu_ctx_fid* ctx = nullptr;
    if (const int rc = fn(dom.native(), &attr, &ctx, nullptr); rc != 0) return native_unexpected(rc);
    xpu_context out;
    out.h_ = detail::unique_fid<detail::xpu_ctx_fid>{ctx};
    out.h_.set_parent(dom.child_tracker());
    out.domain_ = dom.native();
    out.iface_ = iface;
    out.device_ = device;
    return out;
}

auto xpu_context::query() const -> result<xpu_context_attr> {
    if (!h_) return make_unexpected(errc::bad_state);
    const auto* ops = static_cast<const native_xpu_ctx_ops*>(h_.get()->ops);
    if (ops == nullptr || ops->size < sizeof(native_xpu_ctx_ops) || ops->query == nullptr)
        return make_unexpected(errc::not_supported);
    native_xpu_ctx_attr attr{};
    if (const int rc = ops->query(h_.get(), &attr); rc != 0) return native_unexpected(rc);
    return xpu_context_attr{(attr.caps & xpu_cap_endpoint) != 0, (attr.caps & xpu_cap_cq) != 0,
                            (attr.caps & xpu_cap_counter) != 0, attr.av_addr_size, attr.mr_desc_size};
}

auto xpu_context::export_endpoint(const endpoint& ep) const -> result<xpu_handle> {
    if (!ep.valid() || (h_ && ep.domain_native() != domain_)) return make_unexpected(errc::invalid_argument);
    if (!h_) return make_unexpected(errc::bad_state);
    return export_with(appended_op<ep_export_fn>(ep.native()->ops, ep_export_offset), ep.native());
}

auto xpu_context::export_completion_queue(const completion_queue& cq) const -> result<xpu_handle> {
    if (!cq.valid() || (h_ && cq.domain_native() != domain_)) return make_unexpected(errc::invalid_argument);
    if (!h_) return make_unexpected(errc::bad_state);
    return export_with(appended_op<cq_export_fn>(cq.native()->ops, cq_export_offset), cq.native());
}

auto xpu_context::export_counter(const counter& cntr) const -> result<xpu_handle> {
    if (!cntr.valid() || (h_ && cntr.domain_native() != domain_)) return make_unexpected(errc::invalid_argument);
    if (!h_) return make_unexpected(errc::bad_state);
    return export_with(appended_op<cntr_export_fn>(cntr.native()->ops, cntr_export_offset), cntr.native());
}

auto xpu_context::create_endpoint(domain& dom, const fabric_info& info, std::pmr::memory_resource* mr) const
    -> result<endpoint> {
    if (!info.valid() || info.native()->ep_attr == nullptr || info.native()->tx_attr == nullptr ||
        info.native()->rx_attr == nullptr)
        return make_unexpected(errc::invalid_argument);
    if (!h_) return make_unexpected(errc::bad_state);
    if (const int rc = usable_for(dom, *this)) return native_unexpected(rc);
    auto copy = fabric_info::copy_native(info.native(), mr);  // the runtime's own layout
    if (!copy) return std::unexpected(copy.error());
    auto* fi = const_cast<::fi_info*>(copy->native());
#if defined(FI_MR_XPU_DESC)
    fi->ep_attr->xpu_ctx = reinterpret_cast<::fid_xpu_ctx*>(native());
#else
    void* ctx = native();
    std::memcpy(reinterpret_cast<std::byte*>(fi->ep_attr) + sizeof(::fi_ep_attr), static_cast<const void*>(&ctx),
                sizeof ctx);
#endif
    ::fid_ep* ep = nullptr;
    if (const int rc = ::fi_endpoint2(dom.native(), fi, &ep, native_xpu_flag, nullptr); rc != 0)
        return native_unexpected(rc);
    return endpoint::adopt_native(ep, *fi, dom, detail::child_link{}, false, detail::resource_or_default(mr));
}

auto xpu_context::memory_descriptor(const memory_region& region, std::span<std::byte> out) const
    -> result<std::size_t> {
    if (!region.valid() || out.empty() || (h_ && region.domain_native() != domain_))
        return make_unexpected(errc::invalid_argument);
    if (!h_) return make_unexpected(errc::bad_state);
#if defined(FI_MR_XPU_DESC)
    if (!xpu_supported()) return make_unexpected(errc::not_supported);
    std::size_t len = out.size();
    const int rc =
        ::fi_mr_get_xpu_desc(region.native(), out.data(), &len, 0, reinterpret_cast<::fid_xpu_ctx*>(h_.get()));
    if (rc == -FI_ETOOSMALL) return make_unexpected(errc::no_space);
    if (rc != 0) return native_unexpected(rc);
    return len;
#else
    // The control command's number is known only to 2.7 headers.
    return make_unexpected(errc::not_supported);
#endif
}

}  // namespace loom
