#include <loom/plugins/topology.hpp>

#include <hwloc.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>

namespace loom::plugins {
namespace {

auto read_int(const std::string& path) -> int {
    std::ifstream f(path);
    long v = 0;
    if (!(f >> v) || v < INT_MIN || v > INT_MAX) return -1;
    return static_cast<int>(v);
}

/// The machine's topology, loaded once (loading costs tens of milliseconds) and kept for the
/// life of the process: destroying it unloads hwloc's PCI component, which leaks libpciaccess
/// state on every load/unload cycle.
auto machine_topology() -> hwloc_topology_t {
    static std::mutex mu;
    static hwloc_topology_t topo = nullptr;
    static bool tried = false;
    std::lock_guard lock(mu);
    if (!tried) {
        tried = true;
        if (hwloc_topology_init(&topo) == 0) {
            hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
            if (hwloc_topology_load(topo) != 0) {
                hwloc_topology_destroy(topo);
                topo = nullptr;
            }
        } else {
            topo = nullptr;
        }
    }
    return topo;
}

}  // namespace

auto describe_nic(std::string_view iface) -> nic_topology {
    nic_topology t;
    if (iface.empty() || iface.find('/') != std::string_view::npos || iface == "." || iface == "..") return t;
    const std::string base = "/sys/class/net/" + std::string(iface);
    if (char* real = ::realpath((base + "/device").c_str(), nullptr)) {
        t.pci_path = real;
        std::free(real);
    }
    if (const int s = read_int(base + "/speed"); s > 0) t.speed_mbps = s;

    if (hwloc_topology_t topo = machine_topology(); topo != nullptr) {
        hwloc_obj_t nic = nullptr;
        for (hwloc_obj_t o = hwloc_get_next_osdev(topo, nullptr); o != nullptr; o = hwloc_get_next_osdev(topo, o)) {
            if (o->name != nullptr && iface == o->name) {
                nic = o;
                break;
            }
        }
        if (nic != nullptr) {
            hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, nic);
            if (anc != nullptr && anc->nodeset != nullptr && !hwloc_bitmap_iszero(anc->nodeset))
                t.numa_node = hwloc_bitmap_first(anc->nodeset);
            for (hwloc_obj_t o = hwloc_get_next_osdev(topo, nullptr); o != nullptr; o = hwloc_get_next_osdev(topo, o)) {
                const bool gpu = o->attr != nullptr && (o->attr->osdev.type == HWLOC_OBJ_OSDEV_GPU ||
                                                        o->attr->osdev.type == HWLOC_OBJ_OSDEV_COPROC);
                if (gpu && hwloc_get_non_io_ancestor_obj(topo, o) == anc && o->name != nullptr) {
                    t.nearest_gpu = o->name;
                    break;
                }
            }
        }
    }
    if (t.numa_node < 0 && !t.pci_path.empty()) t.numa_node = read_int(t.pci_path + "/numa_node");
    return t;
}

}  // namespace loom::plugins
