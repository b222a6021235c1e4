// Checks shared by the plugin lock tests (spin_mutex, engine_lock).
#pragma once

#include <gtest/gtest.h>

#include <thread>

namespace lock_checks {

/// While this thread holds `mu` (taken with try_lock), another thread's try_lock fails; once
/// released, another thread's try_lock succeeds (and it gives the lock back).
template <class Lock>
void expect_try_lock_excludes_other_threads(Lock& mu) {
    ASSERT_TRUE(mu.try_lock());
    bool other = true;
    std::thread([&] { other = mu.try_lock(); }).join();
    EXPECT_FALSE(other);
    mu.unlock();
    std::thread([&] {
        other = mu.try_lock();
        if (other) mu.unlock();
    }).join();
    EXPECT_TRUE(other);
}

}  // namespace lock_checks
