// "Libfabric release audit": the additions of libfabric 2.2-2.7 (rescanning discovery,
// firewall addresses, XPU contexts) are present whatever headers loom is built with. Against
// the libfabric these tests run with (2.1), every call checks its arguments first and then
// reports not_supported without touching the objects involved.
#include <loom/loom.hpp>

#include <gtest/gtest.h>

#include "core_support.hpp"

#include <rdma/fabric.h>

#include <array>
#include <string>

using core_test::outcome;

namespace {

auto runtime_at_least(unsigned major, unsigned minor) -> bool { return ::fi_version() >= FI_VERSION(major, minor); }

constexpr auto rdm_tcp = loom::fabric_hints{
    .capabilities = loom::capability::msg, .ep_type = loom::endpoint_types::rdm, .provider = "tcp;ofi_rxm"};

}  // namespace

TEST(Rescan, discovery_asks_for_it_only_from_a_libfabric_that_knows_it) {
    ASSERT_TRUE(loom::query_fabric(rdm_tcp)) << "the same hints without rescan";
    auto hints = rdm_tcp;
    hints.rescan = true;
    auto r = loom::query_all(hints);
    if (!runtime_at_least(2, 2)) {
        ASSERT_FALSE(r);
        EXPECT_EQ(outcome(r.error()), "not_supported");
    } else {
        EXPECT_TRUE(r);
    }
}

TEST(FirewallAddresses, insertion_refuses_cleanly_and_inserts_nothing) {
    loom::fabric_info info;
    loom::fabric fab;
    loom::domain dom;
    auto found = loom::query_fabric(rdm_tcp);
    ASSERT_TRUE(found);
    info = *found;
    ASSERT_EQ(core_test::open_fabric_domain(info, fab, dom), "");
    auto av = loom::address_vector::create(dom);
    ASSERT_TRUE(av);
    auto peer = loom::ipv4_address::parse("127.0.0.1", 4242);
    ASSERT_TRUE(peer);
    const loom::av_insert_options firewall{.behind_firewall = true};
    const auto raw = loom::to_raw(*peer);
    std::array<loom::fabric_addr, 2> out{loom::fabric_addr{7}, loom::fabric_addr{7}};
    std::vector<std::byte> two(raw);
    two.insert(two.end(), raw.begin(), raw.end());
    if (runtime_at_least(2, 2)) GTEST_SKIP() << "libfabric 2.2 or newer: the flag reaches the provider";

    EXPECT_EQ(outcome(av->insert(*peer, firewall)), "not_supported");
    EXPECT_EQ(outcome(av->insert_raw(raw, firewall)), "not_supported");
    EXPECT_EQ(outcome(av->insert_batch(two, raw.size(), out, firewall)), "not_supported");
    EXPECT_EQ(out[0], loom::fabric_addr{7}) << "no handle written";
    // Nothing was inserted: the first plain insertion gets the vector's first handle.
    auto first = av->insert(*peer);
    ASSERT_TRUE(first) << outcome(first.error());
    EXPECT_EQ(first->get(), 0u);
    EXPECT_EQ(outcome(av->insert(loom::address{*peer}, firewall)), "not_supported");
}

TEST(XpuContexts, hints_asking_for_xpu_need_libfabric_2_7) {
    auto hints = rdm_tcp;
    hints.capabilities |= loom::capability::xpu;
    auto r = loom::query_all(hints);
    if (!runtime_at_least(2, 7)) {
        ASSERT_FALSE(r);
        EXPECT_EQ(outcome(r.error()), "not_supported");
    }
    EXPECT_EQ(loom::to_string(loom::capability::xpu), "xpu");
    EXPECT_EQ(loom::to_string(loom::mr_mode_flags::xpu_desc), "xpu_desc");
}

TEST(XpuContexts, creation_checks_arguments_then_reports_not_supported) {
    EXPECT_EQ(loom::xpu_supported(), runtime_at_least(2, 7));
    loom::domain closed;
    EXPECT_EQ(outcome(loom::xpu_context::create(closed, loom::hmem_iface::cuda, 0).error()), "invalid_argument");

    core_test::loop_stack s;
    ASSERT_NO_FATAL_FAILURE(core_test::must_open_loop("tcp;ofi_rxm", {}, s));
    const long children = s.domain.open_children();
    EXPECT_EQ(outcome(loom::xpu_context::create(s.domain, loom::hmem_iface::system, 0).error()), "invalid_argument")
        << "host memory is no accelerator";
    EXPECT_EQ(outcome(loom::xpu_context::create(s.domain, static_cast<loom::hmem_iface>(99), 0).error()),
              "invalid_argument");
    if (runtime_at_least(2, 7)) GTEST_SKIP() << "libfabric 2.7 or newer: the provider decides";
    for (auto iface : {loom::hmem_iface::cuda, loom::hmem_iface::rocr, loom::hmem_iface::ze, loom::hmem_iface::neuron,
                       loom::hmem_iface::synapseai})
        EXPECT_EQ(outcome(loom::xpu_context::create(s.domain, iface, 0).error()), "not_supported");
    EXPECT_EQ(s.domain.open_children(), children) << "a refused creation left a child";
}

TEST(XpuContexts, a_context_that_is_not_open_refuses_every_call) {
    core_test::loop_stack s;
    ASSERT_NO_FATAL_FAILURE(core_test::must_open_loop("tcp;ofi_rxm", {.caps = loom::capability::msg}, s));
    std::array<std::byte, 64> buf{};
    auto mr = loom::memory_region::register_memory(s.domain, std::span{buf}, loom::mr_access_flags::send);
    ASSERT_TRUE(mr);
    const loom::xpu_context ctx;
    EXPECT_FALSE(ctx.valid());
    EXPECT_EQ(outcome(ctx.query().error()), "bad_state");
    EXPECT_EQ(outcome(ctx.export_endpoint(s.ep).error()), "bad_state");
    EXPECT_EQ(outcome(ctx.export_completion_queue(s.cq).error()), "bad_state");
    auto cntr = loom::counter::create(s.domain);
    ASSERT_TRUE(cntr);
    EXPECT_EQ(outcome(ctx.export_counter(*cntr).error()), "bad_state");
    EXPECT_EQ(outcome(ctx.memory_descriptor(*mr, buf).error()), "bad_state");

    // Objects that are not open come first.
    EXPECT_EQ(outcome(ctx.export_endpoint(loom::endpoint{}).error()), "invalid_argument");
    EXPECT_EQ(outcome(ctx.export_completion_queue(loom::completion_queue{}).error()), "invalid_argument");
    EXPECT_EQ(outcome(ctx.export_counter(loom::counter{}).error()), "invalid_argument");
    EXPECT_EQ(outcome(ctx.memory_descriptor(loom::memory_region{}, buf).error()), "invalid_argument");
    EXPECT_EQ(outcome(ctx.memory_descriptor(*mr, {}).error()), "invalid_argument") << "no room for a descriptor";

    // Objects for device-side use need an open context of their domain.
    const long children = s.domain.open_children();
    EXPECT_EQ(outcome(loom::completion_queue::create(s.domain, {.size = 8, .xpu = &ctx}).error()), "invalid_argument");
    EXPECT_EQ(outcome(loom::counter::create(s.domain, {.xpu = &ctx}).error()), "invalid_argument");
    EXPECT_EQ(outcome(ctx.create_endpoint(s.domain, s.info).error()), "bad_state");
    EXPECT_EQ(outcome(ctx.create_endpoint(s.domain, loom::fabric_info{}).error()), "invalid_argument");
    EXPECT_EQ(s.domain.open_children(), children) << "a refusal opened an object";
}
