#include "loom/shared_rx_context.hpp"
#include "loom/provider_facts.hpp"

#include <rdma/fi_endpoint.h>

#include <limits>

namespace loom {

auto shared_rx_context::create(domain& dom, const fabric_info& info, std::pmr::memory_resource* mr)
    -> result<shared_rx_context> {
    if (!dom.valid() || !info.valid()) return make_unexpected(errc::invalid_argument);
    const ::fi_info* fi = info.native();
    if (fi->rx_attr == nullptr) return make_unexpected(errc::invalid_argument);
    ::fi_rx_attr attr = *fi->rx_attr;
    ::fid_ep* srx = nullptr;
    if (const int rc = ::fi_srx_context(dom.native(), &attr, &srx, nullptr); rc != 0) return native_unexpected(rc);
    shared_rx_context out;
    out.h_ = detail::unique_fid<::fid_ep>{srx};
    out.h_.set_parent(dom.child_tracker());
    out.h_.track_children(mr);
    out.domain_ = dom.native();
    // The receive side's capabilities (FI_MSG/FI_TAGGED, FI_DIRECTED_RECV) when the entry
    // lists them, the entry's primary capabilities otherwise.
    out.caps_ = capability{attr.caps != 0 ? attr.caps : fi->caps};
    out.rx_flags_ = op_flag{attr.op_flags};
    out.rx_iov_limit_ = attr.iov_limit;
    out.needs_context_ = ((fi->mode | attr.mode) & (FI_CONTEXT | FI_CONTEXT2)) != 0;
    out.cancel_crashes_ = provider_facts_for(info).srx_cancel_crashes;
    // Gates for receives (no size limit applies to receive buffers); nothing sends on an SRX.
    out.gates_.open(srx, out.caps_ & (capability::msg | capability::tagged), std::numeric_limits<std::size_t>::max(),
                    out.needs_context_);
    return out;
}

auto shared_rx_context::cancel(context_ptr<void> ctx) noexcept -> void_result {
    if (!h_) return make_unexpected(errc::bad_state);
    if (!ctx) return make_unexpected(errc::invalid_argument);
    if (cancel_crashes_) return make_unexpected(errc::not_supported);
    return check_native(::fi_cancel(&h_.get()->fid, ctx.get()));
}

}  // namespace loom
