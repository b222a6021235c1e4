// Checked endpoints ("Compile-Time Provider Traits", its second half): the spec's profile
// example compiled and run on tcp and shm, every refusal of the factory before an endpoint is
// opened, the bound kept at compile time and before submission, revalidation at bind and
// enable, and the way back to the generic API.
#include <loom/loom.hpp>

#include <gtest/gtest.h>

#include "core_support.hpp"

#include <array>
#include <cstring>

#include <rdma/fi_endpoint.h>

using namespace loom;
using namespace std::chrono_literals;

namespace {

// ---- the spec's example, with its elided setup filled in
using header_profile = message_endpoint_profile<rdm_endpoint_tag, 32>;
using header_endpoint = contract_endpoint<header_profile>;

auto spec_example(domain& domain, const fabric_info& info) -> result<header_endpoint> {
    auto checked = header_endpoint::create(domain, info);
    if (!checked) return std::unexpected(checked.error());
    // Bind completion queues and other resources, then check enable().
    return checked;
}

// ---- compile-time facts
static_assert(endpoint_profile<header_profile>);
static_assert(header_profile::ep_type == endpoint_types::rdm && header_profile::inject_bound == 32);
static_assert(header_profile::required_caps == capability::msg && header_profile::optional_caps == capability::tagged);
static_assert(capability_descriptor<header_profile>, "profiles feed fabric_query");
template <class E, class Span>
concept injects = requires(E& e, Span s, fabric_addr a) { e.inject(s, a); };
static_assert(injects<header_endpoint, std::span<const std::byte, 32>>);
static_assert(injects<header_endpoint, std::span<std::byte, 32>>);
static_assert(!injects<header_endpoint, std::span<const std::byte, 33>>, "an oversized fixed span does not compile");
static_assert(injects<header_endpoint, std::span<const std::byte>>);
using no_inject = contract_endpoint<message_endpoint_profile<rdm_endpoint_tag, 0>>;
static_assert(!injects<no_inject, std::span<const std::byte>>, "a zero bound has no inject");
static_assert(!injects<no_inject, std::span<const std::byte, 1>>);
static_assert(std::is_same_v<tcp_endpoint, contract_endpoint<message_endpoint_profile<rdm_endpoint_tag, 128>>>);
static_assert(std::is_same_v<provider_endpoint<provider::shm_tag, 16, msg_endpoint_tag>,
                             contract_endpoint<message_endpoint_profile<msg_endpoint_tag, 16>>>);
static_assert(std::is_same_v<decltype(std::declval<const header_endpoint&>().underlying()), const endpoint&>);
static_assert(!std::is_copy_constructible_v<header_endpoint> && std::is_move_constructible_v<header_endpoint>);

/// Profiles beyond the default.
struct needs_atomics {
    static constexpr endpoint_types ep_type = endpoint_types::rdm;
    static constexpr capability required_caps = capability::msg | capability::atomic;
    static constexpr capability optional_caps = capability::none;
    static constexpr mode_flags supported_modes = mode_flags::none;
    static constexpr std::size_t inject_bound = 8;
};
struct needs_auto_progress : message_endpoint_profile<rdm_endpoint_tag, 8> {
    static constexpr progress_mode data_progress = progress_mode::auto_progress;
};
struct needs_domain_threading : message_endpoint_profile<rdm_endpoint_tag, 8> {
    static constexpr threading_mode threading = threading_mode::domain;
};
struct takes_rx_cq_data : message_endpoint_profile<rdm_endpoint_tag, 8> {
    static constexpr mode_flags supported_modes = mode_flags::rx_cq_data;
};
static_assert(header_endpoint::requirements().data_progress == progress_mode::unspecified);
static_assert(contract_endpoint<needs_auto_progress>::requirements().data_progress == progress_mode::auto_progress);

/// Fabric and domain of a provider's first message-capable RDM entry.
struct opened {
    fabric_info info;
    fabric fab;
    domain dom;
};
auto open(const std::string& provider) -> opened {
    opened o;
    auto info = loom_test::find_info(provider, capability::msg | capability::tagged);
    EXPECT_TRUE(info) << provider;
    if (!info) return o;
    o.info = *info;
    EXPECT_EQ(core_test::open_fabric_domain(o.info, o.fab, o.dom), "");
    return o;
}

template <class Contract>
auto refused_before_opening(opened& o, const fabric_info& info) -> std::string {
    const long before = o.dom.open_children();
    auto c = Contract::create(o.dom, info);
    if (c) return "accepted";
    if (o.dom.open_children() != before) return "an endpoint was opened";
    return core_test::outcome(c.error());
}

/// A contract endpoint on the loopback resources of `s` (cq, av), enabled, with its own address.
template <class Contract>
void open_contract(core_test::loop_stack& s, Contract& c, fabric_addr& self) {
    auto made = Contract::create(s.domain, s.info);
    ASSERT_TRUE(made) << made.error().message();
    c = std::move(*made);
    ASSERT_EQ(core_test::outcome(c.bind_cq(s.cq, cq_bind::transmit | cq_bind::recv)), "ok");
    ASSERT_EQ(core_test::outcome(c.bind_av(s.av)), "ok");
    ASSERT_EQ(core_test::outcome(c.enable()), "ok");
    auto me = c.name();
    ASSERT_TRUE(me);
    auto addr = s.av.insert(*me);
    ASSERT_TRUE(addr);
    self = *addr;
}

void inject_to_self_arrives(const std::string& provider) {
    core_test::loop_stack s;
    ASSERT_NO_FATAL_FAILURE(core_test::must_open_loop(provider, core_test::loop_options{}, s));
    auto made = spec_example(s.domain, s.info);
    ASSERT_TRUE(made) << provider << ": " << made.error().message();
    header_endpoint c = std::move(*made);
    ASSERT_EQ(core_test::outcome(c.bind_cq(s.cq, cq_bind::transmit | cq_bind::recv)), "ok");
    ASSERT_EQ(core_test::outcome(c.bind_av(s.av)), "ok");
    ASSERT_EQ(core_test::outcome(c.enable()), "ok");
    auto to = s.av.insert(c.name().value());
    ASSERT_TRUE(to);

    std::array<std::byte, 32> header{}, got{};
    for (std::size_t i = 0; i < header.size(); ++i) header[i] = static_cast<std::byte>(0xa0 + i);
    request_context rctx;
    loom_test::progress prog(s.cq);
    ASSERT_EQ(core_test::outcome(c.recv(std::span{got}, fabric_addrs::unspecified, nullptr, &rctx)), "ok");
    // inject(span<const byte, 32>) fits this type's established bound.
    const std::span<const std::byte, 32> fixed{header};
    ASSERT_EQ(core_test::outcome(prog.retry([&] { return c.inject(fixed, *to); }, 2s)), "ok");
    EXPECT_EQ(core_test::completed(prog, &rctx).bytes_transferred, 32u);
    EXPECT_EQ(std::memcmp(got.data(), header.data(), 32), 0);

    // Dynamic spans are checked before submission; a connectionless endpoint needs a peer.
    std::array<std::byte, 33> big{};
    EXPECT_EQ(core_test::outcome(c.inject(std::span<const std::byte>{big}, *to)), "invalid_argument");
    EXPECT_EQ(core_test::outcome(c.inject(fixed)), "invalid_argument");
}

}  // namespace

