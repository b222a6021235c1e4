// Unit tests for loom/trigger.hpp and loom/scalable_endpoint.hpp without a provider: the
// pre-submission checks as pure functions, and every factory on default-constructed
// (never created) objects, which must fail cleanly before any native call.
#include <gtest/gtest.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_errno.h>

#include <array>
#include <complex>
#include <cstdint>
#include <limits>
#include <loom/address_vector.hpp>
#include <loom/scalable_endpoint.hpp>
#include <loom/trigger.hpp>
#include <type_traits>

#include "unit_support.hpp"

namespace {

using loom::errc;
using loom::remote_memory;
using loom::test::error_of;
using loom::trigger::deferred_work;
using loom::trigger::threshold_condition;
namespace td = loom::trigger::detail;

constexpr loom::iov_limits limits{.tx = 4, .rx = 4, .rma = 2};

auto iov(std::byte* p, std::size_t n) -> ::iovec { return {p, n}; }

// ---------------------------------------------------------------- conditions and counters
TEST(trigger_checks, condition_needs_an_open_counter_of_the_domain) {
    loom::counter closed;
    auto* some_domain = reinterpret_cast<::fid_domain*>(0x1000);
    EXPECT_EQ(td::check_condition({nullptr, 1}, some_domain), FI_EINVAL);
    EXPECT_EQ(td::check_condition({&closed, 1}, some_domain), FI_EINVAL);
    EXPECT_EQ(td::check_condition({&closed, 0}, nullptr), FI_EINVAL);
    EXPECT_EQ(td::check_counter(nullptr, some_domain), FI_EINVAL);
    EXPECT_EQ(td::check_counter(&closed, some_domain), FI_EINVAL);
}

TEST(trigger_checks, flags_and_message_context) {
    EXPECT_EQ(td::check_flags({}), 0);
    EXPECT_EQ(td::check_flags(loom::op_flag::remote_cq_data | loom::op_flag::fence), 0);
    EXPECT_EQ(td::check_flags(loom::op_flag::inject), FI_EINVAL);
    EXPECT_EQ(td::check_flags(loom::op_flag::inject | loom::op_flag::completion), FI_EINVAL);
    int x = 0;
    EXPECT_EQ(td::check_message_context(nullptr), 0);
    EXPECT_EQ(td::check_message_context(&x), FI_EINVAL);
}

// ---------------------------------------------------------------- RMA segments
TEST(trigger_checks, rma_segments) {
    std::array<std::byte, 64> buf{};
    const std::array<::iovec, 2> local{iov(buf.data(), 24), iov(buf.data() + 24, 40)};
    const std::array<remote_memory, 2> remote{remote_memory{0x1000, 7, 32}, remote_memory{0x2000, 7, 32}};
    const std::array<void*, 2> desc{nullptr, nullptr};
    EXPECT_EQ(td::check_rma(local, desc, remote, limits), 0);
    EXPECT_EQ(td::check_rma(local, {}, remote, limits), 0) << "no descriptors at all is fine";
    EXPECT_EQ(td::check_rma(local, std::span{desc}.first(1), remote, limits), FI_EINVAL) << "descriptor count";
    EXPECT_EQ(td::check_rma(local, {}, {}, limits), FI_EINVAL) << "no remote segment";
    EXPECT_EQ(td::check_rma({}, {}, {}, limits), FI_EINVAL) << "zero bytes still need a remote segment";
    const std::array<remote_memory, 1> empty_remote{remote_memory{0x1000, 7, 0}};
    EXPECT_EQ(td::check_rma({}, {}, empty_remote, limits), 0) << "a zero-byte transfer with one segment";
    EXPECT_EQ(td::check_rma(local, {}, std::span{remote}.first(1), limits), FI_EINVAL) << "totals differ";
    // Counts above the limits.
    std::array<::iovec, 5> five{};
    for (auto& v : five) v = iov(buf.data(), 1);
    const std::array<remote_memory, 1> five_bytes{remote_memory{0, 1, 5}};
    EXPECT_EQ(td::check_rma(five, {}, five_bytes, limits), FI_EINVAL) << "local count above tx limit";
    EXPECT_EQ(td::check_rma(std::span{five}.first(4), {}, std::array{remote_memory{0, 1, 4}}, limits), 0);
    const std::array<remote_memory, 3> three{remote_memory{0, 1, 1}, remote_memory{8, 1, 1}, remote_memory{16, 1, 1}};
    EXPECT_EQ(td::check_rma(std::span{five}.first(3), {}, three, limits), FI_EINVAL) << "remote count above rma limit";
    // Overflow and wrap.
    constexpr auto max = std::numeric_limits<std::size_t>::max();
    const std::array<::iovec, 2> huge{iov(buf.data(), max), iov(buf.data(), 2)};
    EXPECT_EQ(td::check_rma(huge, {}, std::array{remote_memory{0, 1, 1}}, limits), FI_EINVAL) << "local sum overflows";
    const std::array<remote_memory, 2> huge_remote{remote_memory{0, 1, max}, remote_memory{0, 1, 2}};
    EXPECT_EQ(td::check_rma(std::span{local}.first(1), {}, huge_remote, limits), FI_EINVAL) << "remote sum overflows";
    const std::array<remote_memory, 1> wraps{remote_memory{~std::uint64_t{0} - 3, 1, 8}};
    EXPECT_EQ(td::check_rma(std::array{iov(buf.data(), 8)}, {}, wraps, limits), FI_EINVAL) << "remote range wraps";
    const std::array<remote_memory, 1> at_end{remote_memory{~std::uint64_t{0} - 7, 1, 8}};
    EXPECT_EQ(td::check_rma(std::array{iov(buf.data(), 8)}, {}, at_end, limits), 0) << "ends at the last address";
}

// ---------------------------------------------------------------- atomics
TEST(trigger_checks, atomic_operations_and_datatypes) {
    std::uint64_t v[4]{};
    const remote_memory r32{0x100, 9, 32};
    EXPECT_EQ(td::check_atomic(FI_SUM, FI_UINT64, v, 4, r32), 0);
    for (auto op : {FI_MIN, FI_MAX, FI_PROD, FI_LOR, FI_LAND, FI_BOR, FI_BAND, FI_LXOR, FI_BXOR, FI_ATOMIC_WRITE})
        EXPECT_EQ(td::check_atomic(op, FI_UINT64, v, 1, r32), 0) << op;
    for (auto op : {FI_ATOMIC_READ, FI_CSWAP, FI_CSWAP_NE, FI_CSWAP_LE, FI_CSWAP_LT, FI_CSWAP_GE, FI_CSWAP_GT, FI_MSWAP,
                    FI_DIFF, FI_NOOP})
        EXPECT_EQ(td::check_atomic(op, FI_UINT64, v, 1, r32), FI_EINVAL) << "not a base atomic: " << op;
    EXPECT_EQ(td::check_atomic(static_cast<::fi_op>(-1), FI_UINT64, v, 1, r32), FI_EINVAL);
    EXPECT_EQ(td::check_atomic(FI_SUM, static_cast<::fi_datatype>(99), v, 1, r32), FI_EINVAL);
    EXPECT_EQ(td::check_atomic(FI_SUM, FI_VOID, v, 1, r32), FI_EINVAL);
    EXPECT_EQ(td::check_atomic(FI_SUM, FI_UINT64, nullptr, 1, r32), FI_EINVAL);
    EXPECT_EQ(td::check_atomic(FI_SUM, FI_UINT64, v, 0, r32), FI_EINVAL);
    EXPECT_EQ(td::check_atomic(FI_SUM, FI_UINT64, v, 5, r32), FI_EINVAL) << "40 bytes into 32";
    EXPECT_EQ(td::check_atomic(FI_SUM, FI_UINT32, v, 8, r32), 0);
    EXPECT_EQ(td::check_atomic(FI_SUM, FI_UINT64, v, std::numeric_limits<std::size_t>::max() / 4,
                               remote_memory{0, 1, std::numeric_limits<std::size_t>::max()}),
              FI_EINVAL)
        << "count * size overflows";
    EXPECT_EQ(td::check_atomic(FI_SUM, FI_UINT64, v, 1, remote_memory{~std::uint64_t{0} - 3, 1, 8}), FI_EINVAL)
        << "remote range wraps";
}

TEST(trigger_checks, datatype_sizes_and_deduction) {
    EXPECT_EQ(td::datatype_size(FI_INT8), 1u);
    EXPECT_EQ(td::datatype_size(FI_UINT16), 2u);
    EXPECT_EQ(td::datatype_size(FI_FLOAT), 4u);
    EXPECT_EQ(td::datatype_size(FI_UINT64), 8u);
    EXPECT_EQ(td::datatype_size(FI_DOUBLE_COMPLEX), 16u);
    EXPECT_EQ(td::datatype_size(FI_LONG_DOUBLE), sizeof(long double));
    EXPECT_EQ(td::datatype_size(FI_LONG_DOUBLE_COMPLEX), sizeof(std::complex<long double>));
    EXPECT_EQ(td::datatype_size(FI_UINT128), 16u);
    EXPECT_EQ(td::datatype_size(FI_BFLOAT16), 2u);
    EXPECT_EQ(td::datatype_size(FI_VOID), 0u);
    EXPECT_EQ(td::datatype_size(static_cast<::fi_datatype>(1000)), 0u);
    static_assert(loom::trigger::datatype_of<std::int32_t>::value == FI_INT32);
    static_assert(loom::trigger::datatype_of<double>::value == FI_DOUBLE);
    static_assert(loom::trigger::datatype_of<std::complex<float>>::value == FI_FLOAT_COMPLEX);
    static_assert(loom::trigger::atomic_operand<const std::uint64_t>);
    static_assert(!loom::trigger::atomic_operand<char*>);
    EXPECT_EQ(td::datatype_size(loom::trigger::datatype_of<std::uint16_t>::value), sizeof(std::uint16_t));
}

// ---------------------------------------------------------------- factories on default objects
class DefaultObjects : public ::testing::Test {
protected:
    loom::domain dom;
    loom::endpoint ep;
    loom::counter go, done;
    std::array<std::byte, 32> buf{};
    threshold_condition cond{&go, 1};
};

TEST_F(DefaultObjects, nothing_supports_triggers) {
    EXPECT_FALSE(loom::trigger::supports_trigger(ep));
    EXPECT_FALSE(loom::trigger::supports_trigger(dom));
    EXPECT_EQ(error_of(loom::trigger::flush_work(dom)), errc::invalid_argument);
}

TEST_F(DefaultObjects, every_factory_rejects_invalid_objects) {
    const auto rejected = [](const loom::result<deferred_work>& r) { return r ? std::error_code{} : r.error(); };
    const remote_memory remote{0, 1, 32};
    std::uint64_t operand = 1;
    EXPECT_EQ(rejected(deferred_work::create_send(dom, ep, cond, &done, loom::msg::send_message<void*>{})),
              errc::invalid_argument);
    EXPECT_EQ(rejected(deferred_work::create_recv(dom, ep, cond, &done, loom::msg::receive_message<void*>{})),
              errc::invalid_argument);
    EXPECT_EQ(
        rejected(deferred_work::create_tagged_send(dom, ep, cond, &done, loom::msg::tagged_send_message<void*>{})),
        errc::invalid_argument);
    EXPECT_EQ(
        rejected(deferred_work::create_tagged_recv(dom, ep, cond, &done, loom::msg::tagged_receive_message<void*>{})),
        errc::invalid_argument);
    EXPECT_EQ(rejected(deferred_work::create_write(dom, ep, cond, &done, std::span<const std::byte>{buf}, nullptr,
                                                   loom::fabric_addr{0}, remote)),
              errc::invalid_argument);
    EXPECT_EQ(rejected(deferred_work::create_read(dom, ep, cond, &done, std::span{buf}, nullptr, loom::fabric_addr{0},
                                                  remote)),
              errc::invalid_argument);
    EXPECT_EQ(rejected(deferred_work::create_write(dom, ep, cond, &done, loom::trigger::rma_message{})),
              errc::invalid_argument);
    EXPECT_EQ(rejected(deferred_work::create_read(dom, ep, cond, &done, loom::trigger::rma_message{})),
              errc::invalid_argument);
    EXPECT_EQ(rejected(deferred_work::create_atomic(dom, ep, cond, &done, FI_SUM, FI_UINT64, &operand, 1, nullptr,
                                                    loom::fabric_addr{0}, remote)),
              errc::invalid_argument);
    EXPECT_EQ(
        rejected(deferred_work::create_atomic(dom, ep, cond, &done, FI_SUM, std::span<const std::uint64_t>{&operand, 1},
                                              nullptr, loom::fabric_addr{0}, remote)),
        errc::invalid_argument);
    EXPECT_EQ(rejected(deferred_work::create_counter_add(dom, cond, done, 1)), errc::invalid_argument);
    EXPECT_EQ(rejected(deferred_work::create_counter_set(dom, cond, done, 1)), errc::invalid_argument);
}

TEST(deferred_work_state, default_and_moved_from_work_is_inert) {
    deferred_work w;
    EXPECT_FALSE(w.pending());
    EXPECT_EQ(w.kind(), loom::trigger::work_kind::none);
    EXPECT_EQ(w.native(), nullptr);
    EXPECT_EQ(w.domain_native(), nullptr);
    EXPECT_EQ(w.threshold(), 0u);
    EXPECT_FALSE(error_of(w.cancel())) << "nothing to cancel";
    w.mark_completed();
    EXPECT_FALSE(w.pending());
    deferred_work moved = std::move(w);
    EXPECT_FALSE(moved.pending());
    deferred_work assigned;
    assigned = std::move(moved);
    EXPECT_FALSE(assigned.pending());
    static_assert(!std::is_copy_constructible_v<deferred_work>);
    static_assert(std::is_nothrow_move_constructible_v<loom::scalable_endpoint>);
    static_assert(std::is_nothrow_move_assignable_v<loom::scalable_endpoint>);
    static_assert(std::is_nothrow_move_constructible_v<loom::address_vector>);
    static_assert(std::is_nothrow_move_assignable_v<loom::address_vector>);
    static_assert(std::is_nothrow_move_constructible_v<deferred_work>);
    static_assert(std::is_nothrow_move_assignable_v<deferred_work>);
}

// ---------------------------------------------------------------- scalable endpoint
TEST(scalable_endpoint_checks, default_object_fails_cleanly) {
    loom::scalable_endpoint sep;
    EXPECT_FALSE(sep.valid());
    EXPECT_FALSE(sep.enabled());
    EXPECT_EQ(sep.native(), nullptr);
    EXPECT_EQ(sep.open_contexts(), 0);
    EXPECT_EQ(sep.tx_context_count(), 0u);
    EXPECT_EQ(error_of(sep.tx_context(0)), errc::bad_state);
    EXPECT_EQ(error_of(sep.rx_context(0)), errc::bad_state);
    loom::endpoint ep;
    EXPECT_EQ(error_of(sep.enable_context(ep)), errc::bad_state);
    EXPECT_EQ(error_of(sep.enable()), errc::invalid_argument);
    EXPECT_EQ(error_of(sep.name()), errc::bad_state);
    loom::address_vector av;
    EXPECT_EQ(error_of(sep.bind_av(av)), errc::invalid_argument);
    EXPECT_FALSE(error_of(sep.close())) << "closing nothing succeeds";
    loom::domain dom;
    EXPECT_EQ(error_of(loom::scalable_endpoint::create(dom, loom::fabric_info{})), errc::invalid_argument);
}

}  // namespace
