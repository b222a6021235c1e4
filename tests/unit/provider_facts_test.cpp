// The provider table: the ranking a runtime chooses by, defaults and defects per provider.
#include <loom/provider_facts.hpp>

#include <gtest/gtest.h>
#include <rdma/fabric.h>

#include <algorithm>

namespace {

auto position(std::string_view p) -> std::ptrdiff_t {
    const auto r = loom::ranked_providers();
    return std::find(r.begin(), r.end(), p) - r.begin();
}

TEST(ProviderFacts, HardwareFirstThenNativeTcpThenRxm) {
    EXPECT_LT(position("cxi"), position("verbs;ofi_rxm"));
    EXPECT_LT(position("efa"), position("tcp"));
    EXPECT_LT(position("verbs;ofi_rxm"), position("tcp"));
    // Native tcp has tagged messages, RMA and auto progress in libfabric 2.x and is the
    // faster TCP path here.
    EXPECT_LT(position("tcp"), position("tcp;ofi_rxm"));
    const auto size = static_cast<std::ptrdiff_t>(loom::ranked_providers().size());
    EXPECT_EQ(position("sockets"), size) << "functional tests only";
    EXPECT_EQ(position("shm"), size) << "reaches only this host";
}

TEST(ProviderFacts, PreferenceFollowsTheRanking) {
    int last = 0;
    for (auto p : loom::ranked_providers()) {
        const int pref = loom::provider_facts_for(p).preference;
        EXPECT_GT(pref, last) << p;
        last = pref;
    }
    EXPECT_EQ(loom::provider_facts_for("shm").preference, 0);
    EXPECT_EQ(loom::provider_facts_for("no-such-provider").preference, 0);
}

TEST(ProviderFacts, EagerLimitsAndSpeeds) {
    EXPECT_EQ(loom::provider_facts_for("shm").eager_max, 262144U);
    EXPECT_EQ(loom::provider_facts_for("tcp").eager_max, 262144U);
    EXPECT_EQ(loom::provider_facts_for("tcp;ofi_rxm").eager_max, 16384U);
    EXPECT_EQ(loom::provider_facts_for("efa").eager_max, 65536U);
    EXPECT_TRUE(loom::provider_facts_for("shm").host_local);
    EXPECT_FALSE(loom::provider_facts_for("tcp").host_local);
    EXPECT_GT(loom::provider_facts_for("shm").assumed_speed_mbps, loom::provider_facts_for("tcp").assumed_speed_mbps);
}

TEST(ProviderFacts, TcpAndRxmOverTcpGetALivenessEndpointOfTheirOwnByDefault) {
    EXPECT_TRUE(loom::provider_facts_for("tcp").own_liveness_endpoint);
    EXPECT_TRUE(loom::provider_facts_for("tcp").liveness_provider.empty()) << "on the data's domain";
    // rxm over tcp: on native tcp beneath it, since an rxm endpoint costs ~140 MiB of pools.
    EXPECT_TRUE(loom::provider_facts_for("tcp;ofi_rxm").own_liveness_endpoint);
    EXPECT_EQ(loom::provider_facts_for("tcp;ofi_rxm").liveness_provider, "tcp");
    // verbs;ofi_rxm, efa, cxi: untested on hardware; shm: peers on this host, checked by pid as well.
    for (auto p : {"verbs;ofi_rxm", "shm", "efa", "cxi", "sockets", "udp;ofi_rxd"}) {
        EXPECT_FALSE(loom::provider_facts_for(p).own_liveness_endpoint) << p;
        EXPECT_TRUE(loom::provider_facts_for(p).liveness_provider.empty()) << p;
    }
}

TEST(ProviderFacts, OnlyHostLocalProvidersEndAPeersDataWithItsProcess) {
    for (auto p : {"shm", "sm2"}) EXPECT_FALSE(loom::provider_facts_for(p).sent_data_outlives_sender) << p;
    for (auto p : {"tcp", "tcp;ofi_rxm", "verbs;ofi_rxm", "efa", "cxi", "sockets", "udp;ofi_rxd", "no-such-provider"})
        EXPECT_TRUE(loom::provider_facts_for(p).sent_data_outlives_sender) << p;
}

TEST(ProviderFacts, DefectsAndRegistrationPaths) {
    EXPECT_TRUE(loom::provider_facts_for("tcp;ofi_rxm").broken_self_insert);
    EXPECT_TRUE(loom::provider_facts_for("verbs;ofi_rxm").broken_self_insert);
    EXPECT_FALSE(loom::provider_facts_for("tcp").broken_self_insert);
    EXPECT_TRUE(loom::provider_facts_for("shm").getopt_needs_enable);
    EXPECT_TRUE(loom::provider_facts_for("tcp").srx_cancel_crashes);
    for (auto p : {"tcp", "tcp;ofi_rxm", "sockets", "udp;ofi_rxd"})
        EXPECT_TRUE(loom::provider_facts_for(p).translates_dmabuf) << p;
    for (auto p : {"efa", "cxi", "verbs;ofi_rxm"}) {
        EXPECT_TRUE(loom::provider_facts_for(p).hardware_registrations) << p;
        EXPECT_FALSE(loom::provider_facts_for(p).translates_dmabuf) << p;
    }
    EXPECT_FALSE(loom::provider_facts_for("tcp").hardware_registrations);
}

TEST(ProviderFacts, RxdAtomicsAreBrokenBefore22Only) {
    const auto f = loom::provider_facts_for("udp;ofi_rxd");
    EXPECT_EQ(f.broken_fetch_atomics, f.broken_atomic_inject);
    EXPECT_EQ(f.broken_fetch_atomics, ::fi_version() < FI_VERSION(2, 2));
    EXPECT_FALSE(loom::provider_facts_for("shm").broken_fetch_atomics);
}

}  // namespace
