// Deferred (triggered) RMA and atomics, in process, on sockets: they run once their counter is
// reached. Every argument check is exercised with the domain's fi_control counted, so "rejected
// before the provider" is observed rather than assumed. On providers without triggers every
// factory reports not_supported without a native call. (Chains and cancellation:
// core_trigger_test.cpp.)
#include <gtest/gtest.h>
#include <rdma/fi_atomic.h>

#include <array>
#include <cstring>
#include <loom/trigger.hpp>
#include <memory>
#include <string>
#include <vector>

#include "counting_resource.hpp"
#include "trigger_support.hpp"

using namespace trigger_test;
using loom::test::counting_resource;
using loom::trigger::deferred_work;
using loom::trigger::threshold_condition;

namespace {

// ================================================================ RMA and atomics
class core_trigger_rma : public core_trigger_sockets {
protected:
    void SetUp() override {
        core_trigger_sockets::SetUp();
        if (IsSkipped() || HasFatalFailure()) return;
        constexpr auto access = loom::mr_access_flags::read | loom::mr_access_flags::write |
                                loom::mr_access_flags::remote_read | loom::mr_access_flags::remote_write;
        auto t = loom::memory_region::register_memory(s_.domain, std::span{target_}, access);
        ASSERT_TRUE(t) << outcome(t.error());
        target_mr_ = std::move(*t);
        auto l = loom::memory_region::register_memory(s_.domain, std::span{local_}, access);
        ASSERT_TRUE(l) << outcome(l.error());
        local_mr_ = std::move(*l);
        auto r = loom::remote_memory::from_mr(target_mr_);
        ASSERT_TRUE(r) << outcome(r.error());
        remote_ = *r;
    }
    alignas(16) std::array<std::byte, 256> target_{};
    alignas(16) std::array<std::byte, 256> local_{};
    loom::memory_region target_mr_, local_mr_;
    loom::remote_memory remote_{};
};

TEST_F(core_trigger_rma, deferred_write_runs_when_triggered) {
    auto go = make_counter(s_.domain);
    auto done = make_counter(s_.domain);
    loom_test::fill_pattern(local_, 31);
    auto work = deferred_work::create_write(s_.domain, s_.a, threshold_condition{&go, 1}, &done,
                                            std::span<const std::byte>{local_}.first(128), local_mr_.descriptor(),
                                            s_.addr_b, *remote_.subregion(0, 128));
    ASSERT_TRUE(work) << outcome(work.error());
    EXPECT_TRUE(stays(done, 0));
    EXPECT_EQ(target_[0], std::byte{0}) << "written before the trigger";
    ASSERT_EQ(outcome(go.add(1)), "ok");
    ASSERT_TRUE(reaches(done, 1));
    EXPECT_EQ(loom_test::check_pattern(std::span{target_}.first(128), 31), std::nullopt);
    EXPECT_EQ(target_[128], std::byte{0});
    work->mark_completed();
}

TEST_F(core_trigger_rma, deferred_vectored_read_runs_when_triggered) {
    auto go = make_counter(s_.domain);
    auto done = make_counter(s_.domain);
    loom_test::fill_pattern(target_, 32);
    // Two local segments, three remote segments, 96 bytes each side.
    loom::trigger::rma_message m{
        .iov = {{local_.data(), 40}, {local_.data() + 100, 56}},
        .desc = {local_mr_.descriptor(), local_mr_.descriptor()},
        .addr = s_.addr_b,
        .remote = {*remote_.subregion(0, 30), *remote_.subregion(30, 30), *remote_.subregion(60, 36)},
    };
    auto work = deferred_work::create_read(s_.domain, s_.a, threshold_condition{&go, 2}, &done, m);
    ASSERT_TRUE(work) << outcome(work.error());
    ASSERT_EQ(outcome(go.add(1)), "ok");
    EXPECT_TRUE(stays(done, 0));
    ASSERT_EQ(outcome(go.add(1)), "ok");
    ASSERT_TRUE(reaches(done, 1));
    std::vector<std::byte> got(local_.begin(), local_.begin() + 40);
    got.insert(got.end(), local_.begin() + 100, local_.begin() + 156);
    EXPECT_EQ(loom_test::check_pattern(got, 32), std::nullopt);
    work->mark_completed();
}

TEST_F(core_trigger_rma, deferred_atomic_sum_runs_when_triggered) {
    auto go = make_counter(s_.domain);
    auto done = make_counter(s_.domain);
    std::array<std::uint64_t, 2> start{10, 20};
    std::memcpy(target_.data(), start.data(), sizeof start);
    std::array<std::uint64_t, 2> operand{5, 7};
    std::memcpy(local_.data(), operand.data(), sizeof operand);
    auto work = deferred_work::create_atomic(
        s_.domain, s_.a, threshold_condition{&go, 1}, &done, FI_SUM,
        std::span<const std::uint64_t>{reinterpret_cast<const std::uint64_t*>(local_.data()), 2},
        local_mr_.descriptor(), s_.addr_b, *remote_.subregion(0, 16));
    ASSERT_TRUE(work) << outcome(work.error());
    EXPECT_EQ(work->kind(), loom::trigger::work_kind::atomic);
    EXPECT_TRUE(stays(done, 0));
    ASSERT_EQ(outcome(go.add(1)), "ok");
    ASSERT_TRUE(reaches(done, 1));
    std::array<std::uint64_t, 2> now{};
    std::memcpy(now.data(), target_.data(), sizeof now);
    EXPECT_EQ(now[0], 15u);
    EXPECT_EQ(now[1], 27u);
    work->mark_completed();
}

// ================================================================ argument checks
/// Objects the checks refuse (of another domain, not enabled) and the spy that counts the
/// domain's fi_control calls from the start of each test: every refusal must leave it at zero.
class core_trigger_rma_checks : public core_trigger_rma {
protected:
    void SetUp() override {
        core_trigger_rma::SetUp();
        if (IsSkipped() || HasFatalFailure()) return;
        go_ = make_counter(s_.domain);
        done_ = make_counter(s_.domain);
        auto other = loom::domain::create(s_.fabric, s_.info);  // same fabric
        ASSERT_TRUE(other);
        other_dom_ = std::move(*other);
        foreign_ = make_counter(other_dom_);
        auto other_ep = loom::endpoint::create(other_dom_, s_.info);
        ASSERT_TRUE(other_ep);
        other_ep_ = std::move(*other_ep);
        auto idle = loom::endpoint::create(s_.domain, s_.info);
        ASSERT_TRUE(idle);
        idle_ = std::move(*idle);
        spy_ = std::make_unique<control_spy>(s_.domain);
    }
    /// Expects `r` refused with `e` before the provider was called.
    void expect_refused(const loom::result<deferred_work>& r, loom::errc e, const char* what) {
        EXPECT_FALSE(r.has_value()) << what << " was accepted";
        if (!r) {
            EXPECT_EQ(outcome(r.error()), name(e)) << what;
        }
        EXPECT_EQ(spy_->calls(), 0) << what << " reached the provider";
    }
    auto send_msg(loom::fabric_addr to) -> loom::msg::send_message<void*> {
        return {.iov = {{buf_.data(), buf_.size()}}, .addr = to};
    }
    auto ok_cond() -> threshold_condition { return {&go_, 1}; }

