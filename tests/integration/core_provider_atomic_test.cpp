// Provider-aware atomics and the connected-endpoint helpers: every descriptor through a
// context with and without a staging region, on the RDM providers here with atomics (loopback),
// checked against the target's bytes; the helpers without a destination over a connected
// sockets MSG endpoint pair; and the refusals, before the provider is asked.
#include <loom/loom.hpp>

#include <gtest/gtest.h>

#include "core_connection_support.hpp"
#include "core_support.hpp"

#include <array>
#include <cstdint>
#include <string>

using namespace core_test;
namespace la = loom::atomic;

namespace {

constexpr auto atomic_caps = loom::capability::msg | loom::capability::atomic | loom::capability::rma;

/// A target word and a result word with their registrations, in one domain.
struct words {
    alignas(64) std::array<std::uint64_t, 2> target{};
    alignas(64) std::array<std::uint64_t, 2> result{};
    alignas(64) std::array<std::byte, 4 * loom::atomic_staging_slot> staging{};
    loom::memory_region target_mr, result_mr;
    loom::remote_memory remote;
    auto open(loom::domain& dom) -> std::string {
        auto t = loom::memory_region::register_memory(
            dom, std::as_writable_bytes(std::span{target}),
            loom::mr_access_flags::remote_read | loom::mr_access_flags::remote_write);
        if (!t) return "target mr: " + outcome(t.error());
        target_mr = std::move(*t);
        auto r = loom::memory_region::register_memory(dom, std::as_writable_bytes(std::span{result}),
                                                      loom::mr_access_flags::read | loom::mr_access_flags::write);
        if (!r) return "result mr: " + outcome(r.error());
        result_mr = std::move(*r);
        auto rm = loom::remote_memory::from_mr(target_mr);
        if (!rm) return "remote: " + outcome(rm.error());
        remote = *rm->subregion(0, sizeof(std::uint64_t));
        return {};
    }
    auto staging_region(loom::domain& dom) -> loom::result<loom::memory_region> {
        return loom::memory_region::register_memory(dom, std::span{staging},
                                                    loom::mr_access_flags::read | loom::mr_access_flags::write);
    }
};

/// Submits `op` through `ctx` (again while the provider connects: retried) and waits for it.
template <class P, class Op>
void run(loom::provider_atomic_context<P>& ctx, loom_test::progress& prog, const Op& op) {
    ASSERT_EQ(outcome(prog.retry([&] { return ctx.execute(op); }, 5s)), "ok");
    (void)completed(prog, op.context);
}

/// Runs the four descriptors through `ctx` against `w.target`, destination `peer`.
template <class P>
void run_descriptors(loom::provider_atomic_context<P>& ctx, loom::endpoint& ep, loom::completion_queue& cq, words& w,
                     loom::fabric_addr peer) {
    loom::request_context rc;
    loom_test::progress prog(cq);
    using u64 = std::uint64_t;
    w.target[0] = 100;
    ASSERT_NO_FATAL_FAILURE(
        run(ctx, prog, loom::fetch_add_op<u64>{&ep, 5, &w.result[0], &w.result_mr, w.remote, &rc, peer}));
    EXPECT_EQ(w.result[0], 100u);
    EXPECT_EQ(w.target[0], 105u);

    ASSERT_NO_FATAL_FAILURE(run(ctx, prog, loom::atomic_add_op<u64>{&ep, 10, nullptr, w.remote, &rc, peer}));
    EXPECT_EQ(w.target[0], 115u);

    ASSERT_NO_FATAL_FAILURE(
        run(ctx, prog, loom::compare_swap_op<u64>{&ep, 115, 7, &w.result[0], &w.result_mr, w.remote, &rc, peer}));
    EXPECT_EQ(w.result[0], 115u);
    EXPECT_EQ(w.target[0], 7u) << "the comparison held: swapped";
    ASSERT_NO_FATAL_FAILURE(
        run(ctx, prog, loom::compare_swap_op<u64>{&ep, 115, 9, &w.result[0], &w.result_mr, w.remote, &rc, peer}));
    EXPECT_EQ(w.result[0], 7u);
    EXPECT_EQ(w.target[0], 7u) << "the comparison failed: unchanged";

    ASSERT_NO_FATAL_FAILURE(
        run(ctx, prog,
            loom::generic_fetch_op<u64>{&ep, la::operation::max, 40, &w.result[0], &w.result_mr, w.remote, &rc, peer}));
    EXPECT_EQ(w.result[0], 7u);
    EXPECT_EQ(w.target[0], 40u);
    ASSERT_NO_FATAL_FAILURE(run(ctx, prog,
                                loom::generic_fetch_op<u64>{&ep, la::operation::atomic_read, 0, &w.result[0],
                                                            &w.result_mr, w.remote, &rc, peer}));
    EXPECT_EQ(w.result[0], 40u);
    EXPECT_EQ(w.target[1], 0u) << "the word after the target is untouched";
}

class ProviderAtomic : public ::testing::TestWithParam<std::string> {};

}  // namespace

