// The liveness link: an endpoint of its own for pings and pongs, on the data's domain or on
// another provider's (provider_facts::liveness_provider).
#include <loom/plugins/device_registry.hpp>
#include <loom/plugins/rail.hpp>

namespace loom::plugins {

auto open_liveness_link(domain& dom, completion_queue& cq, const nic& n) -> result<liveness_link> {
    auto b = open_bound_endpoint(dom, cq, n.info);
    if (!b) return std::unexpected(b.error());
    return liveness_link{.end = std::move(*b)};
}

auto open_liveness_link(std::string_view provider, const nic& n) -> result<liveness_link> {
    // Tagged messages only, on the interface the data uses, in its address format: the peer
    // reaches both the same way.
    auto all = query_for_engine({.capabilities = capability::tagged | capability::msg,
                                 .provider = provider,
                                 .domain_name = n.info.domain_name(),
                                 .addr_format = n.info.addr_format()});
    if (!all) return std::unexpected(all.error());
    if (all->empty()) return make_unexpected(errc::no_data);
    const fabric_info info = *all->begin();
    // A few pings and pongs per peer check: a small queue is plenty.
    auto q = open_queue_domain(info, 256);
    if (!q) return std::unexpected(q.error());
    liveness_link l{.own = std::move(*q)};
    auto b = open_bound_endpoint(l.own.dom, l.own.cq, info);
    if (!b) return std::unexpected(b.error());
    l.end = std::move(*b);
    return l;
}

}  // namespace loom::plugins
