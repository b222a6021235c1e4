// The runtime components' bounded wait: progress outside their lock until a condition, checked
// under it, holds or a deadline passes (the transfer agent and the PE group both wait so).
#pragma once

#include <chrono>
#include <mutex>

namespace loom::plugins {

/// Evaluates `done()` under `mu`; while false, calls `progress()` without it. False once
/// `limit` has passed without `done()`.
template <class Mutex, class Done, class Progress>
[[nodiscard]] auto poll_until(Mutex& mu, Done done, Progress progress, std::chrono::milliseconds limit) -> bool {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
        {
            std::lock_guard lock(mu);
            if (done()) return true;
        }
        if (std::chrono::steady_clock::now() >= deadline) return false;
        progress();
    }
}

}  // namespace loom::plugins
