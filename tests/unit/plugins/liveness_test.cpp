// The liveness thresholds: nothing while nothing waits, pings every quarter of the timeout,
// dead after three quarters of silence, so a death is noticed within the timeout.
#include <loom/plugins/liveness.hpp>

#include <gtest/gtest.h>

namespace lp = loom::plugins;
using namespace std::chrono_literals;

namespace {

constexpr auto timeout = 1000ms;
const lp::liveness_clock::time_point t0{std::chrono::seconds(100)};

TEST(Liveness, NothingHappensWhileNoRequestWaits) {
    EXPECT_EQ(lp::liveness_step(false, t0 + 1h, t0, t0, timeout), lp::liveness_action::none);
}

TEST(Liveness, PingsEveryQuarterOfTheTimeout) {
    EXPECT_EQ(lp::ping_interval(timeout), 250ms);
    EXPECT_EQ(lp::liveness_step(true, t0 + 249ms, t0, t0, timeout), lp::liveness_action::none);
    EXPECT_EQ(lp::liveness_step(true, t0 + 250ms, t0, t0, timeout), lp::liveness_action::ping);
    EXPECT_EQ(lp::liveness_step(true, t0 + 260ms, t0 + 250ms, t0 + 250ms, timeout), lp::liveness_action::none);
}

TEST(Liveness, DeadAfterThreeQuartersOfSilence) {
    EXPECT_EQ(lp::silence_limit(timeout), 750ms);
    EXPECT_EQ(lp::liveness_step(true, t0 + 750ms, t0, t0 + 500ms, timeout), lp::liveness_action::ping);
    EXPECT_EQ(lp::liveness_step(true, t0 + 751ms, t0, t0 + 750ms, timeout), lp::liveness_action::declare_dead);
}

TEST(Liveness, APeerThatAnswersIsNeverDeclaredDead) {
    // Pongs arrive 30 ms after each ping: the silence never exceeds a quarter plus that.
    auto heard = t0, pinged = t0;
    for (auto now = t0; now < t0 + 60s; now += 10ms) {
        const auto a = lp::liveness_step(true, now, heard, pinged, timeout);
        ASSERT_NE(a, lp::liveness_action::declare_dead) << (now - t0).count();
        if (a == lp::liveness_action::ping) pinged = now;
        if (now - pinged == 30ms) heard = now;
    }
}

TEST(Liveness, ADeathIsNoticedWithinTheTimeout) {
    // Checks every 100 ms; the peer answers each ping at once until it dies at `death`.
    for (auto death = t0 + 5s; death < t0 + 5s + 500ms; death += 7ms) {
        auto heard = t0, pinged = t0;
        auto declared = lp::liveness_clock::time_point::max();
        for (auto now = t0; now < death + 5s; now += 100ms) {
            const auto a = lp::liveness_step(true, now, heard, pinged, timeout);
            if (a == lp::liveness_action::declare_dead) {
                declared = now;
                break;
            }
            if (a == lp::liveness_action::ping) {
                pinged = now;
                if (now < death) heard = now;
            }
        }
        ASSERT_GE(declared, death);
        ASSERT_LE(declared - death, timeout + 100ms) << "death at +" << (death - t0).count();
    }
}

TEST(Liveness, PeersAreCheckedAtLeastEveryPingInterval) {
    // A silent peer is declared dead no sooner than the third check that finds it silent, however
    // short the timeout (checks every 100 ms used to make a 300 ms timeout's peers die waiting).
    EXPECT_EQ(lp::check_period(timeout), 100ms);
    EXPECT_EQ(lp::check_period(lp::min_peer_timeout), 25ms);
    EXPECT_EQ(lp::check_period(400ms), 100ms);
    for (auto t : {lp::min_peer_timeout, 120ms, 399ms, 400ms, 1000ms, 5000ms}) {
        EXPECT_LE(lp::check_period(t), lp::ping_interval(t)) << t.count();
        EXPECT_GE(lp::silence_limit(t), 3 * lp::check_period(t)) << t.count();
    }
}

TEST(Liveness, APingRefusedForNowGoesAgainAtTheNextCheck) {
    // The refused ping leaves the time of the last ping as it was: the retry, a millisecond later,
    // is still due, and its pong has the same two checks as any other.
    const auto first = t0 + 250ms;
    ASSERT_EQ(lp::liveness_step(true, first, t0, t0, timeout), lp::liveness_action::ping);
    EXPECT_EQ(lp::liveness_step(true, first + lp::refused_ping_retry, t0, t0, timeout), lp::liveness_action::ping);
    EXPECT_LT(lp::refused_ping_retry, lp::check_period(lp::min_peer_timeout));
}

TEST(Liveness, ConnectionErrorsSayThePeerIsUnreachable) {
    for (auto e : {loom::errc::host_unreachable, loom::errc::connection_refused, loom::errc::connection_reset,
                   loom::errc::connection_aborted, loom::errc::not_connected, loom::errc::network_unreachable,
                   loom::errc::shutdown})
        EXPECT_TRUE(lp::means_peer_unreachable(loom::make_error_code(e))) << loom::make_error_code(e).message();
    for (auto e : {loom::errc::timed_out, loom::errc::io_error, loom::errc::truncated, loom::errc::canceled,
                   loom::errc::again, loom::errc::invalid_argument})
        EXPECT_FALSE(lp::means_peer_unreachable(loom::make_error_code(e))) << loom::make_error_code(e).message();
    EXPECT_FALSE(lp::means_peer_unreachable(std::make_error_code(std::errc::host_unreachable)))  // not a provider's
        << "only completion errors of the fabric category count";
    EXPECT_FALSE(lp::means_peer_unreachable({}));
}

}  // namespace
