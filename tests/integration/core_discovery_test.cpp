// In-process discovery checks against the real provider list: unknown providers, exact
// provider-name filtering, copy_native, hint validation and allocator-aware creation.
#include "core_support.hpp"
#include "counting_resource.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <memory>
#include <memory_resource>
#include <set>
#include <string>
#include <vector>

using namespace core_test;
using namespace std::chrono_literals;

namespace {

constexpr auto base_caps = loom::capability::msg | loom::capability::tagged;

TEST(core_discovery, unknown_provider_is_no_data) {
    EXPECT_EQ(outcome(loom::query_fabric({.provider = "no_such_provider_xyz"})), "no_data");
    EXPECT_EQ(outcome(loom::query_all({.provider = "no_such_provider_xyz"})), "no_data");
    // A prefix of a real name is not a match either.
    EXPECT_EQ(outcome(loom::query_all({.provider = "tc"})), "no_data");
}

TEST(core_discovery, provider_names_match_exactly) {
    auto all = loom::query_all({});
    ASSERT_TRUE(all) << outcome(all.error());
    std::set<std::string> names;
    for (const auto& i : *all) names.emplace(i.provider_name());
    ASSERT_TRUE(names.count("tcp")) << "no tcp provider on this machine";
    ASSERT_TRUE(names.count("tcp;ofi_rxm")) << "no tcp;ofi_rxm provider: the filter test would prove nothing";

    for (const std::string p : {"tcp", "tcp;ofi_rxm", "shm", "udp;ofi_rxd", "sockets"}) {
        auto only = loom::query_all({.provider = p});
        ASSERT_TRUE(only) << p << ": " << outcome(only.error());
        EXPECT_FALSE(only->empty());
        std::size_t n = 0;
        for (const auto& i : *only) {
            EXPECT_EQ(i.provider_name(), p);
            ++n;
        }
        EXPECT_EQ(n, only->size());
        auto first = loom::query_fabric({.provider = p});
        ASSERT_TRUE(first) << p << ": " << outcome(first.error());
        EXPECT_EQ(first->provider_name(), p);
    }
    // With an endpoint type too.
    auto rdm = loom::query_all({.ep_type = loom::endpoint_types::rdm, .provider = "tcp"});
    ASSERT_TRUE(rdm) << outcome(rdm.error());
    for (const auto& i : *rdm) {
        EXPECT_EQ(i.provider_name(), "tcp");
        EXPECT_EQ(i.ep_type(), loom::endpoint_types::rdm);
    }
}

TEST(core_discovery, control_unified_promise_reaches_the_domain) {
    // FI_PROGRESS_CONTROL_UNIFIED is the program's promise to serialize control calls with
    // data calls; libfabric 2.1's utility providers answer with their own model, so loom
    // carries the hint into every entry (fi_domain reads it there: with FI_THREAD_DOMAIN the
    // completion queue then reads without a mutex). Without the hint the provider's model stays.
    for (const std::string p : {"shm", "tcp", "tcp;ofi_rxm", "udp;ofi_rxd"}) {
        SCOPED_TRACE(p);
        const loom::fabric_hints plain{.capabilities = base_caps,
                                       .ep_type = loom::endpoint_types::rdm,
                                       .provider = p,
                                       .threading = loom::threading_mode::domain};
        auto unified_hints = plain;
        unified_hints.control_progress = loom::progress_mode::control_unified;
        auto all = loom::query_all(plain);
        ASSERT_TRUE(all) << outcome(all.error());
        for (const auto& i : *all)
            EXPECT_NE(i.get_domain_attr()->control_progress, loom::progress_mode::control_unified);
        auto unified = loom::query_all(unified_hints);
        ASSERT_TRUE(unified) << outcome(unified.error());
        ASSERT_FALSE(unified->empty());
        for (const auto& i : *unified)
            EXPECT_EQ(i.get_domain_attr()->control_progress, loom::progress_mode::control_unified);
        // A domain opened from such an entry works: a loopback stack moves a message.
        loop_stack s;
        const auto err = open_loop(*unified->begin(), {}, s);
        ASSERT_TRUE(err.empty()) << err;
        std::array<std::byte, 64> out{}, in{};
        for (std::size_t k = 0; k < out.size(); ++k) out[k] = static_cast<std::byte>(k * 7 + 1);
        ASSERT_NO_FATAL_FAILURE(loop_roundtrip(s, out, nullptr, in, nullptr));
        EXPECT_EQ(in, out);
    }
}

TEST(core_discovery, copy_native_copies_one_entry) {
    std::optional<loom::fabric_info> copy;
    const ::fi_info* original = nullptr;
    std::string provider, fabric_name, domain_name;
    loom::capability caps;
    loom::endpoint_types type{};
    loom::address_format fmt{};
    {
        auto all =
            loom::query_all({.capabilities = base_caps, .ep_type = loom::endpoint_types::rdm, .provider = "tcp"});
        ASSERT_TRUE(all) << outcome(all.error());
        ASSERT_GE(all->size(), 2u) << "need an entry with a successor";
        const auto entry = *all->begin();
        original = entry.native();
        ASSERT_NE(original->next, nullptr);
        auto c = loom::fabric_info::copy_native(entry.native());
        ASSERT_TRUE(c) << outcome(c.error());
        copy = std::move(*c);
        provider = entry.provider_name();
        fabric_name = entry.fabric_name();
        domain_name = entry.domain_name();
        caps = entry.capabilities();
        type = entry.ep_type();
        fmt = entry.addr_format();
    }  // the query's list is gone; the copy owns its own entry
    ASSERT_TRUE(copy->valid());
    EXPECT_NE(copy->native(), original);
    EXPECT_EQ(copy->native()->next, nullptr);
    EXPECT_EQ(copy->provider_name(), provider);
    EXPECT_EQ(copy->fabric_name(), fabric_name);
    EXPECT_EQ(copy->domain_name(), domain_name);
    EXPECT_EQ(copy->capabilities(), caps);
    EXPECT_EQ(copy->ep_type(), type);
    EXPECT_EQ(copy->addr_format(), fmt);
    // The copy opens a working loopback endpoint.
    auto fab = loom::fabric::create(*copy);
    ASSERT_TRUE(fab) << outcome(fab.error());
    auto dom = loom::domain::create(*fab, *copy);
    ASSERT_TRUE(dom) << outcome(dom.error());
    auto ep = loom::endpoint::create(*dom, *copy);
    ASSERT_TRUE(ep) << outcome(ep.error());
    EXPECT_EQ(outcome(ep->close()), "ok");
    EXPECT_EQ(outcome(dom->close()), "ok");
    EXPECT_EQ(outcome(fab->close()), "ok");

    EXPECT_EQ(outcome(loom::fabric_info::copy_native(nullptr)), "invalid_argument");
}

TEST(core_discovery, out_of_range_hints_are_invalid) {
    EXPECT_EQ(outcome(loom::query_fabric({.ep_type = static_cast<loom::endpoint_types>(42)})), "invalid_argument");
    EXPECT_EQ(outcome(loom::query_fabric({.ep_type = static_cast<loom::endpoint_types>(-1)})), "invalid_argument");
    EXPECT_EQ(outcome(loom::query_all({.ep_type = static_cast<loom::endpoint_types>(4)})), "invalid_argument");
    EXPECT_EQ(outcome(loom::query_fabric({.threading = static_cast<loom::threading_mode>(99)})), "invalid_argument");
    EXPECT_EQ(outcome(loom::query_fabric({.data_progress = static_cast<loom::progress_mode>(7)})), "invalid_argument");
    EXPECT_EQ(outcome(loom::query_fabric({.control_progress = static_cast<loom::progress_mode>(-3)})),
              "invalid_argument");
    EXPECT_EQ(outcome(loom::query_fabric({.addr_format = static_cast<loom::address_format>(1000)})),
              "invalid_argument");
    using namespace std::string_view_literals;
    EXPECT_EQ(outcome(loom::query_fabric({.provider = "tcp\0;ofi_rxm"sv})), "invalid_argument");
    EXPECT_EQ(outcome(loom::validate(static_cast<loom::endpoint_types>(42))), "invalid_argument");
    // Every real enumerator passes.
    for (auto t : {loom::endpoint_types::unspecified, loom::endpoint_types::msg, loom::endpoint_types::dgram,
                   loom::endpoint_types::rdm})
        EXPECT_EQ(outcome(loom::validate(t)), "ok");
    EXPECT_EQ(outcome(loom::query_fabric({.ep_type = loom::endpoint_types::rdm, .provider = "tcp"})), "ok");
}

using loom::test::counting_resource;

// The spec's allocator example runs in tests/spec/allocator_test.cpp.

class core_allocator : public ::testing::TestWithParam<std::string> {};

TEST_P(core_allocator, objects_created_with_an_arena_work) {
    auto buffer = std::make_unique<std::array<std::byte, 256 * 1024>>();
    std::pmr::monotonic_buffer_resource arena{buffer->data(), buffer->size()};
    counting_resource counted{&arena};
    std::array<std::byte, 32> out{}, in{};
    loom::request_context rctx, sctx;

    auto info = loom::query_fabric(
        {.capabilities = base_caps, .ep_type = loom::endpoint_types::rdm, .provider = GetParam()}, &counted);
    ASSERT_TRUE(info) << outcome(info.error());
    EXPECT_GT(counted.allocations, 0) << "query_fabric did not use the resource";
    auto fab = loom::fabric::create(*info, &counted);
    ASSERT_TRUE(fab) << outcome(fab.error());
    EXPECT_EQ(fab->memory_resource(), &counted);
    auto dom = loom::domain::create(*fab, *info, &counted);
    ASSERT_TRUE(dom) << outcome(dom.error());
    EXPECT_EQ(dom->memory_resource(), &counted);
    auto cq = loom::completion_queue::create(*dom, {.size = 64}, &counted);
    ASSERT_TRUE(cq) << outcome(cq.error());
    auto av = loom::address_vector::create(*dom, {}, &counted);
    ASSERT_TRUE(av) << outcome(av.error());
    auto cntr = loom::counter::create(*dom, {}, &counted);
    ASSERT_TRUE(cntr) << outcome(cntr.error());
    auto ep = loom::endpoint::create(*dom, *info, &counted);
    ASSERT_TRUE(ep) << outcome(ep.error());
    auto mr =
        loom::memory_region::register_memory(*dom, std::span<std::byte>{in}, loom::mr_access_flags::recv, &counted);
    ASSERT_TRUE(mr) << outcome(mr.error());
    ASSERT_EQ(outcome(ep->bind_cq(*cq, loom::cq_bind::transmit | loom::cq_bind::recv)), "ok");
    ASSERT_EQ(outcome(ep->bind_av(*av)), "ok");
    ASSERT_EQ(outcome(ep->bind_counter(*cntr, loom::counter_bind::recv)), "ok");
    ASSERT_EQ(outcome(ep->enable()), "ok");
    auto me = ep->name();
    ASSERT_TRUE(me) << outcome(me.error());
    auto self = av->insert(*me);
    ASSERT_TRUE(self) << outcome(self.error());

    loom_test::progress prog(*cq);
    loom_test::fill_pattern(out, 99);
    ASSERT_EQ(outcome(ep->recv(std::span<std::byte>{in}, *mr, loom::fabric_addrs::unspecified, &rctx)), "ok");
    ASSERT_EQ(outcome(prog.retry([&] { return ep->send(out, *self, nullptr, &sctx); }, 2s)), "ok");
    auto ev = completed(prog, &rctx);
    EXPECT_EQ(ev.bytes_transferred, out.size());
    (void)completed(prog, &sctx);
    EXPECT_EQ(in, out);
    EXPECT_EQ(outcome(cntr->wait(1, 2s)), "ok");
    EXPECT_EQ(cntr->read(), 1u);
    EXPECT_EQ(outcome(ep->close()), "ok");
    EXPECT_EQ(outcome(mr->close()), "ok");
}

INSTANTIATE_TEST_SUITE_P(providers, core_allocator, ::testing::ValuesIn(providers()), param_name);

}  // namespace
