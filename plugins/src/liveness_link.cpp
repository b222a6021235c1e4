// The liveness link: an endpoint of its own for pings and pongs, on the data's domain or on
// another provider's (provider_facts::liveness_provider).
#include <loom/plugins/rail.hpp>

#include <loom/fabric_info.hpp>

namespace loom::plugins {

namespace {
/// Opens `l.ep` on `dom` with a new AV, bound to `cq`, and reads its address.
auto open_endpoint(liveness_link& l, domain& dom, completion_queue& cq, const fabric_info& info) -> void_result {
    auto av = address_vector::create(dom);
    if (!av) return std::unexpected(av.error());
    auto ep = endpoint::create(dom, info);
    if (!ep) return std::unexpected(ep.error());
    if (auto x = ep->bind_cq(cq, cq_bind::transmit | cq_bind::recv); !x) return x;
    if (auto x = ep->bind_av(*av); !x) return x;
    if (auto x = ep->enable(); !x) return x;
    auto self = ep->name();
    if (!self) return std::unexpected(self.error());
    l.av = std::move(*av);
    l.ep = std::move(*ep);
    l.self = std::move(*self);
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
    // reaches both the same way. Every call comes under the engine lock (FI_THREAD_DOMAIN), as
    // for the data's own objects; a provider that cannot offer it is asked again without.
    result<fabric_info> info = make_unexpected(errc::no_data);
    for (const auto threading : {threading_mode::domain, threading_mode::unspecified}) {
        info = query_fabric({.capabilities = capability::tagged | capability::msg,
                             .ep_type = endpoint_types::rdm,
                             .provider = provider,
                             .domain_name = n.info.domain_name(),
                             .threading = threading,
                             .addr_format = n.info.addr_format()});
        if (info) break;
    }
    if (!info) return std::unexpected(info.error());
    liveness_link l;
    auto fab = fabric::create(*info);
    if (!fab) return std::unexpected(fab.error());
    l.fab = std::move(*fab);
    auto dom = domain::create(l.fab, *info);
    if (!dom) return std::unexpected(dom.error());
    l.dom = std::move(*dom);
    // A few pings and pongs per peer check: a small queue is plenty.
    auto cq = completion_queue::create(l.dom, {.size = 256, .format = cq_format::tagged});
    if (!cq) return std::unexpected(cq.error());
    l.cq = std::move(*cq);
    if (auto x = open_endpoint(l, l.dom, l.cq, *info); !x) return std::unexpected(x.error());
    return l;
}

}  // namespace loom::plugins
