// loom/asio/detail/blocking_operation.hpp — a send or receive that the calling thread submits and
// then waits for by reading the completion queue itself, without running any executor.
#pragma once

#include <loom/asio/detail/operation.hpp>

#include <sched.h>

#include <array>

namespace loom::asio::detail {

/// Registered like any operation (so that another reader of the queue, a fabric service on
/// another thread, delivers its completion), but passive: its delivery only records the event.
/// While waiting it reads the queue and keeps every event that is not its own in the queue's
/// registry, in order, for the queue's other readers; it runs no handler. Room for those events
/// is reserved before each read; where memory runs out it asks the provider to cancel its own
/// operation and waits for the terminal completion without reading more than it can keep.
class blocking_operation final : public registered_completion {
public:
    blocking_operation(loom::endpoint& ep, completion_queue& cq) noexcept
        : registered_completion(&deliver), ep_(ep), cq_(cq) {
        make_passive();
    }
    blocking_operation(const blocking_operation&) = delete;
    auto operator=(const blocking_operation&) -> blocking_operation& = delete;
    ~blocking_operation() = default;

    /// Submits and waits; the message length (receives, partial bytes with an error included)
    /// or the bytes sent. No timeout: a provider that never retires the operation blocks it.
    template <op_kind Kind, class Seq>
    auto run(const op_params& params, const Seq& buffers, std::error_code& ec) -> std::size_t {
        auto list = make_buffer_storage<single_buffer<Seq>>(std::allocator<void>{});
        ec = cq_.registry() == nullptr ? make_error_code(errc::bad_state)
                                       : list.template assign<writes_local(Kind)>(buffers, ep_);
        if (!ec) ec = check_operation<Kind>(ep_, cq_, params, list.total());
        if (ec) return 0;
        completion_registry& reg = *cq_.registry();
        for (;;) {
            // Operations refused before this one (FI_EAGAIN) go to the provider first.
            if (reg.deferred_count() != 0) {
                reg.retry_deferred();
                if (reg.deferred_count() != 0) {
                    drive(reg, false);
                    continue;
                }
            }
            (void)reg.add(*this);
            const void_result r = submit_operation<Kind>(ep_, params, list.iov(), list.desc(), context());
            if (r) break;
            (void)reg.remove(*this);
            if (!is_again(r.error())) {
                ec = r.error();
                return 0;
            }
            drive(reg, false);  // the provider is busy: its queue must be read before it takes more
        }
        while (!done_.load(std::memory_order_acquire)) drive(reg, true);
        ec = error_;
        return Kind == op_kind::receive ? bytes_ : (ec ? 0 : list.total());
    }

private:
    static void deliver(registered_completion& self, const completion_event& ev, bool /*final_delivery*/) noexcept {
        auto& op = static_cast<blocking_operation&>(self);
        op.error_ = ev.error;
        op.bytes_ = ev.bytes_transferred;
        op.done_.store(true, std::memory_order_release);
    }
    void cancel_once(bool submitted) noexcept {
        if (!submitted || cancel_requested_) return;
        cancel_requested_ = true;
        (void)ep_.cancel(context());
    }
    /// One read: ours (or another blocking call's) delivered, the rest kept for other readers.
    void drive(completion_registry& reg, bool submitted) {
        if (reg.dispatch_held_passive() != 0 && done_.load(std::memory_order_acquire)) return;
        std::size_t room = reg.hold_room();
        if (room < batch_.size() && reg.reserve_hold(batch_.size())) room = reg.hold_room();
        const std::size_t want = std::min(room, batch_.size());
        if (want == 0) {  // nothing could be kept: wait for another reader or our cancellation
            cancel_once(submitted);
            ::sched_yield();
            return;
        }
        const auto n = cq_.read({batch_.data(), want});
        if (!n) {  // the queue itself failed: give the operation up, keep waiting for its end
            cancel_once(submitted);
            ::sched_yield();
            return;
        }
        for (std::size_t i = 0; i < *n; ++i)
            if (!reg.dispatch_passive(batch_[i])) (void)reg.hold(batch_[i]);  // room was reserved
    }

    loom::endpoint& ep_;
    completion_queue& cq_;
    std::array<completion_event, 16> batch_{};
    std::error_code error_{};
    std::size_t bytes_{0};
    std::atomic<bool> done_{false};
    bool cancel_requested_{false};
};

}  // namespace loom::asio::detail
