// Deferred (triggered) work, in process. On sockets — the only provider here with
// FI_TRIGGER and the deferred work queue — chains really run: a receive completing triggers
// a send, counter updates trigger counter updates, deferred RMA and atomics run once their
// counter is reached, pending work is retained when cancellation fails and the destructor
// then terminates. Every argument check is exercised with the domain's fi_control counted,
// so "rejected before the provider" is observed rather than assumed. On providers without
// triggers every factory reports not_supported without a native call.
#include <gtest/gtest.h>
#include <rdma/fi_atomic.h>

#include <array>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <loom/trigger.hpp>
#include <memory_resource>
#include <string>
#include <thread>
#include <vector>

#include "core_support.hpp"
#include "counting_resource.hpp"

using namespace core_test;
using namespace std::chrono_literals;
using loom::trigger::deferred_work;
using loom::trigger::threshold_condition;

namespace {

constexpr auto trigger_caps = loom::capability::msg | loom::capability::tagged | loom::capability::rma |
                              loom::capability::atomic | loom::capability::trigger;

/// Counts fi_control calls on a domain: FI_QUEUE_WORK / FI_CANCEL_WORK / FI_FLUSH_WORK are
/// the only ways deferred work reaches the provider. Installs a copy of the provider's
/// fi_ops with `control` wrapped; restores the original on destruction. One at a time.
class control_spy {
public:
    explicit control_spy(loom::domain& d) : fid_(&d.native()->fid), original_(fid_->ops) {
        std::memcpy(&copy_, original_, sizeof copy_);
        copy_.control = &control_spy::control;
        active_ = this;
        fid_->ops = &copy_;
    }
    control_spy(const control_spy&) = delete;
    auto operator=(const control_spy&) -> control_spy& = delete;
    ~control_spy() {
        fid_->ops = original_;
        active_ = nullptr;
    }
    [[nodiscard]] auto calls() const -> int { return calls_.load(); }
    [[nodiscard]] auto last_command() const -> int { return last_.load(); }