TEST(SpecCheckedEndpoint, the_example_injects_its_header_on_tcp) { inject_to_self_arrives("tcp"); }
TEST(SpecCheckedEndpoint, the_example_injects_its_header_on_shm) { inject_to_self_arrives("shm"); }

TEST(SpecCheckedEndpoint, a_bound_above_the_providers_inject_size_is_refused) {
    auto tcp = open("tcp");
    EXPECT_EQ(refused_before_opening<tcp_endpoint>(tcp, tcp.info), "accepted") << "tcp offers 128";
    EXPECT_EQ((refused_before_opening<provider_endpoint<provider::tcp_tag, 129>>(tcp, tcp.info)), "not_supported");
    EXPECT_EQ(refused_before_opening<shm_endpoint>(tcp, tcp.info), "not_supported") << "4096 > tcp's 128";
    auto shm = open("shm");
    EXPECT_EQ(refused_before_opening<shm_endpoint>(shm, shm.info), "accepted");
    EXPECT_EQ((refused_before_opening<provider_endpoint<provider::shm_tag, 4097>>(shm, shm.info)), "not_supported");
}

TEST(SpecCheckedEndpoint, type_capabilities_modes_threading_and_progress_are_checked) {
    auto tcp = open("tcp");
    EXPECT_EQ((refused_before_opening<contract_endpoint<message_endpoint_profile<msg_endpoint_tag, 0>>>(tcp, tcp.info)),
              "not_supported")
        << "an RDM configuration for a MSG profile";
    EXPECT_EQ(refused_before_opening<contract_endpoint<needs_atomics>>(tcp, tcp.info), "not_supported")
        << "tcp has no atomics";
    EXPECT_EQ(refused_before_opening<contract_endpoint<needs_auto_progress>>(tcp, tcp.info), "accepted");
    EXPECT_EQ(refused_before_opening<contract_endpoint<needs_domain_threading>>(tcp, tcp.info), "not_supported")
        << "the domain was opened with another threading model";
    auto shm = open("shm");
    EXPECT_EQ(refused_before_opening<contract_endpoint<needs_auto_progress>>(shm, shm.info), "not_supported")
        << "shm needs manual data progress";

    // A configuration that asks a mode obligation: refused by the default profile, accepted by
    // one that declares it satisfies it.
    ::fi_info* demanding = ::fi_dupinfo(tcp.info.native());
    ASSERT_NE(demanding, nullptr);
    demanding->mode |= FI_RX_CQ_DATA;
    auto with_mode = fabric_info::copy_native(demanding);
    ::fi_freeinfo(demanding);
    ASSERT_TRUE(with_mode);
    EXPECT_EQ(
        (refused_before_opening<contract_endpoint<message_endpoint_profile<rdm_endpoint_tag, 8>>>(tcp, *with_mode)),
        "not_supported");
    EXPECT_EQ(refused_before_opening<contract_endpoint<takes_rx_cq_data>>(tcp, *with_mode), "accepted");

    domain none;
    EXPECT_EQ(core_test::outcome(header_endpoint::create(none, tcp.info)), "invalid_argument");
}

