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
TEST_F(core_trigger_rma, every_argument_check_fails_before_the_provider) {
    auto go = make_counter(s_.domain);
    auto done = make_counter(s_.domain);
    // Objects of another domain (same fabric).
    auto other_dom = loom::domain::create(s_.fabric, s_.info);
    ASSERT_TRUE(other_dom);
    auto foreign = make_counter(*other_dom);
    auto other_ep = loom::endpoint::create(*other_dom, s_.info);
    ASSERT_TRUE(other_ep);
    // An endpoint of this domain that is not enabled.
    auto idle = loom::endpoint::create(s_.domain, s_.info);
    ASSERT_TRUE(idle);

    std::array<std::byte, 64> buf{};
    const threshold_condition ok_cond{&go, 1};
    const auto send_msg = [&](loom::fabric_addr to) {
        return loom::msg::send_message<void*>{.iov = {{buf.data(), buf.size()}}, .addr = to};
    };
    control_spy spy(s_.domain);
    const auto expect = [&](const loom::result<deferred_work>& r, loom::errc e, const char* what) {
        EXPECT_FALSE(r.has_value()) << what << " was accepted";
        if (!r) {
            EXPECT_EQ(outcome(r.error()), name(e)) << what;
        }
        EXPECT_EQ(spy.calls(), 0) << what << " reached the provider";
    };
    using E = loom::errc;
    auto& d = s_.domain;
    auto& a = s_.a;

    // Condition and counters.
    expect(deferred_work::create_send(d, a, {nullptr, 1}, &done, send_msg(s_.addr_b)), E::invalid_argument,
           "null condition counter");
    loom::counter closed_counter;
    expect(deferred_work::create_send(d, a, {&closed_counter, 1}, &done, send_msg(s_.addr_b)), E::invalid_argument,
           "invalid condition counter");
    expect(deferred_work::create_send(d, a, {&foreign, 1}, &done, send_msg(s_.addr_b)), E::invalid_argument,
           "condition counter of another domain");
    expect(deferred_work::create_send(d, a, ok_cond, nullptr, send_msg(s_.addr_b)), E::invalid_argument,
           "null completion counter");
    expect(deferred_work::create_send(d, a, ok_cond, &foreign, send_msg(s_.addr_b)), E::invalid_argument,
           "completion counter of another domain");
    // Endpoint and domain.
    expect(deferred_work::create_send(d, *other_ep, ok_cond, &done, send_msg(s_.addr_b)), E::invalid_argument,
           "endpoint of another domain");
    loom::domain no_domain;
    expect(deferred_work::create_send(no_domain, a, ok_cond, &done, send_msg(s_.addr_b)), E::invalid_argument,
           "invalid domain");
    expect(deferred_work::create_send(d, *idle, ok_cond, &done, send_msg(s_.addr_b)), E::bad_state,
           "endpoint not enabled");
    // Message.
    expect(deferred_work::create_send(d, a, ok_cond, &done, send_msg(loom::fabric_addrs::unspecified)),
           E::invalid_argument, "RDM send without a destination");
    loom::request_context user_ctx;
    expect(deferred_work::create_send(d, a, ok_cond, &done,
                                      loom::msg::send_message<loom::request_context*>{
                                          .iov = {{buf.data(), buf.size()}}, .addr = s_.addr_b, .context = &user_ctx}),
           E::invalid_argument, "message with its own context");
    expect(deferred_work::create_send(d, a, ok_cond, &done, send_msg(s_.addr_b), loom::op_flag::inject),
           E::invalid_argument, "inject flag");
    loom::msg::send_message<void*> too_many{.addr = s_.addr_b};
    for (std::size_t i = 0; i <= a.iov_limits().tx; ++i) too_many.iov.push_back({buf.data(), 1});
    expect(deferred_work::create_send(d, a, ok_cond, &done, too_many), E::invalid_argument, "iov count above limit");
    auto bad_desc = send_msg(s_.addr_b);
    bad_desc.desc = {nullptr, nullptr};
    expect(deferred_work::create_send(d, a, ok_cond, &done, bad_desc), E::invalid_argument,
           "descriptor count differs from iov count");
    loom::msg::receive_message<void*> rx_many{};
    for (std::size_t i = 0; i <= a.iov_limits().rx; ++i) rx_many.iov.push_back({buf.data(), 1});
    expect(deferred_work::create_recv(d, a, ok_cond, &done, rx_many), E::invalid_argument,
           "receive iov count above limit");
    expect(deferred_work::create_recv(d, a, ok_cond, &done, loom::msg::receive_message<void*>{},
                                      loom::op_flag::remote_cq_data),
           E::invalid_argument, "remote CQ data on a receive");
    // RMA.
    const auto remote = *remote_.subregion(0, 64);
    const std::span<const std::byte> local{local_.data(), 64};
    expect(deferred_work::create_write(d, a, ok_cond, &done,
                                       loom::trigger::rma_message{.iov = {{local_.data(), 64}}, .addr = s_.addr_b}),
           E::invalid_argument, "RMA without a remote segment");
    expect(deferred_work::create_write(d, a, ok_cond, &done, local, nullptr, s_.addr_b, *remote_.subregion(0, 63)),
           E::invalid_argument, "local and remote totals differ");
    expect(deferred_work::create_write(d, a, ok_cond, &done, local, nullptr, s_.addr_b,
                                       loom::remote_memory{~std::uint64_t{0} - 10, remote.key, 64}),
           E::invalid_argument, "remote range wraps");
    loom::trigger::rma_message many_remote{.iov = {{local_.data(), 0}}, .addr = s_.addr_b};
    for (std::size_t i = 0; i <= a.iov_limits().rma; ++i) many_remote.remote.push_back(loom::remote_memory{0, 1, 1});
    many_remote.iov = {{local_.data(), a.iov_limits().rma + 1}};
    expect(deferred_work::create_write(d, a, ok_cond, &done, many_remote), E::invalid_argument,
           "remote segment count above limit");
    expect(deferred_work::create_read(d, a, ok_cond, &done, std::span{local_}.first(64), nullptr, s_.addr_b, remote,
                                      loom::op_flag::remote_cq_data),
           E::invalid_argument, "remote CQ data on a read");
    expect(deferred_work::create_write(d, a, ok_cond, &done, local, nullptr, loom::fabric_addrs::unspecified, remote),
           E::invalid_argument, "RDM write without a peer");
    // Atomics.
    std::array<std::uint64_t, 2> operand{};
    const auto atomic = [&](::fi_op op, ::fi_datatype dt, const void* p, std::size_t count,
                            const loom::remote_memory& r) {
        return deferred_work::create_atomic(d, a, ok_cond, &done, op, dt, p, count, nullptr, s_.addr_b, r);
    };
    expect(atomic(FI_ATOMIC_READ, FI_UINT64, operand.data(), 1, remote), E::invalid_argument, "fetching operation");
    expect(atomic(FI_CSWAP, FI_UINT64, operand.data(), 1, remote), E::invalid_argument, "compare operation");
    expect(atomic(static_cast<::fi_op>(77), FI_UINT64, operand.data(), 1, remote), E::invalid_argument,
           "unknown operation");
    expect(atomic(FI_SUM, static_cast<::fi_datatype>(99), operand.data(), 1, remote), E::invalid_argument,
           "unknown datatype");
    expect(atomic(FI_SUM, FI_UINT64, operand.data(), 0, remote), E::invalid_argument, "zero elements");
    expect(atomic(FI_SUM, FI_UINT64, nullptr, 1, remote), E::invalid_argument, "null operand");
    expect(atomic(FI_SUM, FI_UINT64, operand.data(), 9, remote), E::invalid_argument, "operand beyond remote");
    expect(atomic(FI_SUM, FI_UINT64, operand.data(), 1u << 20, loom::remote_memory{0, remote.key, 8u << 20}),
           E::invalid_argument, "count above the provider's atomic limit");
    // Counter updates.
    expect(deferred_work::create_counter_add(d, {nullptr, 1}, done, 1), E::invalid_argument, "null trigger counter");
    expect(deferred_work::create_counter_add(d, ok_cond, foreign, 1), E::invalid_argument, "target of another domain");
    expect(deferred_work::create_counter_set(d, {&foreign, 1}, done, 1), E::invalid_argument,
           "trigger counter of another domain");
    expect(deferred_work::create_counter_set(d, ok_cond, closed_counter, 1), E::invalid_argument, "invalid target");
    expect(deferred_work::create_counter_add(no_domain, ok_cond, done, 1), E::invalid_argument, "invalid domain");

    // The spy does see a valid submission.
    auto w = deferred_work::create_counter_add(d, threshold_condition{&go, 1}, done, 1);
    ASSERT_TRUE(w) << outcome(w.error());
    EXPECT_EQ(spy.calls(), 1);
    ASSERT_EQ(outcome(go.add(1)), "ok");
    ASSERT_TRUE(reaches(done, 1));
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
