// The liveness link: an endpoint of its own for pings and pongs, on the data's domain or on
// another provider's (provider_facts::liveness_provider).
#include <loom/plugins/device_registry.hpp>
#include <loom/plugins/rail.hpp>

namespace loom::plugins {

namespace {
/// Opens `l`'s endpoint on `dom`, completing on `cq`.
auto open_endpoint(liveness_link& l, domain& dom, completion_queue& cq, const fabric_info& info) -> void_result {
    auto b = open_bound_endpoint(dom, cq, info);
    if (!b) return std::unexpected(b.error());
    l.av = std::move(b->av);
    l.ep = std::move(b->ep);
    l.self = std::move(b->self);
    return {};
}
}  // namespace

auto open_liveness_link(domain& dom, completion_queue& cq, const nic& n) -> result<liveness_link> {
    liveness_link l;
    if (auto x = open_endpoint(l, dom, cq, n.info); !x) return std::unexpected(x.error());
    return l;
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
    liveness_link l;
    l.fab = std::move(q->fab);
    l.dom = std::move(q->dom);
    l.cq = std::move(q->cq);
    if (auto x = open_endpoint(l, l.dom, l.cq, info); !x) return std::unexpected(x.error());
    return l;
}

}  // namespace loom::plugins