// The generic tag runs on any provider; shm also runs under its own tag.
TEST_P(ProviderAtomic, descriptors_move_the_target_inline_and_staged) {
    loop_stack s;
    ASSERT_NO_FATAL_FAILURE(must_open_loop(GetParam(), {.caps = atomic_caps}, s));
    words w;
    ASSERT_EQ(w.open(s.domain), "");

    loom::provider_atomic_context<loom::provider::generic_tag> inline_ctx(s.domain);
    EXPECT_FALSE(inline_ctx.has_staging_mr());
    ASSERT_NO_FATAL_FAILURE(run_descriptors(inline_ctx, s.ep, s.cq, w, s.self));

    auto staging = w.staging_region(s.domain);
    ASSERT_TRUE(staging) << outcome(staging.error());
    loom::provider_atomic_context<loom::provider::generic_tag> staged_ctx(s.domain, std::move(*staging));
    EXPECT_TRUE(staged_ctx.has_staging_mr());
    ASSERT_NO_FATAL_FAILURE(run_descriptors(staged_ctx, s.ep, s.cq, w, s.self));
    // Four slots used in turn, then from the first again: the fifth call (max 40) staged its
    // operand in slot 0, the second (add 10) in slot 1 before the sixth (a read) overwrote it.
    std::uint64_t staged{};
    std::memcpy(&staged, w.staging.data(), sizeof staged);
    EXPECT_EQ(staged, 40u) << "the fifth call's operand in the first slot";
    std::memcpy(&staged, w.staging.data() + 2 * loom::atomic_staging_slot, sizeof staged);
    EXPECT_EQ(staged, 115u) << "the first compare-and-swap's comparand in the third slot";

    if (GetParam() == "shm") {
        loom::provider_atomic_context<loom::provider::shm_tag> shm_ctx(s.domain);
        EXPECT_TRUE(shm_ctx.provider_stages_atomics());
        EXPECT_FALSE(shm_ctx.requires_staging());
        loom::request_context rc;
        w.target[0] = 1;
        ASSERT_EQ(outcome(loom::provider_atomic::fetch_add(shm_ctx, s.ep, std::uint64_t{2}, &w.result[0], w.result_mr,
                                                           w.remote, &rc)),
                  "invalid_argument")
            << "no destination on an RDM endpoint";
        loom_test::progress prog(s.cq);
        ASSERT_NO_FATAL_FAILURE(
            run(shm_ctx, prog,
                loom::fetch_add_op<std::uint64_t>{&s.ep, 2, &w.result[0], &w.result_mr, w.remote, &rc, s.self}));
        EXPECT_EQ(w.target[0], 3u);
    }
}

