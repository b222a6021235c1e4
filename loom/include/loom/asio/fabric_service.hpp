// loom/asio/fabric_service.hpp — progress for Asio: reads registered completion queues from an
// io_context and runs the handlers of the operations they complete.
#pragma once

#include <loom/asio/detail/op_count.hpp>
#include <loom/asio/detail/operation.hpp>
#include <loom/completion_queue.hpp>

#include <asio/io_context.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

/// The Asio front end: fabric operations that take Asio completion tokens.
namespace loom::asio {

/// How fabric_service::register_cq progresses a queue.
struct queue_options {
    /// Wait on the queue's descriptor (a queue created with cq_attr::wait_obj whose wait object
    /// is FI_WAIT_FD and whose fabric supports fi_trywait); otherwise, and with false, poll on
    /// the timer.
    bool use_fd_polling{true};
    /// The timer's period for this queue (the shortest of all timer-polled queues is used);
    /// zero: read again as soon as the io_context has run what was ready before — until
    /// fabric_service::idle_reads in a row have found nothing, then every
    /// fabric_service::idle_interval until something completes (so that io_context::poll()
    /// returns, and an idle wait does not keep a core busy).
    std::chrono::microseconds poll_interval{0};
};

/// The io_context's fabric progress. While Asio operations are outstanding it reads every
/// registered queue — through the queue's wait descriptor where the provider offers one, on a
/// timer otherwise — delivers each event to the operation (of any front end) registered with
/// its context, resubmits operations the provider had refused with FI_EAGAIN, and runs the
/// handlers. With nothing outstanding it arms nothing, so io_context::run() returns.
///
/// The first event no operation owns (a context-free or foreign event, a queue error) is kept
/// and pauses that queue until take_unhandled() hands it over; the other queues go on. Service
/// calls and the completion handlers it runs are serialized; a handler may call the service
/// again, but must not wait for another thread that calls it.
class fabric_service final : public ::asio::io_context::service {
public:
    /// The service's identity in the io_context (Asio's service registry).
    static inline ::asio::io_context::id id;

    /// How a queue is progressed (loom::asio::queue_options).
    using queue_options = loom::asio::queue_options;
    /// Back-off of zero-interval polling (queue_options::poll_interval).
    static constexpr unsigned idle_reads = 256;
    /// Reads one zero-interval pass makes at most: it reads on after completions (running their
    /// handlers) until no operation is outstanding, so that other handlers wait no longer.
    static constexpr unsigned spin_reads = 64;
    /// The timer period zero-interval polling backs off to after idle_reads empty reads.
    static constexpr std::chrono::microseconds idle_interval{20};
    /// How a registered queue is progressed.
    enum class progress_kind {
        timer,      ///< read on a timer (queue_options::poll_interval)
        descriptor  ///< read when its wait descriptor (FI_WAIT_FD) becomes readable
    };

    /// The service of `ioc`; Asio creates it at first use (see use()).
    explicit fabric_service(::asio::io_context& ioc);
    fabric_service(const fabric_service&) = delete;
    auto operator=(const fabric_service&) -> fabric_service& = delete;
    ~fabric_service() override = default;

    /// The service of `ioc` (created at first use).
    [[nodiscard]] static auto use(::asio::io_context& ioc) -> fabric_service& {
        return ::asio::use_service<fabric_service>(ioc);
    }

