#pragma once
// The engine lock: one atomic exchange to take it, one release store to give it back. Plugin
// ABI calls hold it for a few hundred instructions, so a waiter spins briefly and then yields
// its core (on machines with fewer cores than spinning threads the holder must get to run).
#include <atomic>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace loom::plugins {

/// One step of a wait for a lock word: a pause for the first 128 steps, then a yield of the core
/// (on machines with fewer cores than spinning threads the holder must get to run).
inline void spin_relax(unsigned& spins) noexcept {
    if (++spins < 128) {
#if defined(__x86_64__) || defined(__i386__)
        _mm_pause();
#elif defined(__aarch64__)
        asm volatile("yield" ::: "memory");
#endif
        return;
    }
    std::this_thread::yield();
}

/// A lock of one atomic flag on its own cache line: waiters spin briefly, then yield.
class spin_mutex {
public:
    spin_mutex() = default;
    spin_mutex(const spin_mutex&) = delete;
    auto operator=(const spin_mutex&) -> spin_mutex& = delete;

    /// Takes the lock, spinning (then yielding) while it is held.
    void lock() noexcept {
        while (held_.exchange(true, std::memory_order_acquire)) {
            unsigned spins = 0;
            while (held_.load(std::memory_order_relaxed)) spin_relax(spins);
        }
    }
    /// Takes the lock if it is free; never waits.
    [[nodiscard]] auto try_lock() noexcept -> bool {
        return !held_.load(std::memory_order_relaxed) && !held_.exchange(true, std::memory_order_acquire);
    }
    /// Releases the lock.
    void unlock() noexcept { held_.store(false, std::memory_order_release); }

private:
    alignas(64) std::atomic<bool> held_{false};  // its own cache line: spinners do not disturb the holder's data
};

}  // namespace loom::plugins
