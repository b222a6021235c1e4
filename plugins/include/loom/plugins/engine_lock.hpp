#pragma once
// The engine lock, asymmetric: one thread (the owner — typically the host's progress
// thread that makes the send/receive/test calls) enters with a plain store and two loads, no atomic
// read-modify-write; every other thread takes a slow path that forces a full barrier on the
// owner with membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) (Dekker's protocol with the owner's
// fence moved to the other side). Taking an ordinary spin lock is an xchg, a full barrier that
// waits for the stores still in flight — after an inject into a peer's shm region that was about
// a fifth of the sender's time in an 8-byte stream (docs/plugins.md).
//
// Owner: a thread that takes the slow path `rebias_streak` times in a row while the owner did
// not enter at all becomes the owner (a host may connect and accept from a service thread
// first, then its progress thread takes over). Where the slow path needs membarrier often — two busy
// threads, e.g. LOOM_PROGRESS_THREAD=1 or several host threads — the lock turns plain for good:
// the slow path for everyone, without membarrier. Also plain from the start where membarrier is
// unavailable (old kernels, seccomp). Not reentrant.
#include <loom/plugins/spin_mutex.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>

namespace loom::plugins {

/// The engine's lock: the owner thread enters without an atomic read-modify-write, other threads take a slow path that
/// fences the owner (see the file's comment).
class engine_lock {
public:
    /// `biased` false: a plain lock from the start (no owner, no membarrier).
    explicit engine_lock(bool biased = true) noexcept;
    engine_lock(const engine_lock&) = delete;
    auto operator=(const engine_lock&) -> engine_lock& = delete;

    /// Takes the lock: the fast path for the owner, the slow path for everyone else.
    void lock() noexcept {
        const void* me = self();
        if (owner_.load(std::memory_order_relaxed) == me) [[likely]] {
            busy_.store(1, std::memory_order_relaxed);
            std::atomic_signal_fence(std::memory_order_seq_cst);  // the other side's membarrier orders it
            if (pending_.load(std::memory_order_acquire) == 0 && !plain_.load(std::memory_order_relaxed) &&
                owner_.load(std::memory_order_relaxed) == me) [[likely]] {
                held_fast_ = true;
                fast_entries_.store(fast_entries_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
                return;
            }
            busy_.store(0, std::memory_order_release);
        }
        lock_slow(me);
    }
    /// Releases the lock.
    void unlock() noexcept {
        if (held_fast_) {
            held_fast_ = false;
            busy_.store(0, std::memory_order_release);
            return;
        }
        pending_.store(0, std::memory_order_release);
        slow_.unlock();
    }
    /// A plain lock from now on. Only before the lock is shared between threads (an engine that
    /// starts its own progress thread: two busy threads).
    void make_plain() noexcept { plain_.store(true, std::memory_order_relaxed); }
    /// Never takes the fast path (tests, rare callers): the slow path's try (it waits for an
    /// owner inside to leave).
    [[nodiscard]] auto try_lock() noexcept -> bool;

    /// For tests and logs.
    [[nodiscard]] auto owned_by_this_thread() const noexcept -> bool {
        return owner_.load(std::memory_order_relaxed) == self();
    }
    /// True once the lock is plain (no owner, no membarrier).
    [[nodiscard]] auto plain() const noexcept -> bool { return plain_.load(std::memory_order_relaxed); }
    /// Entries the owner made on the fast path.
    [[nodiscard]] auto fast_entries() const noexcept -> std::uint64_t {
        return fast_entries_.load(std::memory_order_relaxed);
    }
    /// membarrier calls the slow path made.
    [[nodiscard]] auto membarriers() const noexcept -> std::uint64_t { return membarriers_; }

    /// Slow-path entries in a row (the owner absent) after which that thread becomes the owner.
    static constexpr unsigned rebias_streak = 64;
    /// More membarriers than this within `plain_window`: plain for good.
    static constexpr unsigned plain_after = 256;
    /// The window over which plain_after counts membarriers.
    static constexpr std::chrono::milliseconds plain_window{100};

private:
    /// A per-thread address: the thread pointer (one instruction on x86-64).
    static auto self() noexcept -> const void* {
#if defined(__has_builtin)
#if __has_builtin(__builtin_thread_pointer) && (defined(__x86_64__) || defined(__aarch64__))
#define LOOM_ENGINE_LOCK_THREAD_POINTER 1
#endif
#endif
#ifdef LOOM_ENGINE_LOCK_THREAD_POINTER
        return __builtin_thread_pointer();
#else
        static thread_local const char token = 0;
        return &token;
#endif
    }
    void lock_slow(const void* me) noexcept;
    /// After pending_ is set: waits until the owner is outside (forcing its barrier first).
    void exclude_owner() noexcept;

    // The owner's line: written by the owner on every entry.
    alignas(64) std::atomic<int> busy_{0};
    std::atomic<std::uint64_t> fast_entries_{0};
    bool held_fast_{false};  // written by the holder only
    // Read by the owner on every entry, written rarely (under the slow lock).
    alignas(64) std::atomic<const void*> owner_{nullptr};
    std::atomic<bool> plain_{false};
    // The slow side.
    alignas(64) std::atomic<int> pending_{0};
    spin_mutex slow_{};
    // Under slow_:
    const void* streak_thread_{nullptr};
    unsigned streak_{0};
    std::uint64_t streak_fast_mark_{0};
    std::uint64_t membarriers_{0};
    unsigned window_membarriers_{0};
    std::chrono::steady_clock::time_point window_start_{};
};

}  // namespace loom::plugins