    /// Reads `cq` from now on (it must stay at its address until deregistered).
    /// invalid_argument for a queue never created or already registered.
    auto register_cq(completion_queue& cq, const queue_options& options = {}) -> void_result;
    /// Stops reading `cq` (waiting for a poll under way on another thread) and returns the
    /// event kept for it, if any: look at it before destroying the queue.
    [[nodiscard]] auto deregister_cq(completion_queue& cq) -> std::optional<completion_event>;
    /// Polls the registered queues (from now on, whenever operations are outstanding).
    void start();
    /// Stops polling: operations stay outstanding; start() or poll_once() go on.
    void stop();
    /// True between start() and stop().
    [[nodiscard]] auto started() const -> bool;
    /// One read of every registered queue that is not paused, and the handlers of what
    /// completed (through their executors: inline where the caller runs that executor, else
    /// posted). Returns the number of events delivered to operations.
    auto poll_once() -> std::size_t;
    /// The event kept for `cq` (which then resumes), or nothing.
    [[nodiscard]] auto take_unhandled(completion_queue& cq) -> std::optional<completion_event>;
    /// How `cq` is progressed; nothing when it is not registered.
    [[nodiscard]] auto progress_of(const completion_queue& cq) const -> std::optional<progress_kind>;
    /// True when the io_context's concurrency hint has its I/O objects used from one thread at
    /// a time (ASIO_CONCURRENCY_HINT_UNSAFE or ASIO_CONCURRENCY_HINT_UNSAFE_IO): operations then
    /// count themselves, with the service and their endpoint, without atomic read-modify-writes.
    [[nodiscard]] auto one_thread() const noexcept -> bool { return outstanding_.one_thread(); }
    /// Asio operations started and not yet finished (their handlers not yet run).
    [[nodiscard]] auto outstanding_operations() const noexcept -> std::size_t {
        return static_cast<std::size_t>(outstanding_.load());
    }
    /// True when `cq` is registered (used by initiate_fabric_* to count their operations).
    [[nodiscard]] auto serves(const completion_queue& cq) const -> bool;

private:
    friend auto detail::service_operation_started(fabric_service& s) noexcept -> bool;
    friend void detail::service_arm_polling(fabric_service& s) noexcept;
    friend void detail::service_operation_finished(fabric_service& s) noexcept;
    friend void detail::service_operation_ready(fabric_service& s, detail::operation_base& op,
                                                bool final_delivery) noexcept;
    struct queue_entry;
    class pass_scope;

    void shutdown() override;
    // Called with mutex_ held.
    void schedule();
    void note_spin_only() noexcept;
    [[nodiscard]] auto start_spinning_pass() noexcept -> bool;
    void post_spinning_pass();
    /// Posts `f` (never run inline) with its memory from the per-thread cache of its type.
    template <class F>
    void post_cached(F&& f);
    void timer_pass(bool zero_interval);
    void descriptor_ready(const std::shared_ptr<queue_entry>& e, const std::error_code& ec);
    auto read_queue(queue_entry& e) -> std::size_t;
    auto prepare_wait(const std::shared_ptr<queue_entry>& e) -> bool;
    void run_ready();
    [[nodiscard]] auto take_ready() noexcept -> detail::operation_base*;
    [[nodiscard]] auto has_ready() const noexcept -> bool;
    void push_ready(detail::operation_base& op) noexcept;
    void push_ready_here(detail::operation_base& op) noexcept;
    [[nodiscard]] auto may_finish_here() const noexcept -> bool;
    void finish_here(detail::operation_base& op) noexcept;
    void reclaim();
    void wake() noexcept;
    [[nodiscard]] auto find(const completion_queue& cq) const -> std::shared_ptr<queue_entry>;

    ::asio::io_context& ioc_;
    mutable std::recursive_mutex mutex_;
    std::vector<std::shared_ptr<queue_entry>> queues_;
    // What passes and operations read, in two lines after the vector; the timer (large, used
    // only by timed passes) last.
    unsigned depth_{0};        // passes under way on the thread holding mutex_
    unsigned idle_passes_{0};  // timer passes in a row that completed nothing
    bool started_{false};
    std::atomic<bool> pass_scheduled_{false};  // the timer is armed or a pass is posted
    // Started, and every active queue is read in zero-interval passes that have not backed
    // off: an operation starting from idle posts a pass without taking mutex_ (schedule()
    // keeps it; a stale true costs one pass that finds nothing to do).
    std::atomic<bool> spin_only_{false};
    bool shut_down_{false};
    detail::op_count outstanding_;
    // Completed, handler not yet run: by other threads (LIFO), and by the pass's own thread
    // (FIFO, under mutex_), which needs no atomic operation.
    std::atomic<detail::operation_base*> ready_{nullptr};
    detail::operation_base* ready_here_{nullptr};
    detail::operation_base** ready_here_tail_{&ready_here_};
    // The pass's thread is in read_queue, not in a handler: an operation delivered as the
    // read's last act may run its handler at once (finish_here).
    bool reading_{false};
    std::exception_ptr handler_failure_;  // what such a handler threw, until its read ends
    std::atomic<bool> drain_posted_{false};
    std::atomic<std::thread::id> polling_thread_{};
    std::optional<::asio::steady_timer> timer_;  // made at first need (zero intervals need none)
};

}  // namespace loom::asio

#include <loom/asio/impl/fabric_service.hpp>
