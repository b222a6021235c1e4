// Unit tests (no provider) for the pre-submission checks of shared receive contexts
// (loom/shared_rx_context.hpp), tagged reservations (loom/tagged_claim.hpp), raw-key exports
// and mappings and the RMA-event binding order of memory_region: on default-constructed
// objects every call must fail cleanly, with the documented code, before any native call.
#include <gtest/gtest.h>
#include <rdma/fi_errno.h>

#include <array>
#include <cstddef>
#include <limits>
#include <loom/completion_queue.hpp>
#include <loom/counter.hpp>
#include <loom/endpoint.hpp>
#include <loom/memory_region.hpp>
#include <loom/msg.hpp>
#include <loom/shared_rx_context.hpp>
#include <loom/tagged_claim.hpp>
#include <type_traits>
#include <utility>

#include "unit_support.hpp"

namespace {

using loom::errc;
using loom::test::error_of;

// ---------------------------------------------------------------- receive_target
static_assert(loom::receive_target<loom::endpoint>);
static_assert(loom::receive_target<loom::shared_rx_context>);
static_assert(!loom::receive_target<const loom::shared_rx_context>);
static_assert(!loom::receive_target<loom::completion_queue>);
static_assert(!loom::receive_target<int>);
static_assert(!std::is_copy_constructible_v<loom::shared_rx_context>);
static_assert(std::is_nothrow_move_constructible_v<loom::shared_rx_context>);
static_assert(!std::is_copy_constructible_v<loom::msg::tagged_claim>);
static_assert(!std::is_move_constructible_v<loom::msg::tagged_claim>);
static_assert(!std::is_move_assignable_v<loom::msg::tagged_claim>);
static_assert(!std::is_copy_constructible_v<loom::mapped_remote_memory>);
static_assert(std::is_nothrow_move_constructible_v<loom::mapped_remote_memory>);
static_assert(std::is_nothrow_move_assignable_v<loom::mapped_remote_memory>);

class DefaultSrx : public ::testing::Test {
protected:
    loom::shared_rx_context srx;
    loom::request_context ctx;
    std::array<std::byte, 64> buf{};
    std::array<::iovec, 2> iov{{{buf.data(), 32}, {buf.data() + 32, 32}}};
    std::array<void*, 2> desc{{nullptr, nullptr}};
    loom::fabric_addr peer{3};
};

TEST_F(DefaultSrx, InitialState) {
    EXPECT_FALSE(srx.valid());
    EXPECT_EQ(srx.native(), nullptr);
    EXPECT_EQ(srx.domain_native(), nullptr);
    EXPECT_EQ(srx.iov_limits().rx, 0u);
    EXPECT_EQ(srx.iov_limits().tx, 0u);
    EXPECT_EQ(srx.iov_limits().rma, 0u);
    EXPECT_TRUE(srx.capabilities().empty());
    EXPECT_TRUE(srx.rx_op_flags().empty());
    EXPECT_FALSE(srx.context_required());
    EXPECT_EQ(srx.open_endpoints(), 0);
    EXPECT_EQ(srx.check_rx(loom::capability::msg, loom::fabric_addrs::unspecified, &ctx), FI_EOPBADSTATE);
    EXPECT_EQ(srx.check_rx_iov(loom::capability::tagged, {}, {}, loom::fabric_addrs::unspecified, &ctx),
              FI_EOPBADSTATE);
    // The descriptor-count mismatch is judged first, as for endpoints.
    EXPECT_EQ(srx.check_rx_iov(loom::capability::msg, iov, std::span<void* const>{desc}.first(1), peer, &ctx),
              FI_EINVAL);
    EXPECT_TRUE(srx.close().has_value()) << "closing an empty SRX is a no-op";
    EXPECT_EQ(error_of(srx.cancel(&ctx)), errc::bad_state);
}

TEST_F(DefaultSrx, CreateRejectsInvalidObjects) {
    loom::domain dom;
    loom::fabric_info info;
    EXPECT_EQ(error_of(loom::shared_rx_context::create(dom, info)), errc::invalid_argument);
}

TEST_F(DefaultSrx, EveryReceiveHelperReportsBadState) {
    std::span<std::byte> b{buf};
    EXPECT_EQ(error_of(loom::recv(srx, b, loom::fabric_addrs::unspecified, nullptr, &ctx)), errc::bad_state);
    EXPECT_EQ(error_of(loom::recvv(srx, iov, desc, loom::fabric_addrs::unspecified, &ctx)), errc::bad_state);
    EXPECT_EQ(error_of(loom::tagged_recv(srx, b, 7, 0, loom::fabric_addrs::unspecified, nullptr, &ctx)),
              errc::bad_state);
    EXPECT_EQ(error_of(loom::tagged_recvv(srx, iov, desc, 7, 0xff, peer, &ctx)), errc::bad_state);
    loom::msg::receive_message<loom::request_context*> rm{.context = &ctx};
    rm.iov.push_back(iov[0]);
    EXPECT_EQ(error_of(loom::msg::recvmsg(srx, rm)), errc::bad_state);
    EXPECT_EQ(error_of(loom::msg::recvmsg<loom::operation_defaults::inherit>(srx, rm, loom::op_flag::completion)),
              errc::bad_state);
    loom::msg::tagged_receive_message<loom::request_context*> tm{.tag = 1, .context = &ctx};
    EXPECT_EQ(error_of(loom::msg::tagged_recvmsg<loom::operation_defaults::inherit_without_more>(srx, tm)),
              errc::bad_state);
    // Mismatched descriptor counts are invalid before the state is looked at.
    EXPECT_EQ(error_of(loom::recvv(srx, iov, std::span<void* const>{desc}.first(1), peer, &ctx)),
              errc::invalid_argument);
}

TEST_F(DefaultSrx, MovedFromStaysEmpty) {
    loom::shared_rx_context moved = std::move(srx);
    EXPECT_FALSE(moved.valid());
    EXPECT_FALSE(srx.valid());  // NOLINT(bugprone-use-after-move)
}

TEST(DefaultEndpointSrx, BindSrxNeedsValidObjects) {
    loom::endpoint ep;
    loom::shared_rx_context srx;
    EXPECT_EQ(error_of(ep.bind_srx(srx)), errc::invalid_argument);
    EXPECT_FALSE(ep.bound_to_srx());
}

TEST(ReceiveChecks, SharedCheckRules) {
    using loom::capability;
    const auto any = loom::fabric_addrs::unspecified;
    const loom::fabric_addr peer{1};
    loom::request_context c;
    // ready, caps, needs_context, family, src, ctx
    EXPECT_EQ(loom::detail::check_receive(false, capability::msg, false, capability::msg, any, &c), FI_EOPBADSTATE);
    EXPECT_EQ(loom::detail::check_receive(true, capability::msg, false, capability::msg, any, nullptr), 0);
    EXPECT_EQ(loom::detail::check_receive(true, capability::msg, false, capability::tagged, any, &c), FI_EINVAL);
    EXPECT_EQ(loom::detail::check_receive(true, capability::msg, true, capability::msg, any, nullptr), FI_EINVAL);
    EXPECT_EQ(loom::detail::check_receive(true, capability::msg, false, capability::msg, peer, &c), FI_EINVAL);
    EXPECT_EQ(loom::detail::check_receive(true, capability::msg | capability::directed_recv, false, capability::msg,
                                          peer, &c),
              0);
    std::array<std::byte, 8> b{};
    std::array<::iovec, 3> three{{{b.data(), 2}, {b.data() + 2, 2}, {b.data() + 4, 4}}};
    std::array<void*, 3> d{};
    EXPECT_EQ(loom::detail::check_receive_iov(true, capability::msg, false, 2, capability::msg, three, d, any, &c),
              FI_EINVAL)
        << "above the IOV limit";
    EXPECT_EQ(loom::detail::check_receive_iov(true, capability::msg, false, 3, capability::msg, three, d, any, &c), 0);
    EXPECT_EQ(loom::detail::check_receive_iov(true, capability::msg, false, 3, capability::msg, three,
                                              std::span<void* const>{d}.first(2), any, &c),
              FI_EINVAL);
    EXPECT_EQ(loom::detail::check_receive_iov(false, capability::msg, false, 3, capability::msg, three, {}, any, &c),
              FI_EOPBADSTATE);
}

// ---------------------------------------------------------------- tagged_claim
TEST(DefaultClaim, EverySubmissionIsRefusedOnAnUnusableEndpoint) {
    loom::endpoint ep;
    loom::msg::tagged_claim claim{ep};
    EXPECT_EQ(claim.phase(), loom::msg::claim_phase::idle);
    EXPECT_FALSE(claim.active());
    EXPECT_FALSE(claim.completion().has_value());
    EXPECT_NE(claim.context(), nullptr);
    EXPECT_EQ(error_of(claim.probe(5)), errc::bad_state);
    EXPECT_EQ(claim.phase(), loom::msg::claim_phase::idle) << "a refused probe leaves the claim idle";
    std::array<std::byte, 16> b{};
    EXPECT_EQ(error_of(claim.receive(b)), errc::bad_state) << "receive before a reservation";
    EXPECT_EQ(error_of(claim.discard()), errc::bad_state) << "discard before a reservation";
    loom::completion_event mine{.context = claim.context()};
    EXPECT_EQ(error_of(claim.observe(mine)), errc::bad_state) << "nothing outstanding";
    loom::request_context other;
    loom::completion_event foreign{.context = &other};
    EXPECT_EQ(error_of(claim.observe(foreign)), errc::invalid_argument);
    EXPECT_FALSE(claim.completion().has_value()) << "refused observations keep nothing";
    // The endpoint is not open: retiring is allowed (and a no-op here).
    EXPECT_TRUE(claim.retire_after_close().has_value());
    EXPECT_EQ(claim.tag(), 0u);
}

TEST(DefaultClaim, UserDataTravelsInTheContext) {
    loom::endpoint ep;
    loom::msg::tagged_claim claim{ep};
    int marker = 0;
    claim.set_user_data(&marker);
    EXPECT_EQ(claim.user_data(), &marker);
    const loom::completion_event ev{.context = claim.context()};
    ASSERT_NE(ev.request(), nullptr);
    EXPECT_EQ(ev.request()->user_data, &marker) << "dispatch from a shared CQ by request()->user_data";
    EXPECT_EQ(error_of(claim.probe(1)), errc::bad_state);
    EXPECT_TRUE(claim.retire_after_close().has_value());
    EXPECT_EQ(claim.user_data(), &marker) << "retiring keeps the application's data";
}

TEST(DefaultClaim, TwoClaimsUseDistinctContexts) {
    loom::endpoint ep;
    loom::msg::tagged_claim a{ep}, b{ep};
    EXPECT_NE(a.context(), b.context());
    loom::completion_event ev{.context = a.context()};
    EXPECT_EQ(error_of(b.observe(ev)), errc::invalid_argument);
}

// ---------------------------------------------------------------- raw keys / mapped memory
TEST(RawKeys, ExportFromAnUnregisteredRegionIsInvalid) {
    const loom::memory_region mr;
    EXPECT_EQ(error_of(mr.export_raw()), errc::invalid_argument);
    EXPECT_EQ(error_of(mr.key()), errc::invalid_argument);
}

TEST(RawKeys, MapChecksItsArguments) {
    loom::domain dom;  // not open
    loom::raw_remote_memory raw{.base_addr = 0x1000, .addr = 0x1000, .length = 64, .key = {1, 2, 3, 4}};
    EXPECT_EQ(error_of(loom::mapped_remote_memory::map(dom, raw)), errc::invalid_argument);
    EXPECT_EQ(error_of(loom::mapped_remote_memory::map(dom, {})), errc::invalid_argument);
}

TEST(RawKeys, DefaultMappingIsEmptyAndMovesAreSafe) {
    loom::mapped_remote_memory m;
    EXPECT_FALSE(m.valid());
    EXPECT_EQ(error_of(m.remote()), errc::bad_state);
    EXPECT_TRUE(m.close().has_value());
    EXPECT_TRUE(m.close().has_value()) << "close is idempotent";
    loom::mapped_remote_memory n{std::move(m)};
    EXPECT_FALSE(n.valid());
    auto& alias = n;  // self-assignment through an alias (a direct self-move is a clang warning)
    n = std::move(alias);
    EXPECT_FALSE(n.valid());
    loom::mapped_remote_memory o;
    o = std::move(n);
    EXPECT_FALSE(o.valid());
    EXPECT_TRUE(o.raw().key.empty());
}

TEST(RawKeys, RawMetadataComparesEveryField) {
    const loom::raw_remote_memory a{.base_addr = 1, .addr = 2, .length = 3, .key = {9, 8}};
    auto b = a;
    EXPECT_EQ(a, b);
    b.key.push_back(0);
    EXPECT_NE(a, b) << "every key byte counts";
    b = a;
    b.base_addr = 5;
    EXPECT_NE(a, b) << "mapping base and RMA address are distinct fields";
}

// ---------------------------------------------------------------- RMA events
TEST(RmaEvents, BindingAndEnablingAnUnregisteredRegionIsInvalid) {
    loom::memory_region mr;
    loom::counter c;
    loom::endpoint ep;
    EXPECT_FALSE(mr.rma_events());
    EXPECT_FALSE(mr.enable_required());
    EXPECT_FALSE(mr.enabled());
    EXPECT_EQ(error_of(mr.bind(c)), errc::invalid_argument);
    EXPECT_EQ(error_of(mr.bind(ep)), errc::invalid_argument);
    EXPECT_EQ(error_of(mr.enable()), errc::invalid_argument);
    EXPECT_FALSE(mr.enabled());
}

TEST(ChildLink, CountsWhileHeld) {
    auto parent = loom::detail::make_child_count(nullptr);
    {
        loom::detail::child_link a{parent};
        EXPECT_EQ(parent->load(), 1);
        loom::detail::child_link b{std::move(a)};
        EXPECT_EQ(parent->load(), 1) << "a move transfers the count";
        EXPECT_FALSE(a);  // NOLINT(bugprone-use-after-move)
        loom::detail::child_link c{parent};
        EXPECT_EQ(parent->load(), 2);
        c = std::move(b);
        EXPECT_EQ(parent->load(), 1) << "move assignment releases the old link";
        c.reset();
        EXPECT_EQ(parent->load(), 0);
        loom::detail::child_link d{parent};
        loom::detail::child_link e;
        d.swap(e);
        EXPECT_FALSE(d);
        EXPECT_TRUE(e);
        EXPECT_EQ(parent->load(), 1);
    }
    EXPECT_EQ(parent->load(), 0) << "destruction releases";
}

}  // namespace