    using E = loom::errc;
    std::array<std::byte, 64> buf_{};
    loom::counter go_, done_;
    loom::counter closed_counter_;  // never created
    loom::domain no_domain_;        // never created
    loom::domain other_dom_;
    loom::counter foreign_;  // of other_dom_
    loom::endpoint other_ep_;
    loom::endpoint idle_;  // of this domain, not enabled
    std::unique_ptr<control_spy> spy_;
};

TEST_F(core_trigger_rma_checks, condition_and_completion_counters_are_checked_before_the_provider) {
    auto& d = s_.domain;
    auto& a = s_.a;
    const auto to_b = send_msg(s_.addr_b);
    expect_refused(deferred_work::create_send(d, a, {nullptr, 1}, &done_, to_b), E::invalid_argument,
                   "null condition counter");
    expect_refused(deferred_work::create_send(d, a, {&closed_counter_, 1}, &done_, to_b), E::invalid_argument,
                   "invalid condition counter");
    expect_refused(deferred_work::create_send(d, a, {&foreign_, 1}, &done_, to_b), E::invalid_argument,
                   "condition counter of another domain");
    expect_refused(deferred_work::create_send(d, a, ok_cond(), nullptr, to_b), E::invalid_argument,
                   "null completion counter");
    expect_refused(deferred_work::create_send(d, a, ok_cond(), &foreign_, to_b), E::invalid_argument,
                   "completion counter of another domain");
}

TEST_F(core_trigger_rma_checks, endpoint_and_domain_are_checked_before_the_provider) {
    const auto to_b = send_msg(s_.addr_b);
    expect_refused(deferred_work::create_send(s_.domain, other_ep_, ok_cond(), &done_, to_b), E::invalid_argument,
                   "endpoint of another domain");
    expect_refused(deferred_work::create_send(no_domain_, s_.a, ok_cond(), &done_, to_b), E::invalid_argument,
                   "invalid domain");
    expect_refused(deferred_work::create_send(s_.domain, idle_, ok_cond(), &done_, to_b), E::bad_state,
                   "endpoint not enabled");
}

TEST_F(core_trigger_rma_checks, messages_are_checked_before_the_provider) {
    auto& d = s_.domain;
    auto& a = s_.a;
    expect_refused(deferred_work::create_send(d, a, ok_cond(), &done_, send_msg(loom::fabric_addrs::unspecified)),
                   E::invalid_argument, "RDM send without a destination");
    loom::request_context user_ctx;
    expect_refused(
        deferred_work::create_send(d, a, ok_cond(), &done_,
                                   loom::msg::send_message<loom::request_context*>{
                                       .iov = {{buf_.data(), buf_.size()}}, .addr = s_.addr_b, .context = &user_ctx}),
        E::invalid_argument, "message with its own context");
    expect_refused(deferred_work::create_send(d, a, ok_cond(), &done_, send_msg(s_.addr_b), loom::op_flag::inject),
                   E::invalid_argument, "inject flag");
    loom::msg::send_message<void*> too_many{.addr = s_.addr_b};
    for (std::size_t i = 0; i <= a.iov_limits().tx; ++i) too_many.iov.push_back({buf_.data(), 1});
    expect_refused(deferred_work::create_send(d, a, ok_cond(), &done_, too_many), E::invalid_argument,
                   "iov count above limit");
    auto bad_desc = send_msg(s_.addr_b);
    bad_desc.desc = {nullptr, nullptr};
    expect_refused(deferred_work::create_send(d, a, ok_cond(), &done_, bad_desc), E::invalid_argument,
                   "descriptor count differs from iov count");
    loom::msg::receive_message<void*> rx_many{};
    for (std::size_t i = 0; i <= a.iov_limits().rx; ++i) rx_many.iov.push_back({buf_.data(), 1});
    expect_refused(deferred_work::create_recv(d, a, ok_cond(), &done_, rx_many), E::invalid_argument,
                   "receive iov count above limit");
    expect_refused(deferred_work::create_recv(d, a, ok_cond(), &done_, loom::msg::receive_message<void*>{},
                                              loom::op_flag::remote_cq_data),
                   E::invalid_argument, "remote CQ data on a receive");
}

TEST_F(core_trigger_rma_checks, rma_is_checked_before_the_provider) {
    auto& d = s_.domain;
    auto& a = s_.a;
    const auto remote = *remote_.subregion(0, 64);
    const std::span<const std::byte> local{local_.data(), 64};
    expect_refused(
        deferred_work::create_write(d, a, ok_cond(), &done_,
                                    loom::trigger::rma_message{.iov = {{local_.data(), 64}}, .addr = s_.addr_b}),
        E::invalid_argument, "RMA without a remote segment");
    expect_refused(
        deferred_work::create_write(d, a, ok_cond(), &done_, local, nullptr, s_.addr_b, *remote_.subregion(0, 63)),
        E::invalid_argument, "local and remote totals differ");
    expect_refused(deferred_work::create_write(d, a, ok_cond(), &done_, local, nullptr, s_.addr_b,
                                               loom::remote_memory{~std::uint64_t{0} - 10, remote.key, 64}),
                   E::invalid_argument, "remote range wraps");
    loom::trigger::rma_message many_remote{.iov = {{local_.data(), 0}}, .addr = s_.addr_b};
    for (std::size_t i = 0; i <= a.iov_limits().rma; ++i) many_remote.remote.push_back(loom::remote_memory{0, 1, 1});
    many_remote.iov = {{local_.data(), a.iov_limits().rma + 1}};
    expect_refused(deferred_work::create_write(d, a, ok_cond(), &done_, many_remote), E::invalid_argument,
                   "remote segment count above limit");
    expect_refused(deferred_work::create_read(d, a, ok_cond(), &done_, std::span{local_}.first(64), nullptr, s_.addr_b,
                                              remote, loom::op_flag::remote_cq_data),
                   E::invalid_argument, "remote CQ data on a read");
    expect_refused(
        deferred_work::create_write(d, a, ok_cond(), &done_, local, nullptr, loom::fabric_addrs::unspecified, remote),
        E::invalid_argument, "RDM write without a peer");
}

TEST_F(core_trigger_rma_checks, atomics_are_checked_before_the_provider) {
    const auto remote = *remote_.subregion(0, 64);
    std::array<std::uint64_t, 2> operand{};
    const auto atomic = [&](::fi_op op, ::fi_datatype dt, const void* p, std::size_t count,
                            const loom::remote_memory& r) {
        return deferred_work::create_atomic(s_.domain, s_.a, ok_cond(), &done_, op, dt, p, count, nullptr, s_.addr_b,
                                            r);
    };
    expect_refused(atomic(FI_ATOMIC_READ, FI_UINT64, operand.data(), 1, remote), E::invalid_argument,
                   "fetching operation");
    expect_refused(atomic(FI_CSWAP, FI_UINT64, operand.data(), 1, remote), E::invalid_argument, "compare operation");
    // Values outside the enumerations are what these two checks are for.
    const auto unknown_op = static_cast<::fi_op>(77);          // NOLINT(clang-analyzer-optin.core.EnumCastOutOfRange)
    const auto unknown_type = static_cast<::fi_datatype>(99);  // NOLINT(clang-analyzer-optin.core.EnumCastOutOfRange)
    expect_refused(atomic(unknown_op, FI_UINT64, operand.data(), 1, remote), E::invalid_argument, "unknown operation");
    expect_refused(atomic(FI_SUM, unknown_type, operand.data(), 1, remote), E::invalid_argument, "unknown datatype");
    expect_refused(atomic(FI_SUM, FI_UINT64, operand.data(), 0, remote), E::invalid_argument, "zero elements");
    expect_refused(atomic(FI_SUM, FI_UINT64, nullptr, 1, remote), E::invalid_argument, "null operand");
    expect_refused(atomic(FI_SUM, FI_UINT64, operand.data(), 9, remote), E::invalid_argument, "operand beyond remote");
    expect_refused(atomic(FI_SUM, FI_UINT64, operand.data(), 1u << 20, loom::remote_memory{0, remote.key, 8u << 20}),
                   E::invalid_argument, "count above the provider's atomic limit");
}

TEST_F(core_trigger_rma_checks, counter_updates_are_checked_before_the_provider) {
    auto& d = s_.domain;
    expect_refused(deferred_work::create_counter_add(d, {nullptr, 1}, done_, 1), E::invalid_argument,
                   "null trigger counter");
    expect_refused(deferred_work::create_counter_add(d, ok_cond(), foreign_, 1), E::invalid_argument,
                   "target of another domain");
    expect_refused(deferred_work::create_counter_set(d, {&foreign_, 1}, done_, 1), E::invalid_argument,
                   "trigger counter of another domain");
    expect_refused(deferred_work::create_counter_set(d, ok_cond(), closed_counter_, 1), E::invalid_argument,
                   "invalid target");
    expect_refused(deferred_work::create_counter_add(no_domain_, ok_cond(), done_, 1), E::invalid_argument,
                   "invalid domain");
}

// The spy does see a valid submission (so its zero above means something).
TEST_F(core_trigger_rma_checks, the_spy_counts_a_valid_submission) {
    auto w = deferred_work::create_counter_add(s_.domain, ok_cond(), done_, 1);
    ASSERT_TRUE(w) << outcome(w.error());
    EXPECT_EQ(spy_->calls(), 1);
    ASSERT_EQ(outcome(go_.add(1)), "ok");
    ASSERT_TRUE(reaches(done_, 1));
    w->mark_completed();
}

// ================================================================ providers without triggers
class core_trigger_unsupported : public ::testing::TestWithParam<std::string> {};

TEST_P(core_trigger_unsupported, every_factory_is_not_supported_without_a_native_call) {
    loop_stack s;
    ASSERT_NO_FATAL_FAILURE(must_open_loop(GetParam(), {}, s));
    if (s.ep.capabilities().any(loom::capability::trigger))
        GTEST_SKIP() << GetParam() << " negotiated capability::trigger";
    EXPECT_FALSE(loom::trigger::supports_trigger(s.ep));
    EXPECT_FALSE(loom::trigger::supports_trigger(s.domain));
    auto go = make_counter(s.domain);
    auto done = make_counter(s.domain);
    std::array<std::byte, 16> buf{};
    const threshold_condition cond{&go, 1};
    const loom::remote_memory remote{0, 1, 16};
    std::uint64_t operand = 1;
    control_spy spy(s.domain);
    const auto expect = [&](const loom::result<deferred_work>& r, const char* what) {
        EXPECT_FALSE(r.has_value()) << what;
        if (!r) {
            EXPECT_EQ(outcome(r.error()), "not_supported") << what;
        }
    };
    auto& d = s.domain;
    expect(deferred_work::create_send(d, s.ep, cond, &done,
                                      loom::msg::send_message<void*>{.iov = {{buf.data(), 16}}, .addr = s.self}),
           "send");
    expect(
        deferred_work::create_recv(d, s.ep, cond, &done, loom::msg::receive_message<void*>{.iov = {{buf.data(), 16}}}),
        "recv");
    expect(deferred_work::create_tagged_send(
               d, s.ep, cond, &done, loom::msg::tagged_send_message<void*>{.iov = {{buf.data(), 16}}, .addr = s.self}),
           "tagged send");
    expect(deferred_work::create_tagged_recv(d, s.ep, cond, &done,
                                             loom::msg::tagged_receive_message<void*>{.iov = {{buf.data(), 16}}}),
           "tagged recv");
    expect(deferred_work::create_write(d, s.ep, cond, &done, std::span<const std::byte>{buf}, nullptr, s.self, remote),
           "write");
    expect(deferred_work::create_read(d, s.ep, cond, &done, std::span{buf}, nullptr, s.self, remote), "read");
    expect(deferred_work::create_atomic(d, s.ep, cond, &done, FI_SUM, FI_UINT64, &operand, 1, nullptr, s.self,
                                        loom::remote_memory{0, 1, 8}),
           "atomic");
    expect(deferred_work::create_counter_add(d, cond, done, 1), "counter add");
    expect(deferred_work::create_counter_set(d, cond, done, 1), "counter set");
    EXPECT_EQ(outcome(loom::trigger::flush_work(d)), "not_supported");
    EXPECT_EQ(spy.calls(), 0) << "a native call was made";
}

INSTANTIATE_TEST_SUITE_P(providers, core_trigger_unsupported, ::testing::Values("shm", "tcp;ofi_rxm"), param_name);

}  // namespace
