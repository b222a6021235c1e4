// Unit tests for loom/detail/spin_lock.hpp and loom/detail/single_threaded.hpp: which sections
// take the lock, before and after the process starts its second thread. The first test needs a
// process that has not started a thread yet: ctest runs each test in a process of its own, and
// GoogleTest runs the tests of one binary in the order written.
#include <loom/detail/single_threaded.hpp>
#include <loom/detail/spin_lock.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace {

using loom::detail::lock_unless_single_threaded;
using loom::detail::process_is_single_threaded;
using loom::detail::spin_lock;
using loom::detail::spin_lock_unless_serialized;

/// True when `m` is free: taken and given back at once.
auto is_free(spin_lock_unless_serialized& m) -> bool {
    if (!m.try_lock()) return false;
    m.unlock();
    return true;
}

TEST(LockUnlessSingleThreaded, is_not_taken_before_a_second_thread_and_taken_after) {
#ifdef LOOM_DETAIL_HAS_LIBC_SINGLE_THREADED
    ASSERT_TRUE(process_is_single_threaded()) << "this test needs a process that has started no thread";
    spin_lock_unless_serialized m(false);
    {
        const lock_unless_single_threaded g(m);
        EXPECT_TRUE(is_free(m));  // no other thread could have entered
    }
    std::thread([] {}).join();
    EXPECT_FALSE(process_is_single_threaded());  // and stays so once the thread has ended
    {
        const lock_unless_single_threaded g(m);
        EXPECT_FALSE(is_free(m));
    }
    EXPECT_TRUE(is_free(m));
#else
    EXPECT_FALSE(process_is_single_threaded());  // a C library that does not say
#endif
}

TEST(SpinLock, a_waiter_gets_the_lock_when_its_holder_gives_it_back) {
    spin_lock l;
    l.lock();
    EXPECT_FALSE(l.try_lock());
    std::atomic<bool> got{false};
    std::thread waiter([&] {
        l.lock();  // finds it taken: waits out of line (wait_and_lock)
        got.store(true);
        l.unlock();
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(got.load());
    l.unlock();
    waiter.join();
    EXPECT_TRUE(got.load());
    EXPECT_TRUE(l.try_lock());
    l.unlock();
}

TEST(SpinLock, counts_from_several_threads_are_not_lost) {
    spin_lock l;
    long count = 0;
    constexpr int threads = 4;
    constexpr int each = 20000;
    std::vector<std::thread> pool;
    pool.reserve(threads);
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&] {
            for (int i = 0; i < each; ++i) {
                l.lock();
                ++count;
                l.unlock();
            }
        });
    for (auto& t : pool) t.join();
    EXPECT_EQ(count, long{threads} * each);
}

}  // namespace