    /// Non-zero: answer every call with this (negative) code instead of the provider.
    int refuse_with{0};

private:
    static auto control(::fid* f, int command, void* arg) -> int {
        active_->calls_.fetch_add(1);
        active_->last_.store(command);
        if (active_->refuse_with != 0) return active_->refuse_with;
        return active_->original_->control(f, command, arg);
    }
    ::fid* fid_;
    ::fi_ops* original_;
    ::fi_ops copy_{};
    std::atomic<int> calls_{0};
    std::atomic<int> last_{-1};
    static inline control_spy* active_ = nullptr;
};

using loom::test::counting_resource;

/// Two enabled RDM endpoints in one sockets domain sharing an AV; each knows the other.
struct pair_stack {
    loom::fabric_info info;
    loom::fabric fabric;
    loom::domain domain;
    loom::address_vector av;
    loom::completion_queue cq_a, cq_b;
    loom::counter recv_a;  ///< counts A's receive completions
    loom::endpoint a, b;
    loom::fabric_addr addr_a{loom::fabric_addrs::unspecified}, addr_b{loom::fabric_addrs::unspecified};
};

auto open_pair(const std::string& provider, loom::capability caps, pair_stack& s) -> std::string {
    if (auto err = open_domain(provider, caps, s); !err.empty()) return err;
    auto av = loom::address_vector::create(s.domain);
    if (!av) return "av: " + outcome(av.error());
    s.av = std::move(*av);
    for (auto* cq : {&s.cq_a, &s.cq_b}) {
        auto c = loom::completion_queue::create(s.domain, {.size = 64});
        if (!c) return "cq: " + outcome(c.error());
        *cq = std::move(*c);
    }
    auto rc = loom::counter::create(s.domain);
    if (!rc) return "counter: " + outcome(rc.error());
    s.recv_a = std::move(*rc);
    for (auto [ep, cq] : {std::pair{&s.a, &s.cq_a}, std::pair{&s.b, &s.cq_b}}) {
        auto e = loom::endpoint::create(s.domain, s.info);
        if (!e) return "endpoint: " + outcome(e.error());
        *ep = std::move(*e);
        if (auto r = ep->bind_cq(*cq, loom::cq_bind::transmit | loom::cq_bind::recv); !r)
            return "bind_cq: " + outcome(r);
        if (auto r = ep->bind_av(s.av); !r) return "bind_av: " + outcome(r);
        if (ep == &s.a) {
            if (auto r = ep->bind_counter(s.recv_a, loom::counter_bind::recv); !r) return "bind_counter: " + outcome(r);
        }
        if (auto r = ep->enable(); !r) return "enable: " + outcome(r);
    }
    for (auto [ep, out] : {std::pair{&s.a, &s.addr_a}, std::pair{&s.b, &s.addr_b}}) {
        auto me = ep->name();
        if (!me) return "name: " + outcome(me.error());
        auto h = s.av.insert(*me);
        if (!h) return "av insert: " + outcome(h.error());
        *out = *h;
    }
    return {};
}

auto make_counter(loom::domain& d) -> loom::counter {
    auto c = loom::counter::create(d);
    EXPECT_TRUE(c) << outcome(c.error());
    return c ? std::move(*c) : loom::counter{};
}

/// Waits until `c` reads `value` (or more); false after `timeout`.
auto reaches(loom::counter& c, std::uint64_t value, std::chrono::milliseconds timeout = 5s) -> bool {
    return c.wait(value, timeout).has_value();
}

/// Reads `c` repeatedly for `window` and reports whether it ever moved away from `value`.
auto stays(loom::counter& c, std::uint64_t value, std::chrono::milliseconds window = 150ms) -> bool {
    const auto end = std::chrono::steady_clock::now() + window;
    while (std::chrono::steady_clock::now() < end) {
        if (c.read() != value) return false;
        std::this_thread::sleep_for(5ms);
    }
    return true;
}

class core_trigger_sockets : public ::testing::Test {
protected:
    void SetUp() override {
        const auto err = open_pair("sockets", trigger_caps, s_);
        if (err.rfind("find_info", 0) == 0) GTEST_SKIP() << "sockets with triggers unavailable: " << err;
        ASSERT_TRUE(err.empty()) << err;
    }
    pair_stack s_;
};

// ================================================================ capability
TEST_F(core_trigger_sockets, trigger_capability_is_negotiated) {
    EXPECT_TRUE(s_.a.capabilities().any(loom::capability::trigger));
    EXPECT_TRUE(loom::trigger::supports_trigger(s_.a));
    EXPECT_TRUE(loom::trigger::supports_trigger(s_.domain));
    EXPECT_FALSE(loom::trigger::supports_trigger(loom::endpoint{}));
    EXPECT_FALSE(loom::trigger::supports_trigger(loom::domain{}));
}

// ================================================================ the spec's pipeline
TEST_F(core_trigger_sockets, a_completed_receive_triggers_a_send) {
    auto send_done = make_counter(s_.domain);
    std::array<std::byte, 48> ping{}, ping_in{}, reply{}, reply_in{};
    loom_test::fill_pattern(ping, 11);
    loom_test::fill_pattern(reply, 12);
    loom::request_context a_rctx, b_rctx, b_sctx;

    // A receives the ping; its completion (recv_a reaching 1) sends the reply to B.
    ASSERT_EQ(outcome(s_.a.recv(ping_in, loom::fabric_addrs::unspecified, nullptr, &a_rctx)), "ok");
    control_spy spy(s_.domain);
    auto work = deferred_work::create_send(
        s_.domain, s_.a, threshold_condition{&s_.recv_a, 1}, &send_done,
        loom::msg::send_message<void*>{.iov = {{reply.data(), reply.size()}}, .addr = s_.addr_b});
    ASSERT_TRUE(work) << outcome(work.error());
    EXPECT_EQ(spy.calls(), 1);
    EXPECT_EQ(spy.last_command(), FI_QUEUE_WORK);
    EXPECT_TRUE(work->pending());
    EXPECT_EQ(work->kind(), loom::trigger::work_kind::send);
    ASSERT_NE(work->native(), nullptr);
    EXPECT_EQ(work->native()->threshold, 1u);
    EXPECT_EQ(work->native()->triggering_cntr, s_.recv_a.native());
    EXPECT_EQ(work->native()->completion_cntr, send_done.native());

    ASSERT_EQ(outcome(s_.b.recv(reply_in, loom::fabric_addrs::unspecified, nullptr, &b_rctx)), "ok");
    // Nothing happens before the receive completes.
    EXPECT_TRUE(stays(send_done, 0));
    EXPECT_FALSE(next_event(s_.cq_b, 50ms).has_value()) << "the reply was sent before its trigger";

    loom_test::progress prog_b(s_.cq_b);
    ASSERT_EQ(outcome(prog_b.retry([&] { return s_.b.send(ping, s_.addr_a, nullptr, &b_sctx); }, 2s)), "ok");
    (void)completed(prog_b, &b_sctx);
    loom_test::progress prog_a(s_.cq_a);
    auto a_ev = completed(prog_a, &a_rctx);
    EXPECT_EQ(a_ev.bytes_transferred, ping.size());
    EXPECT_EQ(ping_in, ping);

    // The deferred send ran: B has the reply, the completion counter counted it.
    auto b_ev = completed(prog_b, &b_rctx);
    EXPECT_EQ(b_ev.bytes_transferred, reply.size());
    EXPECT_EQ(reply_in, reply);
    ASSERT_TRUE(reaches(send_done, 1));
    EXPECT_TRUE(work->pending());  // loom cannot see the completion by itself
    work->mark_completed();
    EXPECT_FALSE(work->pending());
    EXPECT_EQ(work->native(), nullptr);
    EXPECT_EQ(outcome(work->cancel()), "ok");  // nothing left to cancel: no native call
    EXPECT_EQ(spy.calls(), 1);
}

TEST_F(core_trigger_sockets, deferred_receive_is_posted_by_its_trigger) {
    auto go = make_counter(s_.domain);
    auto done = make_counter(s_.domain);
    std::array<std::byte, 32> out{}, in{};
    loom_test::fill_pattern(out, 21);
    auto work = deferred_work::create_tagged_recv(
        s_.domain, s_.a, threshold_condition{&go, 1}, &done,
        loom::msg::tagged_receive_message<void*>{.iov = {{in.data(), in.size()}}, .tag = 0x77});
    ASSERT_TRUE(work) << outcome(work.error());
    EXPECT_EQ(work->kind(), loom::trigger::work_kind::tagged_recv);
    // The message arrives first and waits unexpected: the receive is not posted yet.
    loom::request_context sctx;
    loom_test::progress prog_b(s_.cq_b);
    ASSERT_EQ(outcome(prog_b.retry([&] { return s_.b.tagged_send(out, 0x77, s_.addr_a, nullptr, &sctx); }, 2s)), "ok");
    (void)completed(prog_b, &sctx);
    EXPECT_TRUE(stays(done, 0)) << "the receive was posted before its trigger";
    EXPECT_NE(in, out);
    ASSERT_EQ(outcome(go.add(1)), "ok");
    ASSERT_TRUE(reaches(done, 1)) << "the deferred receive did not complete";
    EXPECT_EQ(in, out);
    // A deferred receive reports through its completion counter only: no CQ entry on A.
    EXPECT_FALSE(next_event(s_.cq_a, 50ms).has_value());
    work->mark_completed();
}

// ================================================================ counter chains
TEST_F(core_trigger_sockets, counter_add_chain_fires_in_order) {
    auto c1 = make_counter(s_.domain);
    auto c2 = make_counter(s_.domain);
    auto c3 = make_counter(s_.domain);
    counting_resource arena;
    auto add = deferred_work::create_counter_add(s_.domain, threshold_condition{&c1, 2}, c2, 5, &arena);
    ASSERT_TRUE(add) << outcome(add.error());
    auto set = deferred_work::create_counter_set(s_.domain, threshold_condition{&c2, 5}, c3, 42, &arena);
    ASSERT_TRUE(set) << outcome(set.error());
    EXPECT_EQ(arena.allocations, 2) << "descriptors must come from the given memory resource";
    EXPECT_GT(arena.live_bytes, 0);
    EXPECT_EQ(add->kind(), loom::trigger::work_kind::counter_add);
    EXPECT_EQ(set->kind(), loom::trigger::work_kind::counter_set);

    // The descriptor stays put when the work object moves.
    const auto* native_before = add->native();
    deferred_work moved = std::move(*add);
    EXPECT_EQ(moved.native(), native_before);
    EXPECT_FALSE(add->pending());
    EXPECT_EQ(add->native(), nullptr);

    ASSERT_EQ(outcome(c1.add(1)), "ok");
    EXPECT_TRUE(stays(c2, 0)) << "fired below its threshold";
    EXPECT_EQ(c3.read(), 0u);
    ASSERT_EQ(outcome(c1.add(1)), "ok");
    ASSERT_TRUE(reaches(c2, 5)) << "c2 = " << c2.read();
    EXPECT_EQ(c2.read(), 5u);
    ASSERT_TRUE(reaches(c3, 42)) << "c3 = " << c3.read();
    EXPECT_EQ(c3.read(), 42u);
    // Each fired once: more increments of the trigger change nothing downstream.
    ASSERT_EQ(outcome(c1.add(3)), "ok");
    EXPECT_TRUE(stays(c2, 5));
    moved.mark_completed();
    set->mark_completed();
    EXPECT_EQ(arena.live_bytes, 0) << "mark_completed releases the descriptor";
}

TEST_F(core_trigger_sockets, the_allocator_example_runs) {
    // The "Allocator-Aware Design" example: a deferred counter add into a waitable counter.
    std::array<std::byte, 64 * 1024> buffer{};
    std::pmr::monotonic_buffer_resource arena{buffer.data(), buffer.size()};
    auto cntr = loom::counter::create(s_.domain, {}, &arena);
    ASSERT_TRUE(cntr);
    auto completed_cntr = loom::counter::create(s_.domain, {.wait_obj = true}, &arena);
    ASSERT_TRUE(completed_cntr);
    auto deferred =
        deferred_work::create_counter_add(s_.domain, threshold_condition{&*cntr, 1}, *completed_cntr, 1, &arena);
    ASSERT_TRUE(deferred) << outcome(deferred.error());
    const auto* p = reinterpret_cast<const std::byte*>(deferred->native());
    EXPECT_TRUE(p >= buffer.data() && p < buffer.data() + buffer.size()) << "descriptor not in the arena";
    ASSERT_EQ(outcome(cntr->add(1)), "ok");
    ASSERT_EQ(outcome(completed_cntr->wait(1, 5000ms)), "ok");
    deferred->mark_completed();
}

TEST_F(core_trigger_sockets, a_threshold_already_met_runs_at_submission) {
    auto c1 = make_counter(s_.domain);
    auto c2 = make_counter(s_.domain);
    ASSERT_EQ(outcome(c1.set(3)), "ok");
    auto met = deferred_work::create_counter_add(s_.domain, threshold_condition{&c1, 2}, c2, 7);
    ASSERT_TRUE(met) << outcome(met.error());
    ASSERT_TRUE(reaches(c2, 7, 2s));
    auto zero = deferred_work::create_counter_set(s_.domain, threshold_condition{&c2, 0}, c1, 100);
    ASSERT_TRUE(zero) << outcome(zero.error());
    ASSERT_TRUE(reaches(c1, 100, 2s)) << "threshold 0 is always met";
    met->mark_completed();
    zero->mark_completed();
}

// ================================================================ cancel / lifetime
TEST_F(core_trigger_sockets, cancel_of_pending_work_keeps_it_when_refused) {
    auto c1 = make_counter(s_.domain);
    auto c2 = make_counter(s_.domain);
    auto work = deferred_work::create_counter_add(s_.domain, threshold_condition{&c1, 1}, c2, 9);
    ASSERT_TRUE(work) << outcome(work.error());
    const auto* native = work->native();
    control_spy spy(s_.domain);
    auto r = work->cancel();
    EXPECT_EQ(spy.calls(), 1);
    EXPECT_EQ(spy.last_command(), FI_CANCEL_WORK);
    if (r) {
        // A provider that cancels: the work is gone and never fires.
        quirk("sockets", "FI_CANCEL_WORK succeeded");
        EXPECT_FALSE(work->pending());
        ASSERT_EQ(outcome(c1.add(1)), "ok");
        EXPECT_TRUE(stays(c2, 0));
        return;
    }
    quirk("sockets", "FI_CANCEL_WORK -> " + outcome(r));
    EXPECT_EQ(outcome(r), "not_implemented");
    // Refused: the work is retained untouched and still runs.
    EXPECT_TRUE(work->pending());
    EXPECT_EQ(work->native(), native);
    EXPECT_EQ(c2.read(), 0u);
    ASSERT_EQ(outcome(c1.add(1)), "ok");
    ASSERT_TRUE(reaches(c2, 9));
    work->mark_completed();
    EXPECT_EQ(outcome(work->cancel()), "ok");
    EXPECT_EQ(spy.calls(), 1) << "cancel of completed work must not reach the provider";

    auto flushed = loom::trigger::flush_work(s_.domain);
    EXPECT_EQ(spy.last_command(), FI_FLUSH_WORK);
    quirk("sockets", "FI_FLUSH_WORK -> " + outcome(flushed));
}

TEST_F(core_trigger_sockets, pending_work_keeps_the_domain_open) {
    auto c1 = make_counter(s_.domain);
    auto c2 = make_counter(s_.domain);
    const long before = s_.domain.open_children();
    auto work = deferred_work::create_counter_add(s_.domain, threshold_condition{&c1, 1}, c2, 1);
    ASSERT_TRUE(work) << outcome(work.error());
    EXPECT_EQ(s_.domain.open_children(), before + 1);
    ASSERT_EQ(outcome(c1.add(1)), "ok");
    ASSERT_TRUE(reaches(c2, 1));
    work->mark_completed();
    EXPECT_EQ(s_.domain.open_children(), before);
}

TEST_F(core_trigger_sockets, a_refused_submission_keeps_nothing) {
    // The provider's refusal is simulated (the spy answers FI_QUEUE_WORK with -FI_EAGAIN):
    // sockets has no safe way to refuse valid work — a deferred send to a handle the AV does
    // not hold reads outside the AV table in sock_ep_connect (seen under AddressSanitizer).
    auto go = make_counter(s_.domain);
    auto done = make_counter(s_.domain);
    counting_resource arena;
    std::array<std::byte, 8> out{};
    const long before = s_.domain.open_children();
    control_spy spy(s_.domain);
    spy.refuse_with = -FI_EAGAIN;
    auto work = deferred_work::create_send(
        s_.domain, s_.a, threshold_condition{&go, 1}, &done,
        loom::msg::send_message<void*>{.iov = {{out.data(), out.size()}}, .addr = s_.addr_b}, {}, &arena);
    ASSERT_FALSE(work.has_value());
    EXPECT_EQ(outcome(work.error()), "again");
    EXPECT_EQ(spy.calls(), 1);
    EXPECT_EQ(arena.allocations, 1);
    EXPECT_EQ(arena.live_bytes, 0) << "the descriptor of refused work must be released";
    EXPECT_EQ(s_.domain.open_children(), before);
    auto counter_work = deferred_work::create_counter_add(s_.domain, threshold_condition{&go, 1}, done, 1, &arena);
    EXPECT_EQ(outcome(counter_work), "again");
    EXPECT_EQ(arena.live_bytes, 0);
}

using core_trigger_death = core_trigger_sockets;

TEST_F(core_trigger_death, destroying_uncancellable_pending_work_terminates) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    auto c1 = make_counter(s_.domain);
    auto c2 = make_counter(s_.domain);
    {
        auto probe = deferred_work::create_counter_add(s_.domain, threshold_condition{&c1, 1}, c2, 1);
        ASSERT_TRUE(probe) << outcome(probe.error());
        if (probe->cancel()) GTEST_SKIP() << "this provider cancels work: the destructor does not terminate";
        ASSERT_EQ(outcome(c1.add(1)), "ok");
        ASSERT_TRUE(reaches(c2, 1));
        probe->mark_completed();
    }
    // std::terminate aborts; an exit (e.g. creation failing) does not pass as that death.
    EXPECT_EXIT(
        {
            auto w = deferred_work::create_counter_add(s_.domain, threshold_condition{&c1, 100}, c2, 1);
            if (!w) std::exit(3);
        },
        ::testing::KilledBySignal(SIGABRT), "");
    EXPECT_EXIT(
        {
            auto w = deferred_work::create_counter_add(s_.domain, threshold_condition{&c1, 100}, c2, 1);
            if (!w) std::exit(3);
            deferred_work other;
            w.value() = std::move(other);  // assigning over pending work abandons it too
            std::exit(4);                  // not reached
        },
        ::testing::KilledBySignal(SIGABRT), "");
}

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
