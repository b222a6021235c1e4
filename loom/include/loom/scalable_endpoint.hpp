// loom/scalable_endpoint.hpp — scalable endpoints (fi_scalable_ep) and their transmit and
// receive contexts.
#pragma once

#include <rdma/fi_endpoint.h>

#include <cstddef>
#include <loom/address.hpp>
#include <loom/detail/fid.hpp>
#include <loom/detail/resource_alloc.hpp>
#include <loom/domain.hpp>
#include <loom/endpoint.hpp>
#include <loom/fabric_info.hpp>
#include <memory>
#include <memory_resource>
#include <optional>
#include <span>
#include <vector>

namespace loom {

class address_vector;

/// Context counts of a scalable endpoint; 0 keeps the fabric_info's ep_attr value.
struct scalable_endpoint_attr {
    std::size_t tx_contexts{0};  ///< transmit contexts
    std::size_t rx_contexts{0};  ///< receive contexts
};

/// Attributes of one transmit or receive context; defaults inherit the scalable endpoint's
/// (fabric_info) attributes. Providers accept only a subset of those.
struct context_attr {
    std::optional<op_flag> op_flags{};  ///< default operation flags of the context
    std::size_t size{0};                ///< queue depth; 0: inherited
    capability caps{};                  ///< empty: inherited
};

namespace detail {
struct sep_registry;
}

/// One address, many independent transmit and receive contexts. Contexts come back as
/// ordinary loom::endpoint objects (endpoint::adopt_native): bind a completion queue or
/// counters to each with endpoint::bind_cq / bind_counter, then enable it with
/// enable_context() (endpoint::enable() is not used for contexts: their address vector is
/// the scalable endpoint's). Receive contexts are addressed by peers with
/// address_vector::receive_context_address (capability::named_rx_ctx).
///
/// Lifetime: contexts count as open children of the scalable endpoint, so close() is
/// refused with busy (without calling fi_close) until every context is closed; the scalable
/// endpoint counts as a child of its domain. The domain wrapper passed to create() must
/// outlive the scalable endpoint and stay at its address: contexts are created from it.
class scalable_endpoint {
public:
    scalable_endpoint() = default;
    /// fi_scalable_ep with `info` (ep_attr context counts overridden by `attr`). Counts above
    /// the domain's max_ep_tx_ctx / max_ep_rx_ctx, or FI_SHARED_CONTEXT, are invalid_argument
    /// before the provider is called.
    [[nodiscard]] static auto create(domain& dom, const fabric_info& info, const scalable_endpoint_attr& attr = {},
                                     std::pmr::memory_resource* mr = nullptr) -> result<scalable_endpoint>;

    /// Binds the address vector every context uses (RDM and datagram types need one before
    /// contexts are enabled). Same domain; before enable(); once.
    auto bind_av(address_vector& av) noexcept -> void_result;
    /// Transmit context `index` (0 <= index < tx_context_count() when that count is known).
    /// busy while a context with that index is open. The context records `mr` (null: this
    /// endpoint's resource) as its memory_resource().
    [[nodiscard]] auto tx_context(int index, const context_attr& attr = {}, std::pmr::memory_resource* mr = nullptr)
        -> result<endpoint>;
    /// Receive context `index`; messages sent to receive_context_address(peer, index) land here.
    [[nodiscard]] auto rx_context(int index, const context_attr& attr = {}, std::pmr::memory_resource* mr = nullptr)
        -> result<endpoint>;
    /// Enables one of this endpoint's contexts (fi_enable on the context) after its CQ and
    /// counter bindings; marks the loom::endpoint enabled. invalid_argument for an endpoint
    /// that is not an open context of this scalable endpoint; no_address_vector for an RDM or
    /// datagram endpoint without bind_av().
    auto enable_context(endpoint& ctx) noexcept -> void_result;
    /// Enables the scalable endpoint itself (fi_enable). Providers may enable contexts that
    /// exist at that time too; enable_context() is still needed to mark them enabled in loom.
    auto enable() noexcept -> void_result;
    /// The address peers insert to reach this endpoint (all contexts share it).
    [[nodiscard]] auto name() const -> result<address>;

    /// Transmit contexts it was opened with (0: the provider's choice, unknown here).
    [[nodiscard]] auto tx_context_count() const noexcept -> std::size_t { return tx_count_; }
    /// Receive contexts it was opened with (0: the provider's choice, unknown here).
    [[nodiscard]] auto rx_context_count() const noexcept -> std::size_t { return rx_count_; }
    /// Contexts created and not yet closed.
    [[nodiscard]] auto open_contexts() const noexcept -> long;
    /// The capabilities it was opened with.
    [[nodiscard]] auto capabilities() const noexcept -> capability { return info_.capabilities(); }
    /// Its type.
    [[nodiscard]] auto type() const noexcept -> endpoint_types { return info_.ep_type(); }
    /// The native address format.
    [[nodiscard]] auto addr_format() const noexcept -> address_format { return info_.addr_format(); }
    /// Its copy of the discovery result, with the context counts it was opened with.
    [[nodiscard]] auto info() const noexcept -> const fabric_info& { return info_; }
    /// True once enable() succeeded.
    [[nodiscard]] auto enabled() const noexcept -> bool { return enabled_; }
    /// True once bind_av() succeeded.
    [[nodiscard]] auto has_address_vector() const noexcept -> bool { return has_av_; }
    /// The native fid_ep; null once closed.
    [[nodiscard]] auto native() const noexcept -> ::fid_ep* { return h_.get(); }
    /// The native domain it was opened in.
    [[nodiscard]] auto domain_native() const noexcept -> ::fid_domain* { return domain_; }
    /// True while it is open.
    [[nodiscard]] auto valid() const noexcept -> bool { return static_cast<bool>(h_); }
    /// The resource create() was given (the default one when none was): the per-context
    /// open counts come from it.
    [[nodiscard]] auto memory_resource() const noexcept -> std::pmr::memory_resource* { return mr_; }
    /// busy (handle kept, fi_close not called) while contexts are open.
    /// busy while any context is open (fi_close is not called then).
    auto close() noexcept -> void_result {
        if (open_contexts() > 0) return make_unexpected(errc::busy);
        auto r = h_.close();
        if (r) enabled_ = false;
        return r;
    }

private:
    [[nodiscard]] auto make_context(bool transmit, int index, const context_attr& attr, std::pmr::memory_resource* mr)
        -> result<endpoint>;
    [[nodiscard]] auto needs_av() const noexcept -> bool;

    detail::unique_fid<::fid_ep> h_;
    fabric_info info_;
    domain* dom_{nullptr};
    ::fid_domain* domain_{nullptr};
    // One open-count per context index: a context holds a link to its slot until it closes.
    std::pmr::memory_resource* mr_{std::pmr::get_default_resource()};
    struct context_slots {
        std::pmr::vector<detail::child_count> tx, rx;
    };
    detail::resource_ptr<context_slots> slots_;  // from mr_; held by pointer so moves stay noexcept
    [[nodiscard]] auto tx_slots() const noexcept -> std::span<const detail::child_count> {
        return slots_ ? std::span{slots_->tx} : std::span<const detail::child_count>{};
    }
    [[nodiscard]] auto rx_slots() const noexcept -> std::span<const detail::child_count> {
        return slots_ ? std::span{slots_->rx} : std::span<const detail::child_count>{};
    }
    std::size_t tx_count_{0};
    std::size_t rx_count_{0};
    bool has_av_{false};
    bool enabled_{false};
};

}  // namespace loom
