#include <loom/plugins/device_registry.hpp>
#include <loom/plugins/engine.hpp>
#include <loom/plugins/log.hpp>
#include <loom/plugins/wire.hpp>

#include <loom/endpoint.hpp>
#include <loom/gpu/cuda.hpp>
#include <loom/provider_facts.hpp>

#include <rdma/fabric.h>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>

namespace loom::plugins {

auto this_host_id() noexcept -> std::uint64_t {
    std::string id;
    std::ifstream f("/proc/sys/kernel/random/boot_id");
    std::getline(f, id);
    char host[256] = {};
    (void)::gethostname(host, sizeof(host) - 1);
    id += host;
    return fnv1a(std::as_bytes(std::span{id.data(), id.size()})) |
           (std::uint64_t{fnv1a(std::as_bytes(std::span{host, std::strlen(host)}))} << 32);
}

namespace {

const auto full_caps = capability::tagged | capability::msg | capability::rma | capability::read | capability::write |
                       capability::remote_read | capability::remote_write;

auto describe(const fabric_info& info, std::string name, bool rma, const config& cfg, std::size_t index) -> nic {
    nic n;
    n.info = info;
    n.name = std::move(name);
    n.provider = std::string(info.provider_name());
    n.rma = rma;
    n.topo = describe_nic(n.name);
    if (auto ep = info.get_endpoint_attr()) n.max_msg_size = ep->max_msg_size;
    const auto facts = provider_facts_for(n.provider);
    n.eager_max = cfg.eager_max.value_or(facts.eager_max);
    n.speed_mbps = n.topo.speed_mbps > 0 ? n.topo.speed_mbps : facts.assumed_speed_mbps;
    const std::string key = n.provider + "/" + n.name;
    n.guid = (std::uint64_t{fnv1a(std::as_bytes(std::span{key.data(), key.size()}))} << 32) | index;
    return n;
}

/// One NIC per domain of `prov` offering `caps` (RMA or not), filtered by cfg.iface; IPv4
/// entries preferred over IPv6 ones of the same domain.
auto nics_of(std::string_view prov, bool rma, const config& cfg) -> std::vector<nic> {
    // FI_HMEM only where device memory can exist: a GPU runtime loads (or LOOM_HMEM=1).
    const bool want_hmem =
        cfg.hmem == tristate::on || (cfg.hmem == tristate::automatic && gpu::cuda_driver::instance());
    const auto caps = rma ? full_caps : capability::tagged | capability::msg;
    // With RMA, native atomics too where the provider has them (the endpoint manager's
    // one-sided atomics); asked for first, dropped when the provider refuses them.
    std::vector<capability> tries;
    for (const bool hmem : {true, false}) {
        if (hmem && !(want_hmem && rma)) continue;
        const auto base = hmem ? caps | capability::hmem : caps;
        if (rma) tries.emplace_back(base | capability::atomic);
        tries.emplace_back(base);
    }
    result<provider_range> all = make_unexpected(errc::no_data);
    for (const auto c : tries)
        if (all = query_for_engine({.capabilities = c, .provider = prov}); all && !all->empty()) break;
    if (!all || all->empty()) return {};
    const auto ifaces = split_list(cfg.iface);
    std::vector<nic> out;
    for (const auto& info : *all) {
        // The rendezvous needs 8 bytes of immediate data (sizes and completion ids).
        const auto dom = info.get_domain_attr();
        if (rma && !(dom && dom->cq_data_size >= 8)) continue;
        // A host-local provider (shm) is one device, named after the provider.
        std::string name(provider_facts_for(info).host_local ? info.provider_name() : info.domain_name());
        if (!ifaces.empty() && std::ranges::find(ifaces, name) == ifaces.end()) continue;
        auto same = std::ranges::find_if(out, [&](const nic& n) { return n.name == name; });
        if (same != out.end()) {
            if (info.addr_format() != address_format::sockaddr_in6 &&
                same->info.addr_format() == address_format::sockaddr_in6)
                same->info = info;
            continue;
        }
        out.push_back(describe(info, std::move(name), rma, cfg, out.size()));
    }
    // Loopback is a device only when asked for by name or when it is all there is.
    if (ifaces.empty() && out.size() > 1) std::erase_if(out, [](const nic& n) { return n.name == "lo"; });
    return out;
}

}  // namespace

auto query_for_engine(fabric_hints hints) -> result<provider_range> {
    // FI_THREAD_DOMAIN: every call into an engine's objects is made under its lock, so the
    // provider may drop its own locks; FI_PROGRESS_CONTROL_UNIFIED says the same of control
    // calls (AV inserts, registrations, closes), which lets the completion queue drop the mutex
    // around its endpoint list.
    hints.ep_type = endpoint_types::rdm;
    hints.control_progress = progress_mode::control_unified;
    result<provider_range> r = make_unexpected(errc::no_data);
    for (const auto threading : {threading_mode::domain, threading_mode::unspecified}) {
        hints.threading = threading;
        if (r = query_all(hints); r && !r->empty()) break;
    }
    return r;
}

auto discover_nics(const config& cfg) -> result<std::vector<nic>> {
    std::vector<std::string> candidates;
    if (!cfg.provider.empty())
        candidates.push_back(cfg.provider);
    else
        for (auto p : ranked_providers()) candidates.emplace_back(p);
    // Ranked by what a provider does here, not by its name alone: every provider that offers
    // RMA with 8 bytes of immediate data (the rendezvous, the flush, one-sided operations)
    // comes before any that does not.
    // (psm3 built without its hardware runs over TCP sockets with tagged messages only, and
    // would otherwise take the place of native tcp.)
    for (const bool rma : {true, false})
        for (const auto& prov : candidates)
            if (auto out = nics_of(prov, rma, cfg); !out.empty()) return out;
    return std::vector<nic>{};
}

auto supports_flush_reads(const nic& n) noexcept -> bool {
    return n.rma && !endpoint::quirks_for(n.info).broken_self_insert;
}

auto device_memory_support_of(const nic& n) -> device_memory_support {
    const ::fi_info* info = n.info.native();
    if (info == nullptr || (info->caps & FI_HMEM) == 0) return {};
    auto cuda = gpu::cuda_driver::instance();
    if (!cuda || (*cuda)->device_count() < 1) return {};
    if (!supports_flush_reads(n)) return {};  // device memory needs the flush's read-back
    bool all_dmabuf = true;
    for (int d = 0; d < (*cuda)->device_count(); ++d) all_dmabuf = all_dmabuf && (*cuda)->dmabuf_supported(d);
    // DMA-BUF only where the provider hands registrations to hardware: the utility providers
    // need the mapping, which a DMA-BUF of device memory does not give them.
    return {.cuda = true, .dmabuf = all_dmabuf && provider_facts_for(n.provider).hardware_registrations};
}

// ---------------------------------------------------------------- registry
auto device_registry::discover(const config& cfg) -> result<device_registry> {
    auto nics = discover_nics(cfg);
    if (!nics) return std::unexpected(nics.error());
    device_registry r;
    r.cfg_ = cfg;
    r.nics_ = std::move(*nics);
    r.engines_.resize(r.nics_.size());
    return r;
}

device_registry::device_registry() noexcept = default;
device_registry::device_registry(device_registry&&) noexcept = default;
auto device_registry::operator=(device_registry&&) noexcept -> device_registry& = default;
device_registry::~device_registry() = default;

auto device_registry::primary_nic(int dev) const noexcept -> const nic* {
    if (!contains(dev)) return nullptr;
    const int p = is_virtual(dev) ? virtuals_[static_cast<std::size_t>(dev - nic_count())].members.front() : dev;
    return &nics_[static_cast<std::size_t>(p)];
}

auto device_registry::members(int dev) const -> std::vector<int> {
    if (!contains(dev)) return {};
    if (is_virtual(dev)) return virtuals_[static_cast<std::size_t>(dev - nic_count())].members;
    return {dev};
}

auto device_registry::name(int dev) const -> const std::string& {
    static const std::string none;
    if (!contains(dev)) return none;
    if (is_virtual(dev)) return virtuals_[static_cast<std::size_t>(dev - nic_count())].name;
    return nics_[static_cast<std::size_t>(dev)].name;
}

auto device_registry::make_virtual(std::span<const int> nics, int max_members) -> result<int> {
    if (nics.empty() || static_cast<int>(nics.size()) > std::min(max_members, max_rails))
        return make_unexpected(errc::invalid_argument);
    virtual_device v;
    for (const int d : nics) {
        if (d < 0 || d >= nic_count() || std::ranges::find(v.members, d) != v.members.end())
            return make_unexpected(errc::invalid_argument);
        v.members.push_back(d);
        v.name += (v.name.empty() ? "" : "+") + nics_[static_cast<std::size_t>(d)].name;
    }
    virtuals_.push_back(std::move(v));
    engines_.emplace_back();
    return device_count() - 1;
}

auto device_registry::engine_for(int dev) -> result<engine*> {
    if (!contains(dev)) return make_unexpected(errc::invalid_argument);
    auto& e = engines_[static_cast<std::size_t>(dev)];
    if (!e) {
        std::vector<nic> rails;
        for (const int m : members(dev)) rails.push_back(nics_[static_cast<std::size_t>(m)]);
        auto opened = engine::open(rails, cfg_);
        if (!opened) {
            LOOM_WARN("opening device {} failed: {}", name(dev), opened.error().message());
            return std::unexpected(opened.error());
        }
        e = std::move(*opened);
        if (on_open_ != nullptr) on_open_(*e);
    }
    return e.get();
}

void device_registry::close_engines() noexcept {
    engines_.clear();
    virtuals_.clear();
    engines_.resize(nics_.size());
}

}  // namespace loom::plugins