// The legacy entry points without a context: execute_native() borrows the descriptor,
// execute_staged() the caller's registered buffer, and an add's own region stages its operand.
TEST_P(ProviderAtomic, descriptors_run_without_a_context) {
    loop_stack s;
    ASSERT_NO_FATAL_FAILURE(must_open_loop(GetParam(), {.caps = atomic_caps}, s));
    words w;
    ASSERT_EQ(w.open(s.domain), "");
    auto staging = w.staging_region(s.domain);
    ASSERT_TRUE(staging);
    loom_test::progress prog(s.cq);
    loom::request_context rc;
    w.target[0] = 1;
    const loom::fetch_add_op<std::uint64_t> native{&s.ep, 2, &w.result[0], &w.result_mr, w.remote, &rc, s.self};
    ASSERT_EQ(outcome(prog.retry([&] { return native.execute_native(); }, 5s)), "ok");
    (void)completed(prog, &rc);
    EXPECT_EQ(w.result[0], 1u);
    EXPECT_EQ(w.target[0], 3u);

    const loom::compare_swap_op<std::uint64_t> cas{&s.ep, 3, 30, &w.result[0], &w.result_mr, w.remote, &rc, s.self};
    ASSERT_EQ(outcome(cas.execute_staged(*staging, std::span{w.staging}.subspan(64, 64))), "ok");
    (void)completed(prog, &rc);
    EXPECT_EQ(w.target[0], 30u);
    std::array<std::uint64_t, 2> staged{};
    std::memcpy(staged.data(), w.staging.data() + 64, sizeof staged);
    EXPECT_EQ(staged, (std::array<std::uint64_t, 2>{3, 30})) << "comparand and replacement staged in the buffer";
    EXPECT_EQ(outcome(cas.execute_staged(*staging, std::span{w.staging}.subspan(8, 8))), "invalid_argument")
        << "a buffer too small for both operands";
    std::array<std::byte, 64> unregistered{};
    EXPECT_EQ(outcome(cas.execute_staged(*staging, std::span{unregistered})), "invalid_argument")
        << "a buffer the staging region does not cover";

    const loom::atomic_add_op<std::uint64_t> add{&s.ep, 12, &*staging, w.remote, &rc, s.self};
    ASSERT_EQ(outcome(add.execute_native()), "ok");
    (void)completed(prog, &rc);
    EXPECT_EQ(w.target[0], 42u);
    std::uint64_t first{};
    std::memcpy(&first, w.staging.data(), sizeof first);
    EXPECT_EQ(first, 12u) << "the add's operand staged at the start of its own region";
}

INSTANTIATE_TEST_SUITE_P(Providers, ProviderAtomic, ::testing::Values("shm", "sockets", "tcp;ofi_rxm"), param_name);

TEST(ProviderAtomicRefusals, wrong_domain_provider_staging_and_arguments) {
    loop_stack s, other;
    ASSERT_NO_FATAL_FAILURE(must_open_loop("shm", {.caps = atomic_caps}, s));
    ASSERT_NO_FATAL_FAILURE(must_open_loop("shm", {.caps = atomic_caps}, other));
    words w;
    ASSERT_EQ(w.open(s.domain), "");
    loom::request_context rc;
    const loom::fetch_add_op<std::uint64_t> op{&s.ep, 1, &w.result[0], &w.result_mr, w.remote, &rc, s.self};

    loom::provider_atomic_context<loom::provider::generic_tag> elsewhere(other.domain);
    EXPECT_EQ(outcome(elsewhere.execute(op)), "invalid_argument") << "an endpoint of another domain";
    loom::provider_atomic_context<loom::provider::verbs_tag> verbs(s.domain);
    EXPECT_EQ(outcome(verbs.execute(op)), "not_supported") << "the domain does not run verbs";

    loom::provider_atomic_context<loom::provider::shm_tag> ctx(s.domain);
    auto null_ep = op;
    null_ep.ep = nullptr;
    EXPECT_EQ(outcome(ctx.execute(null_ep)), "invalid_argument");
    auto null_result = op;
    null_result.result = nullptr;
    EXPECT_EQ(outcome(ctx.execute(null_result)), "invalid_argument");
    EXPECT_EQ(outcome(ctx.execute(
                  loom::compare_swap_op<std::uint64_t>{&s.ep, 1, 2, nullptr, &w.result_mr, w.remote, &rc, s.self})),
              "invalid_argument");
    EXPECT_EQ(outcome(ctx.execute(loom::generic_fetch_op<std::uint64_t>{&s.ep, la::operation::cswap, 1, &w.result[0],
                                                                        &w.result_mr, w.remote, &rc, s.self})),
              "invalid_argument")
        << "a compare operation through the fetch descriptor";

    // A staging region smaller than a slot, and one of another domain.
    auto small =
        loom::memory_region::register_memory(s.domain, std::span{w.staging}.first(16), loom::mr_access_flags::read);
    ASSERT_TRUE(small);
    ctx.set_staging_mr(std::move(*small));
    EXPECT_EQ(outcome(ctx.execute(op)), "invalid_argument");
    auto foreign = w.staging_region(other.domain);
    ASSERT_TRUE(foreign);
    ctx.set_staging_mr(std::move(*foreign));
    EXPECT_EQ(outcome(ctx.execute(op)), "invalid_argument") << "the staging region is not usable with the endpoint";
    EXPECT_FALSE(next_event(s.cq, 200ms)) << "a refused operation completed";
}