TEST(SpecCheckedEndpoint, binds_and_enable_revalidate_the_bound) {
    core_test::loop_stack s;
    ASSERT_NO_FATAL_FAILURE(core_test::must_open_loop("tcp", core_test::loop_options{}, s));
    auto made = tcp_endpoint::create(s.domain, s.info);
    ASSERT_TRUE(made);
    // Native-handle mutation that breaks the checked configuration: the next bind sees it.
    std::size_t smaller = 16, len = sizeof(smaller);
    if (::fi_setopt(&made->underlying().native()->fid, FI_OPT_ENDPOINT, FI_OPT_INJECT_MSG_SIZE, &smaller, len) == 0) {
        EXPECT_EQ(core_test::outcome(made->bind_cq(s.cq, cq_bind::transmit | cq_bind::recv)), "not_supported");
        EXPECT_FALSE(made->valid());
        std::array<std::byte, 8> b{};
        EXPECT_EQ(core_test::outcome(made->send(std::span<const std::byte>{b}, s.self)), "bad_state");
        EXPECT_EQ(core_test::outcome(made->inject(std::span<const std::byte>{b}, s.self)), "bad_state");
        return;
    }
    // libfabric 2.1's tcp neither takes nor answers the option: the creation attribute governs
    // every revalidation and holds.
    std::size_t v = 0;
    len = sizeof(v);
    EXPECT_FALSE(get_endpoint_option(made->underlying(), ep_opt::level_endpoint, ep_opt::inject_msg_size, &v, &len));
    EXPECT_EQ(core_test::outcome(made->bind_cq(s.cq, cq_bind::transmit | cq_bind::recv)), "ok");
    EXPECT_EQ(core_test::outcome(made->bind_av(s.av)), "ok");
    EXPECT_EQ(core_test::outcome(made->enable()), "ok");
    EXPECT_TRUE(made->valid());
    // A failed bind is reported as the bind's own error and leaves the contract intact.
    EXPECT_EQ(core_test::outcome(made->bind_av(s.av)), "bad_state");
    EXPECT_TRUE(made->valid());
}

TEST(SpecCheckedEndpoint, release_returns_a_working_generic_endpoint) {
    core_test::loop_stack s;
    ASSERT_NO_FATAL_FAILURE(core_test::must_open_loop("tcp", core_test::loop_options{}, s));
    tcp_endpoint c;
    fabric_addr self{};
    ASSERT_NO_FATAL_FAILURE(open_contract(s, c, self));
    EXPECT_TRUE(c.valid());
    EXPECT_EQ(c.underlying().inject_size(), 128u);
    endpoint plain = std::move(c).release();
    EXPECT_FALSE(c.valid());
    std::array<std::byte, 8> b{};
    EXPECT_EQ(core_test::outcome(c.inject(std::span<const std::byte>{b}, self)), "bad_state");
    std::array<std::byte, 16> out{}, in{};
    out.fill(std::byte{0x5a});
    request_context rctx, sctx;
    loom_test::progress prog(s.cq);
    ASSERT_EQ(core_test::outcome(plain.recv(std::span{in}, fabric_addrs::unspecified, nullptr, &rctx)), "ok");
    ASSERT_EQ(core_test::outcome(
                  prog.retry([&] { return plain.send(std::span<const std::byte>{out}, self, nullptr, &sctx); }, 2s)),
              "ok");
    EXPECT_EQ(core_test::completed(prog, &rctx).bytes_transferred, 16u);
    EXPECT_EQ(in, out);
}

TEST(SpecCheckedEndpoint, a_profile_finds_configurations_through_fabric_query) {
    auto found = fabric_query<header_profile>::query();
    ASSERT_TRUE(found);
    for (const auto& info : *found) {
        EXPECT_EQ(info.ep_type(), endpoint_types::rdm);
        EXPECT_TRUE(info.capabilities().has(capability::msg));
    }
}
