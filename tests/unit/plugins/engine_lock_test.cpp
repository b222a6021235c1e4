// The asymmetric engine lock: the thread that keeps taking it becomes the owner and enters
// without an atomic read-modify-write; other threads still exclude it (membarrier); owners
// change hands; two busy threads turn it plain; mutual exclusion holds throughout.
#include <gtest/gtest.h>

#include "lock_checks.hpp"

#include <atomic>
#include <loom/plugins/engine_lock.hpp>
#include <mutex>
#include <thread>
#include <vector>

namespace lp = loom::plugins;

namespace {

/// A non-atomic read-modify-write with a window between read and write (and an overlap check):
/// lost updates or a second thread inside show up unless the lock excludes.
struct guarded_counter {
    volatile long value = 0;
    std::atomic<int> inside{0};
    std::atomic<int> overlaps{0};
    void bump(bool yield, int hold = 0) {
        if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
        const long v = value;
        if (yield) std::this_thread::yield();
        for (int k = 0; k < hold; ++k) asm volatile("" ::: "memory");  // stay inside a while
        value = v + 1;
        inside.fetch_sub(1);
    }
};

}  // namespace

TEST(engine_lock, the_thread_that_keeps_taking_it_becomes_the_owner) {
    lp::engine_lock mu;
    if (mu.plain()) GTEST_SKIP() << "no membarrier here: the lock is plain";
    for (unsigned i = 0; i < lp::engine_lock::rebias_streak; ++i) {
        std::lock_guard lock(mu);
    }
    EXPECT_TRUE(mu.owned_by_this_thread());
    const auto before = mu.fast_entries();
    for (int i = 0; i < 1000; ++i) {
        std::lock_guard lock(mu);
    }
    EXPECT_EQ(mu.fast_entries(), before + 1000);  // no slow path for the owner
    EXPECT_EQ(mu.membarriers(), 0U);
    // Another thread excludes the owner (through membarrier) and, taking it again and again
    // while the owner is idle, becomes the owner itself.
    std::thread([&] {
        for (unsigned i = 0; i < lp::engine_lock::rebias_streak; ++i) {
            std::lock_guard lock(mu);
        }
        EXPECT_TRUE(mu.owned_by_this_thread());
    }).join();
    EXPECT_FALSE(mu.owned_by_this_thread());
    EXPECT_GE(mu.membarriers(), 1U);
    EXPECT_FALSE(mu.plain());
}

TEST(engine_lock, excludes_an_owner_and_occasional_other_threads) {
    lp::engine_lock mu;
    guarded_counter c;
    constexpr int owner_rounds = 200000;
    constexpr int other_rounds = 100;
    std::atomic<bool> owner_ready{false};
    std::thread owner([&] {
        for (unsigned i = 0; i < lp::engine_lock::rebias_streak; ++i) {
            std::lock_guard lock(mu);
            c.bump(false);
        }
        owner_ready = true;
        for (int i = 0; i < owner_rounds; ++i) {
            std::lock_guard lock(mu);
            c.bump((i & 4095) == 0, 200);  // the owner is inside most of the time
        }
    });
    while (!owner_ready) std::this_thread::yield();
    std::vector<std::thread> others;
    for (int t = 0; t < 2; ++t)
        others.emplace_back([&] {
            for (int i = 0; i < other_rounds; ++i) {
                {
                    std::lock_guard lock(mu);
                    c.bump((i & 15) == 0);
                }
                // Rarely enough that the lock stays biased (under plain_after barriers per window).
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
        });
    owner.join();
    for (auto& t : others) t.join();
    EXPECT_EQ(c.overlaps.load(), 0);
    EXPECT_EQ(c.value, long{lp::engine_lock::rebias_streak} + owner_rounds + 2L * other_rounds);
    if (!mu.plain()) {  // (plain only without membarrier on this machine)
        EXPECT_GT(mu.fast_entries(), std::uint64_t{owner_rounds} / 2);
        EXPECT_GT(mu.membarriers(), 0U);
    }
}

TEST(engine_lock, two_busy_threads_turn_it_plain_and_stay_exclusive) {
    lp::engine_lock mu;
    guarded_counter c;
    constexpr int threads = 4;  // more than this machine's cores
    constexpr int rounds = 50000;
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
        ts.emplace_back([&] {
            for (int i = 0; i < rounds; ++i) {
                std::lock_guard lock(mu);
                c.bump((i & 1023) == 0);
            }
        });
    for (auto& t : ts) t.join();
    EXPECT_EQ(c.overlaps.load(), 0);
    EXPECT_EQ(c.value, long{threads} * rounds);
    // Owners came and went under this load; the barriers piled up, so the lock went plain (or
    // never had membarrier to begin with).
    EXPECT_TRUE(mu.plain() || mu.membarriers() <= lp::engine_lock::plain_after) << mu.membarriers();
}

TEST(engine_lock, try_lock_fails_while_held_and_plain_from_the_start_works) {
    for (bool biased : {true, false}) {
        lp::engine_lock mu(biased);
        if (!biased) {
            EXPECT_TRUE(mu.plain());
        }
        lock_checks::expect_try_lock_excludes_other_threads(mu);
        for (unsigned i = 0; i < 2 * lp::engine_lock::rebias_streak; ++i) {
            std::lock_guard lock(mu);
        }
        EXPECT_EQ(mu.owned_by_this_thread(), biased && !mu.plain());
    }
}