// The original helpers take no destination: they serve connected endpoints, and an RDM
// endpoint refuses them.
TEST(ConnectedAtomics, helpers_without_destination_on_a_connected_pair) {
    connected_pair pair;
    ASSERT_EQ(pair.open("sockets", atomic_caps), "");
    auto& client = pair.client;
    auto& server = pair.server;

    words target, local;
    ASSERT_EQ(target.open(server.dom), "");
    ASSERT_EQ(local.open(client.dom), "");
    loom::request_context rc;
    target.target[0] = 10;
    const std::uint64_t three = 3;
    ASSERT_EQ(outcome(la::add(client.ep, three, target.remote, &rc)), "ok");
    EXPECT_TRUE(completes(client.cq, &rc));
    EXPECT_EQ(target.target[0], 13u);
    const std::uint64_t two = 2;
    ASSERT_EQ(outcome(la::fetch_add(client.ep, two, &local.result[0], local.result_mr, target.remote, &rc)), "ok");
    EXPECT_TRUE(completes(client.cq, &rc));
    EXPECT_EQ(local.result[0], 13u);
    EXPECT_EQ(target.target[0], 15u);
    const std::uint64_t expected = 15, desired = 1;
    ASSERT_EQ(outcome(la::cas(client.ep, expected, desired, &local.result[0], local.result_mr, target.remote, &rc)),
              "ok");
    EXPECT_TRUE(completes(client.cq, &rc));
    EXPECT_EQ(local.result[0], 15u);
    EXPECT_EQ(target.target[0], 1u);
    ASSERT_EQ(outcome(la::fetch<std::uint64_t>(client.ep, la::operation::atomic_read, nullptr, &local.result[1], 1,
                                               nullptr, &local.result_mr, target.remote, &rc)),
              "ok");
    EXPECT_TRUE(completes(client.cq, &rc));
    EXPECT_EQ(local.result[1], 1u);
    EXPECT_EQ(outcome(la::fetch<std::uint64_t>(client.ep, la::operation::sum, nullptr, &local.result[1], 1, nullptr,
                                               &local.result_mr, target.remote, &rc)),
              "invalid_argument")
        << "a sum needs an operand";

    // The provider-aware context on the connected endpoint (no peer in the descriptor).
    loom::provider_atomic_context<loom::provider::generic_tag> ctx(client.dom);
    ASSERT_EQ(outcome(loom::provider_atomic::fetch_op(ctx, client.ep, la::operation::sum, std::uint64_t{4},
                                                      &local.result[0], local.result_mr, target.remote, &rc)),
              "ok");
    EXPECT_TRUE(completes(client.cq, &rc));
    EXPECT_EQ(local.result[0], 1u);
    EXPECT_EQ(target.target[0], 5u);
    ASSERT_EQ(outcome(client.ep.shutdown()), "ok");
}

TEST(ConnectedAtomics, an_rdm_endpoint_refuses_helpers_without_destination) {
    loop_stack s;
    ASSERT_NO_FATAL_FAILURE(must_open_loop("sockets", {.caps = atomic_caps}, s));
    words w;
    ASSERT_EQ(w.open(s.domain), "");
    loom::request_context rc;
    const std::uint64_t one = 1;
    EXPECT_EQ(outcome(la::add(s.ep, one, w.remote, &rc)), "invalid_argument");
    EXPECT_EQ(outcome(la::fetch_add(s.ep, one, &w.result[0], w.result_mr, w.remote, &rc)), "invalid_argument");
    EXPECT_EQ(outcome(la::cas(s.ep, one, one, &w.result[0], w.result_mr, w.remote, &rc)), "invalid_argument");
    EXPECT_FALSE(next_event(s.cq, 200ms)) << "a refused operation completed";
}
