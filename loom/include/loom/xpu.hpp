// loom/xpu.hpp — XPU contexts (libfabric 2.7): a domain's context for one accelerator, and the
// export of endpoints, completion queues and counters for device-side use.
//
// Present whatever libfabric headers loom is built with; usable when the running libfabric is
// 2.7 or newer and its provider implements XPU contexts. Elsewhere every call checks its
// arguments and then reports not_supported. Untested on hardware: no provider available to
// loom's tests implements XPU contexts.
#pragma once

#include <loom/completion_queue.hpp>
#include <loom/counter.hpp>
#include <loom/detail/child_link.hpp>
#include <loom/detail/fid.hpp>
#include <loom/domain.hpp>
#include <loom/endpoint.hpp>
#include <loom/error.hpp>
#include <loom/fabric_info.hpp>
#include <loom/memory_region.hpp>

#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <span>

namespace loom {

/// What an XPU context can export, and the sizes its device-side code needs.
struct xpu_context_attr {
    bool exports_endpoints{false};          ///< endpoints can be exported to device code
    bool exports_completion_queues{false};  ///< completion queues can be exported
    bool exports_counters{false};           ///< counters can be exported
    std::size_t av_addr_size{0};            ///< bytes of an address-vector entry as the device sees it
    std::size_t mr_desc_size{0};            ///< bytes of a registration's device-side descriptor
};

/// A device-side handle (libfabric's struct fid_xpu), filled by the provider: pass it to
/// device code, which dispatches on provider_id. It does not own the exported object.
struct xpu_handle {
    std::uint32_t fclass{0};            ///< the exported object's class (FI_CLASS_*)
    std::uint32_t provider_id{0};       ///< which provider's device code handles it
    std::uint64_t provider_context{0};  ///< the provider's data for its device code
};

/// True when the running libfabric is 2.7 or newer (XPU contexts exist in its interface).
[[nodiscard]] auto xpu_supported() noexcept -> bool;

namespace detail {
/// The layout of libfabric 2.7's struct fid_xpu_ctx: a fid, then its operations.
struct xpu_ctx_fid {
    ::fid fid;
    void* ops;
};
}  // namespace detail

/// A domain's context for one accelerator (fi_xpu_ctx). Counts as an open child of its domain
/// until closed. Endpoints, completion queues and counters to export must be of that domain.
class xpu_context {
public:
    xpu_context() = default;
    /// A context for device `device` of `iface` (cuda, rocr, ze, neuron or synapseai; the
    /// ordinal or libfabric device id as for registrations). invalid_argument for an invalid
    /// domain, `system` or an unknown interface; not_supported when the running libfabric or
    /// the domain's provider has no XPU contexts; otherwise the provider's answer.
    [[nodiscard]] static auto create(domain& dom, hmem_iface iface, std::uint64_t device) -> result<xpu_context>;

    /// The context's capabilities and sizes (fi_xpu_ctx_query); bad_state when closed.
    [[nodiscard]] auto query() const -> result<xpu_context_attr>;

    /// Device-side handles for an enabled endpoint, a completion queue or a counter of this
    /// context's domain (created for XPU use). invalid_argument for an invalid object or one of
    /// another domain; bad_state when this context is closed; not_supported when the provider
    /// cannot export the object.
    [[nodiscard]] auto export_endpoint(const endpoint& ep) const -> result<xpu_handle>;
    /// Device-side handle for a completion queue (see export_endpoint).
    [[nodiscard]] auto export_completion_queue(const completion_queue& cq) const -> result<xpu_handle>;
    /// Device-side handle for a counter (see export_endpoint).
    [[nodiscard]] auto export_counter(const counter& cntr) const -> result<xpu_handle>;

    /// An endpoint of `info` opened for device-side use through this context (FI_XPU; the
    /// context in its endpoint attributes). invalid_argument for an incomplete `info` or a
    /// domain other than this context's; bad_state when this context is closed; not_supported
    /// before libfabric 2.7. Completion queues and counters take the context in cq_attr::xpu and
    /// counter_attr::xpu.
    [[nodiscard]] auto create_endpoint(domain& dom, const fabric_info& info,
                                       std::pmr::memory_resource* mr = nullptr) const -> result<endpoint>;

    /// A registration's device-side descriptor (fi_mr_get_xpu_desc) written into `out`;
    /// returns its length. invalid_argument for a closed region, one of another domain or an
    /// empty `out`; no_space (with nothing written) when `out` is shorter than the descriptor.
    [[nodiscard]] auto memory_descriptor(const memory_region& region, std::span<std::byte> out) const
        -> result<std::size_t>;

    /// True while the context is open.
    [[nodiscard]] auto valid() const noexcept -> bool { return static_cast<bool>(h_); }
    /// The native context's fid; null once closed.
    [[nodiscard]] auto native() const noexcept -> ::fid* { return h_.fid(); }
    /// The accelerator interface.
    [[nodiscard]] auto iface() const noexcept -> hmem_iface { return iface_; }
    /// The device on that interface.
    [[nodiscard]] auto device() const noexcept -> std::uint64_t { return device_; }
    /// The native domain it belongs to.
    [[nodiscard]] auto domain_native() const noexcept -> ::fid_domain* { return domain_; }
    /// Closes the context; a failure keeps it for a retry.
    auto close() noexcept -> void_result { return h_.close(); }

private:
    detail::unique_fid<detail::xpu_ctx_fid> h_;
    ::fid_domain* domain_{nullptr};
    hmem_iface iface_{hmem_iface::system};
    std::uint64_t device_{0};
};

}  // namespace loom
