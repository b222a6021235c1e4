// The runtime's device registry over the providers of this machine: the default choice,
// virtual devices, engines opened once on first use.
#include <loom/plugins/device_registry.hpp>
#include <loom/plugins/engine.hpp>

#include <gtest/gtest.h>

namespace lp = loom::plugins;

namespace {

TEST(DeviceRegistry, WithoutAProviderNamedNativeTcpIsChosenHere) {
    // No hardware provider runs here: of the TCP paths native tcp ranks first.
    auto reg = lp::device_registry::discover(lp::config{});
    ASSERT_TRUE(reg) << reg.error().message();
    ASSERT_GE(reg->nic_count(), 1);
    for (int d = 0; d < reg->nic_count(); ++d) {
        EXPECT_EQ(reg->primary_nic(d)->provider, "tcp");
        EXPECT_TRUE(reg->primary_nic(d)->rma);
        EXPECT_GT(reg->primary_nic(d)->speed_mbps, 0);
        EXPECT_EQ(reg->primary_nic(d)->eager_max, 262144U);
    }
}

TEST(DeviceRegistry, NamedProviderAndEagerOverride) {
    lp::config cfg;
    cfg.provider = "tcp;ofi_rxm";
    cfg.eager_max = 4096;
    auto reg = lp::device_registry::discover(cfg);
    ASSERT_TRUE(reg) << reg.error().message();
    ASSERT_GE(reg->nic_count(), 1);
    EXPECT_EQ(reg->primary_nic(0)->provider, "tcp;ofi_rxm");
    EXPECT_EQ(reg->primary_nic(0)->eager_max, 4096U);
    cfg.provider = "no-such-provider";
    auto none = lp::device_registry::discover(cfg);
    ASSERT_TRUE(none);
    EXPECT_EQ(none->nic_count(), 0);
    EXPECT_FALSE(none->contains(0));
    EXPECT_EQ(none->primary_nic(0), nullptr);
    EXPECT_EQ(none->engine_for(0).error(), loom::errc::invalid_argument);
}

TEST(DeviceRegistry, VirtualDevicesAreCheckedNamedAndNumberedAfterTheNics) {
    lp::config cfg;
    cfg.provider = "shm";
    auto reg = lp::device_registry::discover(cfg);
    ASSERT_TRUE(reg) << reg.error().message();
    ASSERT_EQ(reg->nic_count(), 1);
    const int bad_twice[] = {0, 0};
    const int unknown[] = {1};
    const int too_many[] = {0, 0, 0, 0, 0};
    EXPECT_EQ(reg->make_virtual({}, 4).error(), loom::errc::invalid_argument);
    EXPECT_EQ(reg->make_virtual(bad_twice, 4).error(), loom::errc::invalid_argument);
    EXPECT_EQ(reg->make_virtual(unknown, 4).error(), loom::errc::invalid_argument);
    EXPECT_EQ(reg->make_virtual(too_many, 4).error(), loom::errc::invalid_argument);
    const int one[] = {0};
    auto v = reg->make_virtual(one, 4);
    ASSERT_TRUE(v);
    EXPECT_EQ(*v, 1);
    EXPECT_TRUE(reg->is_virtual(*v));
    EXPECT_EQ(reg->name(*v), "shm");
    EXPECT_EQ(reg->members(*v), std::vector<int>{0});
    EXPECT_EQ(reg->primary_nic(*v), reg->primary_nic(0));
}

TEST(DeviceRegistry, EnginesOpenOnceAndCloseTogether) {
    lp::config cfg;
    cfg.provider = "shm";
    auto reg = lp::device_registry::discover(cfg);
    ASSERT_TRUE(reg && reg->nic_count() == 1);
    static int opened = 0;
    opened = 0;
    reg->on_engine_open([](lp::engine&) noexcept { ++opened; });
    auto a = reg->engine_for(0);
    auto b = reg->engine_for(0);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(*a, *b);
    EXPECT_EQ(opened, 1);
    const int one[] = {0};
    const int v = reg->make_virtual(one, 4).value();
    auto c = reg->engine_for(v);
    ASSERT_TRUE(c);
    EXPECT_NE(*c, *a) << "a virtual device has an engine of its own";
    EXPECT_EQ(opened, 2);
    reg->close_engines();
    EXPECT_FALSE(reg->contains(v)) << "virtual devices go with the engines";
    auto d = reg->engine_for(0);
    ASSERT_TRUE(d);
    EXPECT_EQ(opened, 3);
}

}  // namespace
