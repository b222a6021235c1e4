// loom/detail/spin_lock.hpp — a lock for critical sections of a few dozen instructions.
#pragma once

#include <loom/detail/single_threaded.hpp>

#include <atomic>

#include <sched.h>

namespace loom::detail {

/// Test-and-test-and-set: one atomic exchange to take it, a plain release store to give it back
/// (std::mutex pays a second locked instruction on unlock). Holders run a few dozen instructions
/// and never block; a waiter that finds it taken for long yields the processor, because on a
/// machine with few cores the holder may have been preempted. Meets Lockable.
class spin_lock {
public:
    void lock() noexcept {
        if (locked_.exchange(true, std::memory_order_acquire)) [[unlikely]]
            wait_and_lock();
    }
    [[nodiscard]] auto try_lock() noexcept -> bool {
        return !locked_.load(std::memory_order_relaxed) && !locked_.exchange(true, std::memory_order_acquire);
    }
    void unlock() noexcept { locked_.store(false, std::memory_order_release); }

private:
    /// lock() after finding it taken; out of line, so that the sections that inline lock() stay
    /// small enough to be inlined themselves.
    [[gnu::noinline, gnu::cold]] void wait_and_lock() noexcept {
        for (unsigned spins = 0;;) {
            while (locked_.load(std::memory_order_relaxed)) {
                if (++spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
                    __builtin_ia32_pause();
#endif
                } else {
                    ::sched_yield();
                }
            }
            if (!locked_.exchange(true, std::memory_order_acquire)) return;
        }
    }
    std::atomic<bool> locked_{false};
};

/// A spin_lock that is not taken at all when its owner is used by one thread at a time by
/// contract (libfabric's FI_THREAD_DOMAIN and FI_THREAD_COMPLETION: the application serializes
/// every call on the objects that share a completion queue). Fixed at construction. Meets
/// Lockable.
class spin_lock_unless_serialized {
public:
    explicit spin_lock_unless_serialized(bool serialized) noexcept : serialized_(serialized) {}
    void lock() noexcept {
        if (!serialized_) l_.lock();
    }
    [[nodiscard]] auto try_lock() noexcept -> bool { return serialized_ || l_.try_lock(); }
    void unlock() noexcept {
        if (!serialized_) l_.unlock();
    }
    [[nodiscard]] auto serialized() const noexcept -> bool { return serialized_; }

private:
    spin_lock l_;
    bool serialized_;
};

/// Holds a spin_lock_unless_serialized over a section that cannot start a thread (it calls no
/// callback and allocates nothing): the lock is not taken while the process has one thread,
/// since no other thread can enter the section or appear before it ends (a serialized lock is
/// never taken anyway). What the registry's per-operation calls use: a program that drives its
/// fabric from its only thread pays no locked instruction for them.
class [[nodiscard]] lock_unless_single_threaded {
public:
    explicit lock_unless_single_threaded(spin_lock_unless_serialized& m) noexcept
        : taken_(process_is_single_threaded() ? nullptr : &m) {
        if (taken_ != nullptr) taken_->lock();
    }
    lock_unless_single_threaded(const lock_unless_single_threaded&) = delete;
    auto operator=(const lock_unless_single_threaded&) -> lock_unless_single_threaded& = delete;
    ~lock_unless_single_threaded() {
        if (taken_ != nullptr) taken_->unlock();
    }

private:
    spin_lock_unless_serialized* taken_;  // null: not taken
};

}  // namespace loom::detail
