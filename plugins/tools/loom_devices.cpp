// loom-devices: the devices the plugin runtime would use in this environment (LOOM_PROVIDER,
// LOOM_IFACE, ...): which provider it picks and why, and what each ranked provider offers here.
#include <loom/plugins/config.hpp>
#include <loom/plugins/device_registry.hpp>

#include <loom/fabric_info.hpp>
#include <loom/provider_facts.hpp>

#include <cstdio>
#include <string>

namespace {

/// What a ranked provider offers on this machine: "RMA", "tagged only" or "absent".
auto offer_of(std::string_view prov) -> std::string {
    loom::plugins::config cfg;
    cfg.provider = std::string(prov);
    auto nics = loom::plugins::discover_nics(cfg);
    if (!nics || nics->empty()) return "absent";
    return nics->front().rma ? "tagged + RMA" : "tagged only (no RMA with 8-byte immediate data)";
}

}  // namespace

int main(int argc, char** argv) {
    if (argc > 1) {
        std::fputs("usage: loom-devices   (reads the LOOM_* variables like the plugins do)\n",
                   argc == 2 && std::string(argv[1]) == "-h" ? stdout : stderr);
        return argc == 2 && std::string(argv[1]) == "-h" ? 0 : 2;
    }
    auto cfg = loom::plugins::config::from_env();
    if (!cfg) {
        std::fprintf(stderr, "loom-devices: %s\n", loom::plugins::config::last_error().c_str());
        return 2;
    }
    std::puts("ranked providers here (without LOOM_PROVIDER the first with RMA wins, else the first present):");
    for (auto p : loom::ranked_providers()) std::printf("  %-14s %s\n", std::string(p).c_str(), offer_of(p).c_str());
    auto reg = loom::plugins::device_registry::discover(*cfg);
    if (!reg) {
        std::fprintf(stderr, "loom-devices: discovery failed: %s\n", reg.error().message().c_str());
        return 1;
    }
    std::printf("devices%s:\n",
                cfg->provider.empty() ? " (ranked choice)" : (" (LOOM_PROVIDER=" + cfg->provider + ")").c_str());
    if (reg->nic_count() == 0) std::puts("  none");
    for (int d = 0; d < reg->nic_count(); ++d) {
        const auto& n = *reg->primary_nic(d);
        std::printf("  %d: %-10s provider %-12s rma %-3s eager <= %zu B  %d Mb/s  pci %s\n", d, n.name.c_str(),
                    n.provider.c_str(), n.rma ? "yes" : "no", n.eager_max, n.speed_mbps,
                    n.topo.pci_path.empty() ? "-" : n.topo.pci_path.c_str());
    }
    return 0;
}
