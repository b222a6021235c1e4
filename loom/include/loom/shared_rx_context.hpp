// loom/shared_rx_context.hpp — shared receive contexts (fi_srx_context).
#pragma once

#include <rdma/fi_endpoint.h>
#include <sys/uio.h>

#include <cstddef>
#include <loom/context.hpp>
#include <loom/detail/fid.hpp>
#include <loom/domain.hpp>
#include <loom/endpoint.hpp>
#include <memory_resource>
#include <span>

namespace loom {

/// One receive queue shared by several endpoints of a domain. Bind it to each endpoint with
/// ep.bind_srx(srx) before enabling them, then post receives to it with the receive_target
/// helpers (loom::recv, recvv, tagged_recv, tagged_recvv, msg::recvmsg, msg::tagged_recvmsg).
/// A receive completes on the CQ (and counters) of whichever bound endpoint received the
/// message; nothing is bound to the SRX itself.
///
/// Close order: bound endpoints, then the SRX, then the domain. close() is refused with busy
/// (without calling fi_close) while a bound endpoint is open.
class shared_rx_context {
public:
    shared_rx_context() = default;
    /// fi_srx_context with `info`'s receive attributes. invalid_argument for an invalid domain
    /// or an entry without receive attributes; providers without shared receive contexts
    /// report their own error (for example invalid_argument or not_implemented).
    [[nodiscard]] static auto create(domain& dom, const fabric_info& info, std::pmr::memory_resource* mr = nullptr)
        -> result<shared_rx_context>;

    /// Receive IOV bound (rx); tx and rma are 0.
    [[nodiscard]] auto iov_limits() const noexcept -> loom::iov_limits { return {0, rx_iov_limit_, 0}; }
    /// The receive capabilities of the entry it was opened with.
    [[nodiscard]] auto capabilities() const noexcept -> capability { return caps_; }
    /// The receive defaults that operation_defaults::inherit extends.
    [[nodiscard]] auto rx_op_flags() const noexcept -> op_flag { return rx_flags_; }
    /// True when every receive needs a context (the provider's mode asks for one).
    [[nodiscard]] auto context_required() const noexcept -> bool { return needs_context_; }
    /// Requests cancellation of a receive posted with `ctx`; the storage stays borrowed until
    /// the receive retires. Where the canceled completion goes is provider-specific (see
    /// docs/srx_claims_raw_keys.md). not_supported on native tcp, whose fi_cancel on an SRX
    /// dereferences a CQ that is never set for SRX receives (libfabric 2.1 crashes).
    auto cancel(context_ptr<void> ctx) noexcept -> void_result;
    /// Bound endpoints that are still open.
    [[nodiscard]] auto open_endpoints() const noexcept -> long { return h_.open_children(); }
    /// The count that bound endpoints join while they are open.
    [[nodiscard]] auto child_tracker() const noexcept -> const detail::child_count& { return h_.children(); }
    /// The native SRX (an fid_ep); null once closed.
    [[nodiscard]] auto native() const noexcept -> ::fid_ep* { return h_.get(); }
    /// The native domain it was opened in.
    [[nodiscard]] auto domain_native() const noexcept -> ::fid_domain* { return domain_; }
    /// True while it is open.
    [[nodiscard]] auto valid() const noexcept -> bool { return static_cast<bool>(h_); }
    /// busy while bound endpoints are open; a failed close keeps the handle for a retry.
    auto close() noexcept -> void_result {
        auto r = h_.close();
        if (r) gates_.shut();
        return r;
    }
    /// The native object receives of `family` go through (see detail::op_gates).
    [[nodiscard]] auto receive_gate(capability family) const noexcept -> ::fid_ep* { return gates_.recv(family); }

    // ------------------------------------------------------------ pre-submission checks
    // The same checks endpoints use (detail::check_receive); 0 or a positive FI_E* code.
    /// Checks a receive before the provider sees it: open, capability, context.
    [[nodiscard]] auto check_rx(capability family, fabric_addr src, context_ptr<void> ctx) const noexcept -> int {
        return detail::check_receive(valid(), caps_, needs_context_, family, src, ctx);
    }
    /// Checks a scattered receive (descriptor count and iovec bound too).
    [[nodiscard]] auto check_rx_iov(capability family, std::span<const ::iovec> iov, std::span<void* const> desc,
                                    fabric_addr src, context_ptr<void> ctx) const noexcept -> int {
        return detail::check_receive_iov(valid(), caps_, needs_context_, rx_iov_limit_, family, iov, desc, src, ctx);
    }

private:
    detail::unique_fid<::fid_ep> h_;
    detail::op_gates gates_{};  // receive gates only: an SRX has no sends
    ::fid_domain* domain_{nullptr};
    capability caps_{};
    op_flag rx_flags_{};
    std::size_t rx_iov_limit_{0};
    bool needs_context_{false};
    bool cancel_crashes_{false};  // native tcp: xnet_srx_cancel reports to a null CQ
};

static_assert(receive_target<shared_rx_context>);

}  // namespace loom
