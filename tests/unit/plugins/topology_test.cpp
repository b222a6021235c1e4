// NIC topology lookups never fail and never leave /sys/class/net.
#include <loom/plugins/topology.hpp>

#include <gtest/gtest.h>

TEST(PluginTopology, LoopbackHasNoPciDevice) {
    const auto t = loom::plugins::describe_nic("lo");
    EXPECT_TRUE(t.pci_path.empty());
    EXPECT_TRUE(t.nearest_gpu.empty());
}

TEST(PluginTopology, UnknownAndHostileNamesGiveAnEmptyDescription) {
    for (const char* name : {"", "no-such-nic0", "..", ".", "../../etc", "lo/../eth0"}) {
        const auto t = loom::plugins::describe_nic(name);
        EXPECT_TRUE(t.pci_path.empty()) << name;
        EXPECT_EQ(t.numa_node, -1) << name;
        EXPECT_EQ(t.speed_mbps, 0) << name;
    }
}
