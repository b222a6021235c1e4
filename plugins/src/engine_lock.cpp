// The asymmetric engine lock's slow side (engine_lock.hpp).
#include <loom/plugins/engine_lock.hpp>

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace loom::plugins {
namespace {

/// Registers this process for private expedited membarrier once; false where the kernel (or a
/// seccomp filter) does not offer it.
auto membarrier_ready() noexcept -> bool {
    static const bool ready = [] {
        const long cmds = ::syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
        if (cmds < 0 || (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
        return ::syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
    }();
    return ready;
}

/// A full memory barrier on every running thread of this process.
auto membarrier_all() noexcept -> bool {
    return ::syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0;
}

}  // namespace

engine_lock::engine_lock(bool biased) noexcept {
    if (!biased || !membarrier_ready()) plain_.store(true, std::memory_order_relaxed);
}

void engine_lock::exclude_owner() noexcept {
    // pending_ is set. An owner may be inside, or between its store to busy_ and its loads: a
    // barrier on it makes its store visible here, or this pending_ visible to its loads.
    if (owner_.load(std::memory_order_relaxed) != nullptr && !plain_.load(std::memory_order_relaxed)) {
        if (!membarrier_all()) {
            // Cannot happen once registered. Without the barrier the owner may still slip in:
            // plain from now on, and wait for its store to drain (x86 drains within microseconds).
            plain_.store(true, std::memory_order_seq_cst);
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        ++membarriers_;
        const auto now = std::chrono::steady_clock::now();
        if (now - window_start_ > plain_window) {
            window_start_ = now;
            window_membarriers_ = 0;
        }
        // Two threads busy on one engine: the barriers cost more than the atomic they save.
        if (++window_membarriers_ > plain_after) plain_.store(true, std::memory_order_relaxed);
    }
    unsigned spins = 0;
    while (busy_.load(std::memory_order_acquire) != 0) spin_relax(spins);
}

void engine_lock::lock_slow(const void* me) noexcept {
    slow_.lock();
    pending_.store(1, std::memory_order_relaxed);
    exclude_owner();
    held_fast_ = false;
    if (plain_.load(std::memory_order_relaxed) || owner_.load(std::memory_order_relaxed) == me) return;
    // Rebias: this thread came through here `rebias_streak` times in a row and the owner (if any)
    // did not enter meanwhile. The owner is outside (excluded above) and will see the change
    // after this thread's release of pending_.
    const std::uint64_t fast = fast_entries_.load(std::memory_order_relaxed);
    if (streak_thread_ != me || fast != streak_fast_mark_) {
        streak_thread_ = me;
        streak_fast_mark_ = fast;
        streak_ = 0;
    }
    if (++streak_ >= rebias_streak) {
        owner_.store(me, std::memory_order_relaxed);
        streak_ = 0;
        streak_thread_ = nullptr;
    }
}

auto engine_lock::try_lock() noexcept -> bool {
    if (!slow_.try_lock()) return false;
    pending_.store(1, std::memory_order_relaxed);
    exclude_owner();
    held_fast_ = false;
    return true;
}

}  // namespace loom::plugins
