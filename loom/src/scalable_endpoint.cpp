// Scalable endpoints: creation, address-vector binding, context creation and tracking.
#include "loom/scalable_endpoint.hpp"

#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "loom/address_vector.hpp"
#include "loom/detail/resource_alloc.hpp"

namespace loom {

auto scalable_endpoint::create(domain& dom, const fabric_info& info, const scalable_endpoint_attr& attr,
                               std::pmr::memory_resource* mr) -> result<scalable_endpoint> {
    if (!dom.valid() || !info.valid()) return make_unexpected(errc::invalid_argument);
    const ::fi_info* fi = info.native();
    if (fi->ep_attr == nullptr || fi->tx_attr == nullptr || fi->rx_attr == nullptr)
        return make_unexpected(errc::invalid_argument);
    if (auto ok = validate(static_cast<endpoint_types>(fi->ep_attr->type)); !ok) return std::unexpected(ok.error());
    const std::size_t tx = attr.tx_contexts != 0 ? attr.tx_contexts : fi->ep_attr->tx_ctx_cnt;
    const std::size_t rx = attr.rx_contexts != 0 ? attr.rx_contexts : fi->ep_attr->rx_ctx_cnt;
    if (tx == FI_SHARED_CONTEXT || rx == FI_SHARED_CONTEXT) return make_unexpected(errc::invalid_argument);
    if (const auto* da = fi->domain_attr) {
        if ((da->max_ep_tx_ctx != 0 && tx > da->max_ep_tx_ctx) || (da->max_ep_rx_ctx != 0 && rx > da->max_ep_rx_ctx))
            return make_unexpected(errc::invalid_argument);
    }
    // Indices are ints in the native interface.
    if (tx > static_cast<std::size_t>(INT32_MAX) || rx > static_cast<std::size_t>(INT32_MAX))
        return make_unexpected(errc::invalid_argument);

    auto copy = fabric_info::copy_native(fi, mr);
    if (!copy) return std::unexpected(copy.error());
    auto* native_info = const_cast<::fi_info*>(copy->native());  // our own duplicate
    native_info->ep_attr->tx_ctx_cnt = tx;
    native_info->ep_attr->rx_ctx_cnt = rx;

    ::fid_ep* sep = nullptr;
    if (const int rc = ::fi_scalable_ep(dom.native(), native_info, &sep, nullptr); rc != 0)
        return native_unexpected(rc);
    scalable_endpoint out;
    out.h_ = detail::unique_fid<::fid_ep>{sep};
    out.h_.set_parent(dom.child_tracker());
    out.info_ = std::move(*copy);
    out.dom_ = &dom;
    out.domain_ = dom.native();
    out.mr_ = detail::resource_or_default(mr);
    out.slots_ = detail::make_in<context_slots>(out.mr_, context_slots{std::pmr::vector<detail::child_count>(out.mr_),
                                                                       std::pmr::vector<detail::child_count>(out.mr_)});
    out.slots_->tx.reserve(tx);
    out.slots_->rx.reserve(rx);
    for (std::size_t i = 0; i < tx; ++i) out.slots_->tx.push_back(detail::make_child_count(out.mr_));
    for (std::size_t i = 0; i < rx; ++i) out.slots_->rx.push_back(detail::make_child_count(out.mr_));
    out.tx_count_ = tx;
    out.rx_count_ = rx;
    return out;
}

auto scalable_endpoint::open_contexts() const noexcept -> long {
    long n = 0;
    for (const auto& c : tx_slots()) n += c->load(std::memory_order_relaxed);
    for (const auto& c : rx_slots()) n += c->load(std::memory_order_relaxed);
    return n;
}

auto scalable_endpoint::needs_av() const noexcept -> bool {
    const auto t = type();
    return t == endpoint_types::rdm || t == endpoint_types::dgram;
}

auto scalable_endpoint::bind_av(address_vector& av) noexcept -> void_result {
    if (!h_ || !av.valid()) return make_unexpected(errc::invalid_argument);
    if (enabled_ || has_av_) return make_unexpected(errc::bad_state);
    if (av.domain_native() != domain_) return make_unexpected(errc::invalid_argument);
    if (type() == endpoint_types::msg) return make_unexpected(errc::invalid_argument);
    auto r = check_native(::fi_scalable_ep_bind(h_.get(), &av.native()->fid, 0));
    if (r) has_av_ = true;
    return r;
}

auto scalable_endpoint::tx_context(int index, const context_attr& attr, std::pmr::memory_resource* mr)
    -> result<endpoint> {
    return make_context(true, index, attr, mr);
}

auto scalable_endpoint::rx_context(int index, const context_attr& attr, std::pmr::memory_resource* mr)
    -> result<endpoint> {
    return make_context(false, index, attr, mr);
}

auto scalable_endpoint::make_context(bool transmit, int index, const context_attr& attr, std::pmr::memory_resource* mr)
    -> result<endpoint> {
    if (!h_) return make_unexpected(errc::bad_state);
    if (dom_ == nullptr || !dom_->valid() || dom_->native() != domain_) return make_unexpected(errc::bad_state);
    const std::size_t count = transmit ? tx_count_ : rx_count_;
    if (index < 0 || (count != 0 && static_cast<std::size_t>(index) >= count))
        return make_unexpected(errc::invalid_argument);
    const ::fi_info* fi = info_.native();
    if (!attr.caps.empty() && !(attr.caps & ~capability{fi->caps}).empty())
        return make_unexpected(errc::invalid_argument);  // not a subset of the endpoint's
    const bool custom = attr.op_flags.has_value() || attr.size != 0 || !attr.caps.empty();

    // The native attributes the context is opened with, and the view loom adopts it with:
    // the endpoint's entry with this direction's attributes only.
    ::fi_tx_attr tx_attr = *fi->tx_attr;
    ::fi_rx_attr rx_attr = *fi->rx_attr;
    if (attr.op_flags) (transmit ? tx_attr.op_flags : rx_attr.op_flags) = attr.op_flags->get();
    if (attr.size != 0) (transmit ? tx_attr.size : rx_attr.size) = attr.size;
    if (!attr.caps.empty()) (transmit ? tx_attr.caps : rx_attr.caps) = attr.caps.get();

    const auto slots = transmit ? tx_slots() : rx_slots();
    if (static_cast<std::size_t>(index) >= slots.size()) return make_unexpected(errc::invalid_argument);
    const auto& slot = slots[static_cast<std::size_t>(index)];
    if (slot->load(std::memory_order_relaxed) > 0) return make_unexpected(errc::busy);
    ::fid_ep* ctx = nullptr;
    const int rc = transmit ? ::fi_tx_context(h_.get(), index, custom ? &tx_attr : nullptr, &ctx, nullptr)
                            : ::fi_rx_context(h_.get(), index, custom ? &rx_attr : nullptr, &ctx, nullptr);
    if (rc != 0) return native_unexpected(rc);
    ::fi_info view = *fi;
    view.next = nullptr;
    view.tx_attr = transmit ? &tx_attr : nullptr;
    view.rx_attr = transmit ? nullptr : &rx_attr;
    if (!attr.caps.empty()) view.caps = attr.caps.get();
    return endpoint::adopt_native(ctx, view, *dom_, detail::child_link{slot}, has_av_, mr != nullptr ? mr : mr_);
}

auto scalable_endpoint::enable_context(endpoint& ctx) noexcept -> void_result {
    if (!h_) return make_unexpected(errc::bad_state);
    const auto owned = [&](std::span<const detail::child_count> slots) {
        return std::ranges::any_of(slots, [&](const auto& c) { return c.get() == ctx.owner(); });
    };
    if (!ctx.valid() || ctx.owner() == nullptr || !(owned(tx_slots()) || owned(rx_slots())))
        return make_unexpected(errc::invalid_argument);
    if (ctx.enabled()) return {};
    if (needs_av() && !has_av_) return make_unexpected(errc::no_address_vector);
    auto r = check_native(::fi_enable(ctx.native()));
    if (r) ctx.mark_enabled();
    return r;
}

auto scalable_endpoint::enable() noexcept -> void_result {
    if (!h_) return make_unexpected(errc::invalid_argument);
    if (enabled_) return {};
    if (needs_av() && !has_av_) return make_unexpected(errc::no_address_vector);
    auto r = check_native(::fi_enable(h_.get()));
    if (r) enabled_ = true;
    return r;
}

auto scalable_endpoint::name() const -> result<address> {
    if (!h_) return make_unexpected(errc::bad_state);
    return detail::native_name(&h_.get()->fid, addr_format());
}

}  // namespace loom
