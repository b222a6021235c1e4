// loom/plugins/submission_queue.hpp — what a submission's return code means for an operation,
// and the operations the provider refused for now (FI_EAGAIN): retried at every progress call
// until they go, or failed once LOOM_EAGAIN_TIMEOUT_MS has passed since the first refusal.
// Nothing spins and nothing waits forever. Allocation-free once reserved.
#pragma once

#include <loom/plugins/operation.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace loom::plugins {

/// What became of a submission (submission_queue::settle).
enum class settled : std::uint8_t {
    in_flight,  ///< the provider took it; a completion follows
    complete,   ///< the provider took it and nothing will complete (an inject)
    deferred,   ///< refused for now: queued for the next retry
    failed,     ///< refused for good, or for longer than the timeout
};

/// The operations the provider refused for now (FI_EAGAIN), retried at every progress call until they go or the timeout
/// passes.
class submission_queue {
public:
    /// The clock the queue reads (replaceable for tests).
    using clock_fn = clock::time_point (*)() noexcept;
    /// Operations refused for longer than `timeout` fail; `now` is the clock.
    explicit submission_queue(std::chrono::milliseconds timeout = std::chrono::milliseconds(10000),
                              clock_fn now = &steady_now) noexcept
        : timeout_(timeout), now_(now) {}

    /// `rc` is what the submission returned: 0 in flight, 1 complete already, -FI_EAGAIN, or
    /// another -FI_E* (failed). The clock is read only on a refusal.
    auto settle(op& o, int rc) noexcept -> settled;
    /// Hands every queued operation to `resubmit` once (which submits it and settles it again);
    /// one dropped meanwhile is skipped.
    template <class F>
    void retry(F&& resubmit) {
        if (deferred_.empty()) return;
        retrying_.swap(deferred_);
        for (op* o : retrying_)
            if (o->deferred) resubmit(*o);
        retrying_.clear();
    }
    /// Takes `o` off the queue (its owner is being closed).
    void drop(op& o) noexcept;
    /// True when nothing waits for a retry.
    [[nodiscard]] auto empty() const noexcept -> bool { return deferred_.empty(); }
    /// Operations waiting for a retry.
    [[nodiscard]] auto size() const noexcept -> std::size_t { return deferred_.size(); }
    /// Submissions refused at least once so far.
    [[nodiscard]] auto refusals() const noexcept -> std::uint64_t { return refusals_; }
    /// Room for `n` queued operations, so that queueing allocates nothing.
    void reserve(std::size_t n) {
        deferred_.reserve(n);
        retrying_.reserve(n);
    }
    /// Sets how long an operation may keep being refused.
    void set_timeout(std::chrono::milliseconds t) noexcept { timeout_ = t; }

private:
    static auto steady_now() noexcept -> clock::time_point { return clock::now(); }
    std::chrono::milliseconds timeout_;
    clock_fn now_;
    std::vector<op*> deferred_{};
    std::vector<op*> retrying_{};  ///< swapped with deferred_ while retrying (both keep their capacity)
    std::uint64_t refusals_{0};
};

}  // namespace loom::plugins
