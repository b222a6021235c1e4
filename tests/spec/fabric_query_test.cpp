// "Compile-Time Fabric Queries": the spec's example compiled and run (std::println as printf),
// the descriptors' combined requirements, and queries held against query_all with the same
// hints on the providers here.
#include <loom/loom.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>

using namespace loom;

// ---- the spec's example, unchanged but for main and std::println
using rdm_query = fabric_query<rdm_tagged_messaging>;
using rma_query = fabric_query<rdma_write_ops, rdma_read_ops>;
using atomic_query = fabric_query<atomic_ops>;
using gpu_query = fabric_query<gpu_direct_rdma>;

using full_query = fabric_query<rdm_tagged_messaging, rdma_write_ops, atomic_ops>;

static_assert(rdm_query::get_endpoint_type() == endpoint_types::rdm);
static_assert(rma_query::get_required_caps().has(capability::rma));
static_assert(full_query::get_required_caps().has(capability::tagged));
static_assert(full_query::get_required_caps().has(capability::rma));
static_assert(full_query::get_required_caps().has(capability::atomic));

namespace {

auto spec_main() -> int {
    auto providers = rdm_query::query();
    if (!providers) {
        return 1;
    }
    for (const auto& info : *providers) {
        auto fabric_attr = info.get_fabric_attr();
        if (fabric_attr) {
            std::printf("Found provider: %.*s\n", static_cast<int>(fabric_attr->provider_name.size()),
                        fabric_attr->provider_name.data());
        }
    }
    auto first = atomic_query::query_first();
    auto tagged_providers = query_providers<rdm_tagged_messaging>();
    auto filtered = query_providers<rdma_write_ops>([](const fabric_info& info) {
        auto attr = info.get_domain_attr();
        return attr && attr->data_progress == progress_mode::auto_progress;
    });
    (void)first;
    (void)tagged_providers;
    (void)filtered;
    return 0;
}

// ---- the descriptors
static_assert(capability_descriptor<rdma_read_ops> && !capability_descriptor<int>);
static_assert(rma_query::get_required_caps() == (capability::rma | capability::read | capability::write |
                                                 capability::remote_read | capability::remote_write),
              "read and write profiles need both directions");
static_assert(rma_query::get_endpoint_type() == endpoint_types::unspecified);
static_assert(full_query::get_endpoint_type() == endpoint_types::rdm);
static_assert(gpu_query::get_required_caps() == (capability::rma | capability::hmem));
static_assert(full_query::hints().capabilities == full_query::get_required_caps());
static_assert(full_query::hints().ep_type == endpoint_types::rdm);

/// An application's own descriptor: only the directions it uses.
struct remote_write_target {
    static constexpr capability caps = capability::rma | capability::remote_write;
    static constexpr endpoint_types ep_type = endpoint_types::rdm;
};
static_assert(fabric_query<remote_write_target>::get_required_caps() == (capability::rma | capability::remote_write));
struct msg_endpoints {
    static constexpr capability caps = capability::msg;
    static constexpr endpoint_types ep_type = endpoint_types::msg;
};
static_assert(!detail::endpoint_types_agree<rdm_tagged_messaging, msg_endpoints>(),
              "fabric_query<rdm_tagged_messaging, msg_endpoints> does not compile");

/// Multicast on RDM endpoints: no provider of this machine has it.
struct rdm_multicast {
    static constexpr capability caps = capability::multicast;
    static constexpr endpoint_types ep_type = endpoint_types::rdm;
};

auto names(const provider_range& r) -> std::multiset<std::string> {
    std::multiset<std::string> out;
    for (const auto& i : r) out.emplace(i.provider_name());
    return out;
}

}  // namespace

TEST(SpecFabricQuery, the_example_runs) { EXPECT_EQ(spec_main(), 0); }

TEST(SpecFabricQuery, query_returns_what_query_all_returns_for_the_same_hints) {
    auto q = full_query::query();
    auto direct = query_all({.capabilities = capability::msg | capability::tagged | capability::rma |
                                             capability::write | capability::remote_write | capability::atomic,
                             .ep_type = endpoint_types::rdm});
    ASSERT_TRUE(q && direct);
    EXPECT_EQ(names(*q), names(*direct));
    for (const auto& info : *q) {
        EXPECT_EQ(info.ep_type(), endpoint_types::rdm);
        EXPECT_TRUE(info.capabilities().has(full_query::get_required_caps())) << info.provider_name();
    }
    const auto tagged = names(*rdm_query::query());
    EXPECT_TRUE(tagged.contains("tcp") && tagged.contains("shm")) << "the providers of this machine";
}

TEST(SpecFabricQuery, query_first_is_the_preferred_match_or_none) {
    auto first = atomic_query::query_first();
    ASSERT_TRUE(first);
    ASSERT_TRUE(first->has_value()) << "shm and sockets offer atomics here";
    auto all = atomic_query::query();
    ASSERT_TRUE(all);
    EXPECT_EQ((*first)->provider_name(), all->first()->provider_name());
    EXPECT_TRUE((*first)->capabilities().has(capability::atomic));

    // Device-memory RMA: whatever is found offers FI_HMEM, in query()'s order.
    auto gpu = gpu_query::query_first();
    ASSERT_TRUE(gpu) << gpu.error().message();
    auto gpu_all = query_providers<gpu_direct_rdma>();
    if (gpu->has_value()) {
        ASSERT_TRUE(gpu_all);
        EXPECT_EQ((*gpu)->provider_name(), gpu_all->first()->provider_name());
        for (const auto& info : *gpu_all) EXPECT_TRUE(info.capabilities().has(capability::hmem | capability::rma));
    } else {
        EXPECT_EQ(gpu_all.error(), make_error_code(errc::no_data));
    }

    // A requirement no provider here meets: no match, and not an error.
    auto none = fabric_query<rdm_multicast>::query_first();
    ASSERT_TRUE(none) << none.error().message();
    EXPECT_FALSE(none->has_value());
    auto none_all = query_providers<rdm_multicast>();
    ASSERT_FALSE(none_all);
    EXPECT_EQ(none_all.error(), make_error_code(errc::no_data));
}

TEST(SpecFabricQuery, a_predicate_keeps_the_matches_it_accepts_in_order) {
    auto all = query_providers<rdm_tagged_messaging>();
    ASSERT_TRUE(all);
    auto automatic = query_providers<rdm_tagged_messaging>([](const fabric_info& info) {
        auto attr = info.get_domain_attr();
        return attr && attr->data_progress == progress_mode::auto_progress;
    });
    ASSERT_TRUE(automatic);
    std::vector<std::string> expected;
    for (const auto& info : *all)
        if (info.get_domain_attr()->data_progress == progress_mode::auto_progress)
            expected.emplace_back(info.provider_name());
    std::vector<std::string> got;
    for (const auto& info : *automatic) got.emplace_back(info.provider_name());
    EXPECT_EQ(got, expected);
    EXPECT_NE(std::ranges::find(got, "tcp"), got.end()) << "native tcp progresses by itself";
    EXPECT_EQ(std::ranges::find(got, "shm"), got.end()) << "shm needs manual data progress";

    auto none = query_providers<rdm_tagged_messaging>([](const fabric_info&) { return false; });
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->empty());
}
