// A rail's objects: a provider's fabric, domain and queue, an endpoint bound to them, and the
// registration caches on top.
#include <loom/plugins/rail.hpp>

#include <loom/plugins/config.hpp>

#include <algorithm>
#include <memory>

namespace loom::plugins {

auto open_queue_domain(const fabric_info& info, std::size_t cq_size) -> result<queue_domain> {
    queue_domain q;
    auto fab = fabric::create(info);
    if (!fab) return std::unexpected(fab.error());
    q.fab = std::move(*fab);
    auto dom = domain::create(q.fab, info);
    if (!dom) return std::unexpected(dom.error());
    q.dom = std::move(*dom);
    auto cq = completion_queue::create(q.dom, {.size = cq_size, .format = cq_format::tagged});
    if (!cq) return std::unexpected(cq.error());
    q.cq = std::move(*cq);
    return q;
}

auto open_bound_endpoint(domain& dom, completion_queue& cq, const fabric_info& info) -> result<bound_endpoint> {
    bound_endpoint b;
    auto av = address_vector::create(dom);
    if (!av) return std::unexpected(av.error());
    b.av = std::move(*av);
    auto ep = endpoint::create(dom, info);
    if (!ep) return std::unexpected(ep.error());
    b.ep = std::move(*ep);
    if (auto x = b.ep.bind_cq(cq, cq_bind::transmit | cq_bind::recv); !x) return std::unexpected(x.error());
    if (auto x = b.ep.bind_av(b.av); !x) return std::unexpected(x.error());
    if (auto x = b.ep.enable(); !x) return std::unexpected(x.error());
    auto self = b.ep.name();
    if (!self) return std::unexpected(self.error());
    b.self = std::move(*self);
    return b;
}

auto open_rail(const nic& n, const config& cfg) -> result<std::unique_ptr<rail>> {
    auto r = std::make_unique<rail>();
    r->n = n;
    auto q = open_queue_domain(n.info, cfg.cq_size);
    if (!q) return std::unexpected(q.error());
    r->fab = std::move(q->fab);
    r->dom = std::move(q->dom);
    r->cq = std::move(q->cq);
    auto b = open_bound_endpoint(r->dom, r->cq, n.info);
    if (!b) return std::unexpected(b.error());
    r->av = std::move(b->av);
    r->ep = std::move(b->ep);
    r->self = std::move(b->self);
    // Idle registrations are kept only where a freed and reused buffer cannot meet an old pin.
    mr_cache_limits limits{};
    limits.max_entries = idle_registrations_kept(cfg, r->dom.get_memory_region_mode().has(mr_mode_flags::allocated));
    const bool per_endpoint = r->dom.get_memory_region_mode().has(mr_mode_flags::endpoint);
    r->cache =
        std::make_unique<mr_cache>(per_endpoint ? make_mr_cache(r->dom, r->ep, limits) : make_mr_cache(r->dom, limits));
    if (auto s = r->cache->status(); !s) return std::unexpected(s.error());
    // Device memory is not retained: a freed and reallocated device buffer must not hit a stale
    // registration, and hosts that register device memory keep their own caches above us.
    const mr_cache_limits none{.max_entries = 0, .max_registered_bytes = 0};
    r->dev_cache =
        std::make_unique<mr_cache>(per_endpoint ? make_mr_cache(r->dom, r->ep, none) : make_mr_cache(r->dom, none));
    if (auto s = r->dev_cache->status(); !s) return std::unexpected(s.error());
    r->virt_addr = r->dom.get_memory_region_mode().has(mr_mode_flags::virt_addr);
    const std::size_t max_msg = r->ep.max_msg_size() != 0 ? r->ep.max_msg_size() : (std::size_t{1} << 30);
    r->max_write = std::min<std::size_t>(max_msg, std::size_t{1} << 30);
    return r;
}

}  // namespace loom::plugins
