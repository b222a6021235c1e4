// loom/execution/scheduler.hpp — loom::scheduler: a scheduler that keeps a completion queue.
#pragma once

#include <loom/completion_queue.hpp>
#include <loom/execution/backend.hpp>

#include <memory>
#include <type_traits>
#include <utility>

namespace loom {

class schedule_sender;

/// Keeps a completion queue alive for the work scheduled on it. Its schedule() sender
/// completes inline, on the thread that starts it: no progress thread, no hop to the thread
/// polling the queue (that one calls loom::execution::poll_completions).
class scheduler {
public:
    /// Marks it a P2300 scheduler.
    using scheduler_concept = execution::scheduler_t;

    /// A scheduler that keeps `cq` alive.
    explicit scheduler(std::shared_ptr<completion_queue> cq) noexcept : cq_(std::move(cq)) {}

    /// A sender that completes inline when started.
    [[nodiscard]] auto schedule() const noexcept -> schedule_sender;
    /// The queue whose progress the application drives.
    [[nodiscard]] auto queue() const noexcept -> const std::shared_ptr<completion_queue>& { return cq_; }
    /// Same queue.
    friend auto operator==(const scheduler& a, const scheduler& b) noexcept -> bool { return a.cq_ == b.cq_; }

private:
    std::shared_ptr<completion_queue> cq_;
};

/// What scheduler::schedule() returns: completes with set_value() when started.
class schedule_sender {
public:
    /// Marks it a P2300 sender.
    using sender_concept = execution::sender_t;
    /// It completes with set_value() only.
    using completion_signatures = execution::completion_signatures<execution::set_value_t()>;

    /// The operation state connect() returns.
    template <class R>
    class operation {
    public:
        /// Marks it a P2300 operation state.
        using operation_state_concept = execution::operation_state_t;
        /// The operation that completes `r`.
        explicit operation(R r) noexcept(std::is_nothrow_move_constructible_v<R>) : r_(std::move(r)) {}
        operation(const operation&) = delete;
        auto operator=(const operation&) -> operation& = delete;
        ~operation() = default;
        /// Completes the receiver with set_value().
        void start() & noexcept { execution::set_value(std::move(r_)); }

    private:
        R r_;
    };
    /// The operation that completes `r` when started.
    template <class R>
    auto connect(R r) const -> operation<R> {
        return operation<R>{std::move(r)};
    }
    /// Its environment names the scheduler it completes on.
    struct env {
        scheduler sched;  ///< the scheduler it completes on
        /// The scheduler set_value() completes on.
        [[nodiscard]] auto query(execution::get_completion_scheduler_t<execution::set_value_t>) const noexcept
            -> scheduler {
            return sched;
        }
    };
    /// Its environment.
    [[nodiscard]] auto get_env() const noexcept -> env { return env{sched_}; }

private:
    friend class scheduler;
    explicit schedule_sender(scheduler s) noexcept : sched_(std::move(s)) {}
    scheduler sched_;
};

inline auto scheduler::schedule() const noexcept -> schedule_sender { return schedule_sender{*this}; }

}  // namespace loom
