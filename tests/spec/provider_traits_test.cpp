// "Compile-Time Provider Traits": the spec's example as compile-time facts, every trait and
// concept of every tag, and the traits of the providers that run here held against what their
// discovery returns.
#include <loom/loom.hpp>

#include <gtest/gtest.h>

#include <array>
#include <string>

// ---- the spec's example, unchanged
using namespace loom;

static_assert(provider_traits<provider::verbs_tag>::supports_native_atomics);
static_assert(provider_traits<provider::efa_tag>::uses_staged_atomics);
static_assert(provider_traits<provider::tcp_tag>::supports_auto_progress);

static_assert(native_atomic_provider<provider::verbs_tag>);
static_assert(staged_atomic_provider<provider::efa_tag>);
static_assert(inject_capable_provider<provider::shm_tag>);
static_assert(auto_progress_provider<provider::tcp_tag>);
static_assert(manual_progress_provider<provider::slingshot_tag>);

constexpr auto verbs_inject_size = provider_traits<provider::verbs_tag>::max_inject_size;  // 64
constexpr auto shm_inject_size = provider_traits<provider::shm_tag>::max_inject_size;      // 4096

static_assert(can_inject<provider::verbs_tag>(32));    // true: 32 <= 64
static_assert(!can_inject<provider::verbs_tag>(128));  // false: 128 > 64

constexpr auto verbs_mr = get_mr_mode<provider::verbs_tag>();

static_assert(requires_manual_progress<provider::slingshot_tag>());
static_assert(requires_manual_progress<provider::shm_tag>());
static_assert(!requires_manual_progress<provider::tcp_tag>());

// ---- what the example's comments say
static_assert(verbs_inject_size == 64);
static_assert(shm_inject_size == 4096);
static_assert(verbs_mr == (mr_mode_flags::basic | mr_mode_flags::local | mr_mode_flags::prov_key));

// ---- every tag: the paragraph after the example
static_assert(provider_tag<provider::generic_tag> && provider_tag<provider::ucx_tag>);
static_assert(!provider_tag<int>, "a type without traits is no provider tag");
static_assert(!native_atomic_provider<provider::tcp_tag> && !staged_atomic_provider<provider::tcp_tag>,
              "base tcp exposes no atomics");
static_assert(!native_atomic_provider<provider::ucx_tag> && !staged_atomic_provider<provider::ucx_tag>,
              "libfabric's ucx exposes no atomics");
static_assert(native_atomic_provider<provider::slingshot_tag> && !staged_atomic_provider<provider::slingshot_tag>);
static_assert(!native_atomic_provider<provider::efa_tag>);
static_assert(auto_progress_provider<provider::verbs_tag> && !manual_progress_provider<provider::verbs_tag>);
static_assert(manual_progress_provider<provider::efa_tag>);
static_assert(manual_progress_provider<provider::ucx_tag> && !auto_progress_provider<provider::ucx_tag>,
              "ucx: manual data progress");
static_assert(provider_traits<provider::shm_tag>::data_progress == progress_mode::manual);
static_assert(provider_traits<provider::slingshot_tag>::control_progress == progress_mode::manual &&
              provider_traits<provider::slingshot_tag>::data_progress == progress_mode::manual);
// The generic tag assumes nothing: no atomics, no inject, manual progress, every MR obligation.
static_assert(!native_atomic_provider<provider::generic_tag> && !staged_atomic_provider<provider::generic_tag>);
static_assert(!inject_capable_provider<provider::generic_tag> && !can_inject<provider::generic_tag>(1));
static_assert(requires_manual_progress<provider::generic_tag>());
static_assert(get_mr_mode<provider::generic_tag>().has(mr_mode_flags::local | mr_mode_flags::prov_key));
static_assert(can_inject<provider::tcp_tag>(128) && !can_inject<provider::tcp_tag>(129));
static_assert(can_inject<provider::slingshot_tag>(192) && !can_inject<provider::slingshot_tag>(193));
static_assert(get_mr_mode<provider::tcp_tag>() == mr_mode_flags::none);

namespace {

/// The first RDM entry of exactly this provider (no utility provider layered over it), asked
/// without capabilities so that it states all of its own.
auto base_entry(std::string_view name) -> std::optional<fabric_info> {
    auto all = query_all({.ep_type = endpoint_types::rdm, .provider = name});
    if (!all) return std::nullopt;
    return all->first();
}

template <class Tag>
void expect_discovery_matches(std::string_view name) {
    using traits = provider_traits<Tag>;
    static_assert(provider_tag<Tag>);
    EXPECT_EQ(traits::name, name);
    const auto info = base_entry(name);
    ASSERT_TRUE(info) << name << " is not available here";
    const auto tx = info->get_tx_attr();
    const auto dom = info->get_domain_attr();
    ASSERT_TRUE(tx && dom);
    EXPECT_EQ(tx->inject_size, traits::max_inject_size) << name;
    EXPECT_EQ(dom->data_progress, traits::data_progress) << name;
    EXPECT_EQ(dom->data_progress == progress_mode::auto_progress, traits::supports_auto_progress) << name;
    EXPECT_EQ(info->capabilities().has(capability::atomic),
              traits::supports_native_atomics || traits::uses_staged_atomics)
        << name;
    // The provider asks no MR obligation beyond the traits' (libfabric adds none to hints).
    EXPECT_EQ((dom->mr_mode & ~(traits::mr_mode | mr_mode_flags::hmem)), mr_mode_flags::none) << name;
}

}  // namespace

TEST(SpecProviderTraits, tcp_traits_match_what_tcp_returns_here) { expect_discovery_matches<provider::tcp_tag>("tcp"); }

TEST(SpecProviderTraits, shm_traits_match_what_shm_returns_here) { expect_discovery_matches<provider::shm_tag>("shm"); }

// make_mr_cache takes provider tags: where the provider binds registrations to endpoints, the
// form without one does not compile.
template <class Tag>
concept cache_without_endpoint = requires(loom::domain& d) { loom::make_mr_cache<Tag>(d); };
static_assert(cache_without_endpoint<provider::verbs_tag> && cache_without_endpoint<provider::generic_tag>);
static_assert(!cache_without_endpoint<provider::slingshot_tag>);
static_assert(!cache_without_endpoint<int>, "not a provider tag");
static_assert(std::is_same_v<decltype(loom::make_mr_cache<provider::verbs_tag>(std::declval<loom::domain&>(),
                                                                               std::declval<loom::endpoint&>())),
                             loom::mr_cache>);

TEST(SpecProviderTraits, the_mr_cache_example_registers_through_a_tagged_cache) {
    // The spec's example, on shm (tcp's domains have no endpoint-bound registrations either).
    auto info = base_entry("shm");
    ASSERT_TRUE(info);
    auto fab = fabric::create(*info);
    ASSERT_TRUE(fab);
    auto domain = loom::domain::create(*fab, *info);
    ASSERT_TRUE(domain);
    auto ep = endpoint::create(*domain, *info);
    ASSERT_TRUE(ep);
    std::array<std::byte, 256> buffer{};
    auto cache = make_mr_cache<provider::verbs_tag>(*domain, *ep);
    auto registered = cache.lookup(std::span{buffer}, mr_access_flags::send).value();
    EXPECT_NE(registered.region().native(), nullptr);
    auto bounded = make_mr_cache<provider::verbs_tag>(
        *domain, mr_cache_limits{.max_entries = 256, .max_registered_bytes = 64 * 1024 * 1024});
    EXPECT_EQ(bounded.limits().max_entries, 256u);
    EXPECT_TRUE(bounded.status());
}
