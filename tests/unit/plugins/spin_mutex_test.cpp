// The engine lock: mutual exclusion under contention (more threads than this machine's cores,
// so a waiter must yield for the holder to run), try_lock, and use with std::lock_guard.
#include <gtest/gtest.h>

#include "lock_checks.hpp"

#include <loom/plugins/spin_mutex.hpp>
#include <mutex>
#include <thread>
#include <vector>

namespace lp = loom::plugins;

TEST(spin_mutex, excludes_under_contention) {
    lp::spin_mutex mu;
    // A non-atomic read-modify-write with a window between read and write: lost updates show
    // up as a short total unless the lock excludes.
    volatile long counter = 0;
    constexpr int threads = 6;
    constexpr int rounds = 20000;
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
        ts.emplace_back([&] {
            for (int i = 0; i < rounds; ++i) {
                std::lock_guard lock(mu);
                const long v = counter;
                if ((i & 255) == 0) std::this_thread::yield();  // hold the lock across a reschedule
                counter = v + 1;
            }
        });
    for (auto& t : ts) t.join();
    EXPECT_EQ(counter, long{threads} * rounds);
}

TEST(spin_mutex, try_lock_fails_while_held) {
    lp::spin_mutex mu;
    lock_checks::expect_try_lock_excludes_other_threads(mu);
}
