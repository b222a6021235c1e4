// The submission queue without a provider: what each return code means, a refusal queued and
// retried until it goes, a refusal that lasts beyond the timeout failed (time from the first
// refusal, not the last), dropped operations skipped, and the refusal count.
#include <loom/plugins/submission_queue.hpp>

#include <gtest/gtest.h>

#include <rdma/fi_errno.h>

#include <array>
#include <vector>

namespace lp = loom::plugins;
using namespace std::chrono_literals;

namespace {

lp::clock::time_point fake_now{};
auto fake_clock() noexcept -> lp::clock::time_point { return fake_now; }

struct SubmissionQueue : ::testing::Test {
    lp::submission_queue q{100ms, &fake_clock};
    void SetUp() override { fake_now = lp::clock::time_point{} + 1h; }
};

TEST_F(SubmissionQueue, ReturnCodesSettleAnOperation) {
    lp::op a, b, c;
    EXPECT_EQ(q.settle(a, 0), lp::settled::in_flight);
    EXPECT_TRUE(a.in_flight);
    EXPECT_EQ(q.settle(b, 1), lp::settled::complete);
    EXPECT_FALSE(b.in_flight);
    EXPECT_EQ(q.settle(c, -FI_EINVAL), lp::settled::failed);
    EXPECT_TRUE(q.empty());
    EXPECT_EQ(q.refusals(), 0U);
}

TEST_F(SubmissionQueue, ARefusalIsRetriedUntilItGoes) {
    lp::op o;
    ASSERT_EQ(q.settle(o, -FI_EAGAIN), lp::settled::deferred);
    EXPECT_TRUE(o.deferred);
    EXPECT_EQ(q.size(), 1U);
    int attempts = 0;
    for (int round = 0; round < 3; ++round) {
        fake_now += 10ms;
        q.retry([&](lp::op& x) {
            ++attempts;
            EXPECT_EQ(&x, &o);
            EXPECT_EQ(q.settle(x, -FI_EAGAIN), lp::settled::deferred);
        });
    }
    q.retry([&](lp::op& x) { EXPECT_EQ(q.settle(x, 0), lp::settled::in_flight); });
    EXPECT_EQ(attempts, 3);
    EXPECT_TRUE(q.empty());
    EXPECT_TRUE(o.in_flight);
    EXPECT_FALSE(o.deferred);
    EXPECT_EQ(q.refusals(), 1U);  // one submission, refused several times
}

TEST_F(SubmissionQueue, RefusalsBeyondTheTimeoutFailCountedFromTheFirst) {
    lp::op o;
    ASSERT_EQ(q.settle(o, -FI_EAGAIN), lp::settled::deferred);
    lp::settled last = lp::settled::deferred;
    int rounds = 0;
    while (last == lp::settled::deferred && rounds < 100) {
        fake_now += 30ms;
        ++rounds;
        q.retry([&](lp::op& x) { last = q.settle(x, -FI_EAGAIN); });
    }
    EXPECT_EQ(last, lp::settled::failed);
    EXPECT_EQ(rounds, 4);  // 30, 60, 90 ms still within 100; 120 ms not
    EXPECT_TRUE(q.empty());
    EXPECT_FALSE(o.deferred);
    // A new submission of the same operation starts a new clock.
    EXPECT_EQ(q.settle(o, -FI_EAGAIN), lp::settled::deferred);
    EXPECT_EQ(q.refusals(), 2U);
}

TEST_F(SubmissionQueue, DroppedOperationsAreNotRetried) {
    std::array<lp::op, 3> ops{};
    for (auto& o : ops) ASSERT_EQ(q.settle(o, -FI_EAGAIN), lp::settled::deferred);
    q.drop(ops[1]);
    EXPECT_FALSE(ops[1].deferred);
    std::vector<lp::op*> seen;
    q.retry([&](lp::op& x) {
        seen.push_back(&x);
        if (&x == &ops[0]) q.drop(ops[2]);  // dropped while a retry runs: skipped too
        EXPECT_EQ(q.settle(x, 0), lp::settled::in_flight);
    });
    EXPECT_EQ(seen, std::vector<lp::op*>{&ops[0]});
    EXPECT_TRUE(q.empty());
}

TEST_F(SubmissionQueue, RetryingAllocatesNothingOnceReserved) {
    q.reserve(8);
    std::array<lp::op, 8> ops{};
    for (auto& o : ops) ASSERT_EQ(q.settle(o, -FI_EAGAIN), lp::settled::deferred);
    for (int round = 0; round < 10; ++round) q.retry([&](lp::op& x) { (void)q.settle(x, -FI_EAGAIN); });
    EXPECT_EQ(q.size(), 8U);  // the capacities swap; nothing grows (checked under ASan for leaks)
}

}  // namespace
