// loom/plugins/topology.hpp — where a NIC sits: PCI path, NUMA node, link speed, nearest GPU.
#pragma once

#include <string>
#include <string_view>

namespace loom::plugins {

/// Where a NIC sits: PCI path, NUMA node, link speed, nearest GPU.
struct nic_topology {
    std::string pci_path{};     ///< sysfs path of the PCI device ("" for virtual interfaces)
    int numa_node{-1};          ///< -1: unknown
    int speed_mbps{0};          ///< 0: unknown
    std::string nearest_gpu{};  ///< hwloc OS device name of a GPU under the same package, if any
};

/// Describes interface `iface` (a netdev name such as "eth0" or "lo") using hwloc and sysfs.
/// Unknown interfaces give an empty description, never an error.
[[nodiscard]] auto describe_nic(std::string_view iface) -> nic_topology;

}  // namespace loom::plugins
