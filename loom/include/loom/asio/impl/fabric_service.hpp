// loom/asio/impl/fabric_service.hpp — inline bodies of loom/asio/fabric_service.hpp.
#pragma once

#include <asio/bind_allocator.hpp>
#include <asio/execution/allocator.hpp>
#include <asio/execution/blocking.hpp>
#include <asio/execution/execute.hpp>
#include <asio/prefer.hpp>
#include <asio/require.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

namespace loom::asio {

struct fabric_service::queue_entry {
    // What every pass reads comes first, in one cache line (a stream's copies evict it between
    // reads); the engaged flags of the two optionals below would each cost a line of their own.
    completion_queue* cq;
    queue_options options;
    bool removed{false};
    bool wait_armed{false};
    bool needs_read{false};  // descriptor queue: fi_trywait said read first
    bool by_fd{false};       // descriptor is set (once, by watch())
    bool paused{false};      // an event no operation owns waits in `unhandled`
    completion_event unhandled{};
    std::optional<::asio::posix::stream_descriptor> descriptor{};  // our duplicate of the wait fd

    [[nodiscard]] auto by_descriptor() const noexcept -> bool { return by_fd; }
    /// Polls the queue through `fd` (our duplicate of its wait fd, owned from now on).
    void watch(::asio::io_context& ioc, int fd) {
        descriptor.emplace(ioc, fd);
        by_fd = true;
    }
    [[nodiscard]] auto active() const noexcept -> bool { return !removed && !paused; }
    /// Keeps `ev` and pauses the queue until it is taken.
    void pause_with(completion_event&& ev) noexcept {
        unhandled = std::move(ev);
        paused = true;
    }
    /// The kept event, if any; the queue resumes.
    auto take_unhandled() noexcept -> std::optional<completion_event> {
        if (!paused) return std::nullopt;
        paused = false;
        return std::optional<completion_event>{std::move(unhandled)};
    }
};

/// One pass (timer, descriptor, poll_once, drain) on the thread holding mutex_: marks the
/// thread as the one delivering (so that completions join this pass's handler run instead of
/// waking the io_context), and at the end — also when a handler throws — reclaims removed
/// queues and arms what the outstanding operations need.
class fabric_service::pass_scope {
public:
    explicit pass_scope(fabric_service& s) : s_(s), previous_(s.polling_thread_.load(std::memory_order_relaxed)) {
        ++s_.depth_;
        s_.polling_thread_.store(std::this_thread::get_id(), std::memory_order_relaxed);
    }
    pass_scope(const pass_scope&) = delete;
    auto operator=(const pass_scope&) -> pass_scope& = delete;
    ~pass_scope() {
        s_.polling_thread_.store(previous_, std::memory_order_relaxed);
        if (--s_.depth_ != 0) return;
        s_.reclaim();
        try {
            s_.schedule();
        } catch (...) {  // posting failed: the next service call or operation schedules again
        }
    }

private:
    fabric_service& s_;
    std::thread::id previous_;
};

namespace detail {
/// What the io_context's concurrency hint says of its I/O objects: true when they are used from
/// one thread at a time (no locking of reactor I/O).
inline auto io_objects_one_thread(::asio::io_context& ioc) -> bool {
    const int hint = ::asio::use_service<::asio::detail::scheduler>(ioc).concurrency_hint();
    return !ASIO_CONCURRENCY_HINT_IS_LOCKING(REACTOR_IO, hint);
}
}  // namespace detail

inline fabric_service::fabric_service(::asio::io_context& ioc)
    : ::asio::io_context::service(ioc), ioc_(ioc), outstanding_(0, detail::io_objects_one_thread(ioc)) {}

inline auto fabric_service::find(const completion_queue& cq) const -> std::shared_ptr<queue_entry> {
    for (const auto& e : queues_)
        if (e->cq == &cq && !e->removed) return e;
    return nullptr;
}

inline auto fabric_service::serves(const completion_queue& cq) const -> bool {
    const std::lock_guard lock(mutex_);
    return find(cq) != nullptr;
}

inline auto fabric_service::register_cq(completion_queue& cq, const queue_options& options) -> void_result {
    const std::lock_guard lock(mutex_);
    if (!cq.valid() || cq.registry() == nullptr || find(cq) != nullptr || shut_down_)
        return make_unexpected(errc::invalid_argument);
    auto e = std::make_shared<queue_entry>(queue_entry{&cq, options});
    // Descriptor polling where the provider offers a wait fd and fi_trywait answers for it.
    if (options.use_fd_polling) {
        const auto kind = cq.wait_object_type();
        const auto fd =
            kind && *kind == wait_object::fd ? cq.wait_descriptor() : result<int>{make_unexpected(errc::not_supported)};
        const auto probe = fd ? cq.try_wait() : void_result{make_unexpected(errc::not_supported)};
        if (fd && (probe || is_again(probe.error()))) {
            const int own = ::fcntl(*fd, F_DUPFD_CLOEXEC, 0);
            if (own >= 0) {
                try {
                    e->watch(ioc_, own);
                } catch (...) {
                    ::close(own);
                    throw;
                }
            }
        }
    }
    queues_.push_back(std::move(e));
    schedule();
    return {};
}

inline auto fabric_service::deregister_cq(completion_queue& cq) -> std::optional<completion_event> {
    const std::lock_guard lock(mutex_);  // waits for a pass on another thread
    const auto e = find(cq);
    if (e == nullptr) return std::nullopt;
    e->removed = true;
    note_spin_only();
    if (e->by_descriptor()) {
        std::error_code ignored;
        e->descriptor->cancel(ignored);
    }
    std::optional<completion_event> ev = e->take_unhandled();
    if (depth_ == 0) reclaim();  // else when the outermost pass ends
    return ev;
}

inline void fabric_service::start() {
    const std::lock_guard lock(mutex_);
    if (shut_down_) return;
    started_ = true;
    schedule();
}

inline void fabric_service::stop() {
    const std::lock_guard lock(mutex_);
    started_ = false;
    spin_only_.store(false, std::memory_order_release);
    if (timer_) timer_->cancel();
    for (const auto& e : queues_) {
        std::error_code ignored;
        if (e->wait_armed) e->descriptor->cancel(ignored);
    }
}

inline auto fabric_service::started() const -> bool {
    const std::lock_guard lock(mutex_);
    return started_;
}

inline auto fabric_service::poll_once() -> std::size_t {
    const std::lock_guard lock(mutex_);
    const pass_scope pass(*this);
    std::size_t n = 0;
    const std::size_t count = queues_.size();  // queues registered meanwhile join the next poll
    for (std::size_t i = 0; i < count; ++i) {
        queue_entry* const e = queues_[i].get();  // stays while a pass runs (reclaim waits)
        if (!e->active()) continue;
        n += read_queue(*e);
        e->needs_read = false;  // schedule() prepares its wait again
    }
    run_ready();
    return n;
}

inline auto fabric_service::take_unhandled(completion_queue& cq) -> std::optional<completion_event> {
    const std::lock_guard lock(mutex_);
    const auto e = find(cq);
    if (e == nullptr) return std::nullopt;
    std::optional<completion_event> ev = e->take_unhandled();
    if (ev) schedule();  // the queue resumes
    return ev;
}

inline auto fabric_service::progress_of(const completion_queue& cq) const -> std::optional<progress_kind> {
    const std::lock_guard lock(mutex_);
    const auto e = find(cq);
    if (e == nullptr) return std::nullopt;
    return e->by_descriptor() ? progress_kind::descriptor : progress_kind::timer;
}

inline auto fabric_service::read_queue(queue_entry& e) -> std::size_t {
    struct reading_scope {  // nested reads (a handler's poll_once) restore the outer state
        bool& flag;
        bool outer;
        ~reading_scope() { flag = outer; }
    };
    auto r = [&] {
        const reading_scope scope{reading_, std::exchange(reading_, true)};
        return e.cq->dispatch_ready();
    }();
    if (r.unhandled) e.pause_with(std::move(*r.unhandled));
    if (handler_failure_) [[unlikely]]
        std::rethrow_exception(std::exchange(handler_failure_, nullptr));  // as run_ready lets it out
    return r.completed;
}

inline auto fabric_service::prepare_wait(const std::shared_ptr<queue_entry>& e) -> bool {
    // Armed first, fi_trywait second: an event that arrives in between leaves the queue
    // non-empty (trywait says read first) or signals the armed wait.
    if (!e->wait_armed) {
        e->wait_armed = true;
        e->descriptor->async_wait(::asio::posix::stream_descriptor::wait_read,
                                  [this, e](const std::error_code& ec) { descriptor_ready(e, ec); });
    }
    if (e->cq->try_wait()) return true;
    e->needs_read = true;
    return false;
}

inline void fabric_service::schedule() {
    note_spin_only();
    if (!started_ || shut_down_) return;
    if (has_ready()) wake();         // left by a pass a handler's exception ended: a drain runs them
    if (outstanding_.load() == 0) {  // idle: nothing armed, run() may return
        for (const auto& e : queues_) {
            std::error_code ignored;
            if (e->wait_armed) e->descriptor->cancel(ignored);
        }
        return;
    }
    bool timer_needed = false;
    auto interval = std::chrono::microseconds::max();
    for (const auto& e : queues_) {
        if (!e->active()) continue;
        if (e->by_descriptor()) {
            // An operation the provider refused as busy waits for a read, which may be what
            // makes room (libfabric's FI_EAGAIN): no wait on the descriptor until it is through.
            if (e->cq->registry()->deferred_count() != 0) e->needs_read = true;
            if (!e->needs_read && prepare_wait(e)) continue;
            interval = std::chrono::microseconds::zero();  // read it in bounded passes
        } else {
            interval = std::min(interval, e->options.poll_interval);
        }
        timer_needed = true;
    }
    if (!timer_needed || pass_scheduled_.exchange(true, std::memory_order_acq_rel)) return;
    if (interval == std::chrono::microseconds::zero() && idle_passes_ >= idle_reads) interval = idle_interval;
    if (interval == std::chrono::microseconds::zero()) return post_spinning_pass();
    try {
        if (!timer_) timer_.emplace(ioc_);  // only now: a timer brings the reactor into every run
        timer_->expires_after(interval);
        timer_->async_wait(::asio::bind_allocator(detail::state_allocator<void>(), [this](const std::error_code& ec) {
            if (!ec) return timer_pass(false);
            const std::lock_guard lock(mutex_);
            pass_scheduled_.store(false, std::memory_order_release);
            try {
                schedule();  // a start() since the cancel found the pass still scheduled
            } catch (...) {  // posting failed: the next service call or operation schedules again
            }
        }));
    } catch (...) {
        pass_scheduled_.store(false, std::memory_order_release);
        throw;
    }
}

inline void fabric_service::note_spin_only() noexcept {
    bool any = false;
    bool only = started_ && !shut_down_ && idle_passes_ < idle_reads;
    for (const auto& e : queues_) {
        if (!only) break;
        if (!e->active()) continue;
        any = true;
        only = !e->by_descriptor() && e->options.poll_interval == std::chrono::microseconds::zero();
    }
    spin_only_.store(only && any, std::memory_order_release);
}

// Without mutex_: posts a zero-interval pass unless one is scheduled; false where schedule()
// must decide (not spin-only, or posting failed).
inline auto fabric_service::start_spinning_pass() noexcept -> bool {
    if (!spin_only_.load(std::memory_order_acquire)) return false;
    if (pass_scheduled_.exchange(true, std::memory_order_acq_rel)) return true;
    try {
        post_spinning_pass();
        return true;
    } catch (...) {
        return false;
    }
}

// With pass_scheduled_ taken: posts a zero-interval pass, or gives pass_scheduled_ back and
// rethrows where posting fails.
inline void fabric_service::post_spinning_pass() {
    try {
        post_cached([this] { timer_pass(true); });
    } catch (...) {
        pass_scheduled_.store(false, std::memory_order_release);
        throw;
    }
}

// Asio's per-thread recycling cache (two blocks) is taken by the operations' completions: with
// the default handler memory every pass went to the heap. A handler that named its allocator
// (bind_allocator) would be wrapped for a second dispatch through its own executor instead.
template <class F>
void fabric_service::post_cached(F&& f) {
    const auto ex = ::asio::prefer(::asio::require(ioc_.get_executor(), ::asio::execution::blocking.never),
                                   ::asio::execution::allocator(detail::state_allocator<void>()));
    ::asio::execution::execute(ex, std::forward<F>(f));
}

inline void fabric_service::timer_pass(bool zero_interval) {
    const std::lock_guard lock(mutex_);
    pass_scheduled_.store(false, std::memory_order_release);
    const pass_scope pass(*this);
    std::size_t progress = 0;
    // A zero-interval pass reads again, a bounded number of times, while operations are
    // outstanding: each pass posted costs the io_context a turn (and one with a reactor a
    // system call), so a handler that starts the next operation (a chain, a coroutine) has it
    // read in the same pass. Other handlers wait for at most spin_reads reads.
    const unsigned max_reads = zero_interval && idle_passes_ < idle_reads ? spin_reads : 1u;
    for (unsigned reads = 0; started_ && reads < max_reads; ++reads) {
        const std::size_t count = has_ready() ? 0 : queues_.size();  // what completed before first
        for (std::size_t i = 0; i < count; ++i) {
            queue_entry* const e = queues_[i].get();  // stays while a pass runs (reclaim waits)
            if (!e->active() || (e->by_descriptor() && !e->needs_read)) continue;
            progress += read_queue(*e);
            e->needs_read = false;
        }
        if (has_ready()) {
            ++progress;
            run_ready();
        }
        if (outstanding_.load() == 0) break;
    }
    idle_passes_ = progress != 0 ? 0 : idle_passes_ + 1;
    run_ready();
}

inline void fabric_service::descriptor_ready(const std::shared_ptr<queue_entry>& e, const std::error_code& ec) {
    const std::lock_guard lock(mutex_);
    e->wait_armed = false;
    if (e->removed || shut_down_) return;
    if (ec) {
        // Cancelled by stop(): a start() since then found the wait still armed and armed none.
        if (ec == ::asio::error::operation_aborted && started_) {
            try {
                schedule();
            } catch (...) {  // posting failed: the next service call or operation schedules again
            }
        }
        return;
    }
    const pass_scope pass(*this);
    if (started_ && e->active()) {
        (void)read_queue(*e);
        e->needs_read = false;  // the pass's end prepares the wait again (and reads more if needed)
    }
    run_ready();
}

inline void fabric_service::run_ready() {
    // Until none is left: a handler may complete more (a nested poll, a sender's poll).
    while (detail::operation_base* list = take_ready()) {
        while (list != nullptr) {
            detail::operation_base* op = list;
            list = op->next_ready;
            op->next_ready = nullptr;
            try {
                op->finish(detail::completion_mode::dispatch);
            } catch (...) {
                if (list != nullptr) {  // the rest are finished first by the next pass
                    detail::operation_base** tail = &list->next_ready;
                    while (*tail != nullptr) tail = &(*tail)->next_ready;
                    *tail = ready_here_;
                    if (ready_here_ == nullptr) ready_here_tail_ = tail;
                    ready_here_ = list;
                }
                throw;
            }
        }
    }
}

// Called with mutex_ held: the operations completed on this thread first, then the others'.
inline auto fabric_service::take_ready() noexcept -> detail::operation_base* {
    if (ready_here_ != nullptr) {
        detail::operation_base* list = ready_here_;
        ready_here_ = nullptr;
        ready_here_tail_ = &ready_here_;
        return list;
    }
    // A push after this load wakes the io_context (wake()): nothing is left behind.
    if (ready_.load(std::memory_order_relaxed) == nullptr) return nullptr;
    detail::operation_base* list = nullptr;
    for (auto* op = ready_.exchange(nullptr, std::memory_order_acquire); op != nullptr;) {  // LIFO → FIFO
        auto* next = op->next_ready;
        op->next_ready = list;
        list = op;
        op = next;
    }
    return list;
}

inline auto fabric_service::has_ready() const noexcept -> bool {
    return ready_here_ != nullptr || ready_.load(std::memory_order_relaxed) != nullptr;
}

inline void fabric_service::push_ready(detail::operation_base& op) noexcept {
    op.next_ready = ready_.load(std::memory_order_relaxed);
    while (!ready_.compare_exchange_weak(op.next_ready, &op, std::memory_order_release, std::memory_order_relaxed)) {
    }
}

// Called with mutex_ held (by the thread running a pass).
inline void fabric_service::push_ready_here(detail::operation_base& op) noexcept {
    op.next_ready = nullptr;
    *ready_here_tail_ = &op;
    ready_here_tail_ = &op.next_ready;
}

// With mutex_ held by the pass's thread: the read is the innermost thing it does (no handler
// of ours runs), no completed operation waits for its handler (none is overtaken), and no
// handler's exception waits to leave.
inline auto fabric_service::may_finish_here() const noexcept -> bool {
    return reading_ && !has_ready() && !handler_failure_;
}

// The handler runs where the reader delivered its last event: the same order as from the
// ready list, without the list. What it throws leaves when its read ends (read_queue).
inline void fabric_service::finish_here(detail::operation_base& op) noexcept {
    reading_ = false;  // what the handler completes or reads goes the usual way
    try {
        op.finish(detail::completion_mode::dispatch);
    } catch (...) {
        handler_failure_ = std::current_exception();
    }
    reading_ = true;
}

inline void fabric_service::reclaim() {
    std::erase_if(queues_, [](const std::shared_ptr<queue_entry>& e) { return e->removed; });
}

inline void fabric_service::wake() noexcept {
    if (drain_posted_.exchange(true, std::memory_order_acq_rel)) return;
    try {
        post_cached([this] {
            drain_posted_.store(false, std::memory_order_release);
            const std::lock_guard lock(mutex_);
            const pass_scope pass(*this);
            run_ready();
        });
    } catch (...) {
        drain_posted_.store(false, std::memory_order_release);  // the next pass runs it
    }
}

inline void fabric_service::shutdown() {
    const std::lock_guard lock(mutex_);
    shut_down_ = true;
    started_ = false;
    spin_only_.store(false, std::memory_order_release);
    timer_.reset();  // before the timer's own service (created after this one) is destroyed
    // Handlers of completed operations are destroyed without being called (Asio's shutdown).
    while (detail::operation_base* op = take_ready()) {
        while (op != nullptr) {
            auto* next = op->next_ready;
            try {
                op->finish(detail::completion_mode::destroy);
            } catch (...) {
            }
            op = next;
        }
    }
    queues_.clear();
}

namespace detail {

inline auto service_operation_started(fabric_service& s) noexcept -> bool {
    if (s.outstanding_.add(1, std::memory_order_acq_rel) != 0) return false;
    // From idle; a pass on this thread arms polling at its end.
    return s.polling_thread_.load(std::memory_order_relaxed) != std::this_thread::get_id();
}

inline void service_arm_polling(fabric_service& s) noexcept {
    if (s.start_spinning_pass()) return;
    const std::lock_guard lock(s.mutex_);
    try {
        s.schedule();
    } catch (...) {  // posting failed: the next service call or operation schedules again
    }
}

inline void service_operation_finished(fabric_service& s) noexcept {
    (void)s.outstanding_.add(-1, std::memory_order_acq_rel);
}

inline void service_operation_ready(fabric_service& s, operation_base& op, bool final_delivery) noexcept {
    // Completed by a pass on this thread (which holds the mutex): that pass runs the handler,
    // at once where it may.
    if (s.polling_thread_.load(std::memory_order_relaxed) == std::this_thread::get_id()) {
        if (final_delivery && s.may_finish_here()) return s.finish_here(op);
        return s.push_ready_here(op);
    }
    s.push_ready(op);
    s.wake();
}

}  // namespace detail
}  // namespace loom::asio
