// loom/asio/detail/operation.hpp — the state of one Asio fabric operation: registered with its
// completion queue by context, submitted at initiation, completed by whoever dispatches the
// queue's events, its handler run through the fabric service (or posted, without one).
#pragma once

#include <loom/asio/detail/buffer_list.hpp>
#include <loom/asio/detail/endpoint_state.hpp>
#include <loom/asio/detail/state_allocator.hpp>
#include <loom/completion_queue.hpp>
#include <loom/detail/async_submission.hpp>

#include <asio/associated_allocator.hpp>
#include <asio/associated_cancellation_slot.hpp>
#include <asio/associated_executor.hpp>
#include <asio/cancellation_type.hpp>
#include <asio/dispatch.hpp>
#include <asio/error.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>

#include <memory>
#include <optional>
#include <system_error>
#include <utility>

namespace loom::asio {
class fabric_service;
}

namespace loom::asio::detail {

class operation_base;
// What operations tell the fabric service (defined with it, in loom/asio/impl/fabric_service.hpp).
// Counts an operation as outstanding; true when it is the first (from idle) and polling must
// be armed, by service_arm_polling once the operation has been submitted.
[[nodiscard]] auto service_operation_started(fabric_service& s) noexcept -> bool;
void service_arm_polling(fabric_service& s) noexcept;
void service_operation_finished(fabric_service& s) noexcept;
// Hands a completed operation to the service; `final_delivery`: its queue's reader delivered it
// as its last act (completion_registry::dispatch_final), and the service's own read may run the
// handler there.
void service_operation_ready(fabric_service& s, operation_base& op, bool final_delivery) noexcept;

enum class op_kind : std::uint8_t { send, receive, read, write };

/// What an operation addresses besides its buffers.
struct op_params {
    fabric_addr peer{fabric_addrs::unspecified};  ///< destination, or the receive's source filter
    std::uint64_t tag{0};
    std::uint64_t ignore{0};
    bool tagged{false};
    const memory_region* rma_mr{nullptr};  ///< RMA: the registration every local buffer lies in
    remote_memory remote{};                ///< RMA: the remote range (at least the local total)
};

/// Where an operation goes and who drives it (what its completion reads first).
struct op_target {
    fabric_service* service;  ///< runs the handler; null: the handler is posted to its executor
    endpoint_state* owner;    ///< kept alive until completion; null for a borrowed endpoint
    completion_queue* cq;     ///< the queue its completion arrives on (bound for its direction)
    loom::endpoint* ep;
};

/// Receives and reads fill the local buffers; sends and writes read them.
[[nodiscard]] constexpr auto writes_local(op_kind kind) noexcept -> bool {
    return kind == op_kind::receive || kind == op_kind::read;
}

/// Checks made before submission that do not depend on the buffers (`total`: their bytes).
template <op_kind Kind>
[[nodiscard]] auto check_operation(const loom::endpoint& ep, const completion_queue& cq, const op_params& params,
                                   std::size_t total) noexcept -> std::error_code {
    if constexpr (Kind == op_kind::receive) {
        if (cq.format() == cq_format::context) return make_error_code(errc::invalid_argument);  // no length
        if (ep.rx_op_flags().any(op_flag::multi_recv)) return make_error_code(errc::not_supported);
    } else if constexpr (Kind == op_kind::read || Kind == op_kind::write) {
        if (!params.remote.holds(total)) return make_error_code(errc::invalid_argument);
    }
    return {};
}

/// Submits with `ctx` (the operation's registered context). An RMA operation's remote range
/// is cut to exactly the buffers' total (the IOV totals must match; check_operation made sure it
/// holds them).
template <op_kind Kind>
[[nodiscard]] auto submit_operation(loom::endpoint& ep, const op_params& p, std::span<const ::iovec> iov,
                                    std::span<void* const> desc, void* ctx) noexcept -> void_result {
    void* const one_desc = desc.empty() ? nullptr : desc[0];
    if constexpr (Kind == op_kind::send) {
        if (iov.size() == 1) [[likely]]
            return loom::detail::submit_send_one(ep, {static_cast<const std::byte*>(iov[0].iov_base), iov[0].iov_len},
                                                 one_desc, p.peer, p.tag, p.tagged, ctx);
        return loom::detail::submit_send(ep, {iov, desc, p.peer, p.tag, 0, p.tagged}, ctx);
    } else if constexpr (Kind == op_kind::receive) {
        if (iov.size() == 1) [[likely]]
            return loom::detail::submit_receive_one(ep, {static_cast<std::byte*>(iov[0].iov_base), iov[0].iov_len},
                                                    one_desc, p.peer, p.tag, p.ignore, p.tagged, ctx);
        return loom::detail::submit_receive(ep, {iov, desc, p.peer, p.tag, p.ignore, p.tagged}, ctx);
    } else {
        const remote_memory exact{p.remote.addr, p.remote.key, loom::endpoint::total_length(iov)};
        return loom::detail::submit_rma(ep, Kind == op_kind::read, iov, desc, p.peer, exact, ctx);
    }
}

/// How finish() hands over the handler.
enum class completion_mode {
    dispatch,  ///< asio::dispatch on the handler's executor (the service's own passes)
    post,      ///< asio::post (failures at initiation, no service, a closed endpoint)
    destroy    ///< destroyed without a call (the service shuts down)
};

/// The part of an operation that does not depend on the handler type.
class operation_base : public registered_completion {
public:
    operation_base(const operation_base&) = delete;
    auto operator=(const operation_base&) -> operation_base& = delete;

    /// Hands the result to the handler and frees the state (it must not be used afterwards).
    /// May throw what the handler throws (dispatch) or what posting throws.
    void finish(completion_mode mode) { finish_(*this, mode); }
    /// Asks the provider to cancel (fi_cancel); an operation still waiting for resubmission
    /// (FI_EAGAIN) ends at once with operation_aborted.
    void request_cancel() noexcept {
        if (target_.cq->registry()->withdraw_deferred(*this)) return completed(::asio::error::operation_aborted, 0);
        (void)target_.ep->cancel(context());
    }
    /// Ends an operation whose endpoint was closed: errc::canceled, handler posted.
    void end_by_close() noexcept {
        ec_ = make_error_code(errc::canceled);
        bytes_ = 0;
        finish_safely(completion_mode::post);
    }
    /// Ends an operation that will not be submitted again (its endpoint is going away).
    void end_deferred() noexcept { completed(::asio::error::operation_aborted, 0); }

    operation_base* next_ready{nullptr};  ///< fabric_service's list of operations ready to finish

protected:
    using finish_fn = void (*)(operation_base& self, completion_mode mode);

    operation_base(finish_fn finish, retry_fn retry, const op_target& target, op_kind kind) noexcept
        : registered_completion(&deliver, retry, target.owner), finish_(finish), kind_(kind), target_(target) {}
    ~operation_base() = default;

    /// Registers, then submits; a refusal ends the operation (FI_EAGAIN: deferred until the
    /// queue's next reader resubmits it). Behind operations deferred before it, in the order
    /// started. `p`, `iov` and `desc` are read during this call only: a deferred operation keeps
    /// a copy of `p` in `kept` (its buffers stay in the derived state).
    template <op_kind Kind>
    void submit(const op_params& p, std::span<const ::iovec> iov, std::span<void* const> desc,
                op_params* kept) noexcept {
        completion_registry& reg = *target_.cq->registry();
        const bool placed = reg.submit_in_order(
            *this,
            [&] {
                (void)reg.add(*this);  // before submission: the completion may come at once
                return submitted(reg, submit_operation<Kind>(*target_.ep, p, iov, desc, context()));
            },
            [&] noexcept { std::construct_at(kept, p); });
        if (!placed) completed(make_error_code(errc::again), 0);
    }
    /// A resubmission: registers and submits again; true when the provider is still busy
    /// (FI_EAGAIN), the operation unchanged.
    template <op_kind Kind>
    auto resubmit(completion_registry& reg, const op_params& p, std::span<const ::iovec> iov,
                  std::span<void* const> desc) noexcept -> bool {
        (void)reg.add(*this);
        return submitted(reg, submit_operation<Kind>(*target_.ep, p, iov, desc, context()));
    }
    /// What a submission's result `r` means: true when the provider is busy; a refusal ends the
    /// operation.
    auto submitted(completion_registry& reg, const void_result& r) noexcept -> bool {
        if (r) [[likely]]
            return false;
        (void)reg.remove(*this);  // refused: no completion will come
        if (is_again(r.error())) return true;
        completed(r.error(), 0);
        return false;
    }
    /// Records the result and hands the operation to whoever runs its handler: for refusals,
    /// cancellations and ends without a completion (deliver() hands over the completions), kept
    /// out of line so that the submission inlined into each start stays small.
    [[gnu::noinline, gnu::cold]] void completed(std::error_code ec, std::size_t bytes) noexcept {
        ec_ = ec;
        bytes_ = bytes;
        hand_over(false);
    }
    /// Hands the operation, its result recorded, to whoever runs its handler.
    void hand_over(bool final_delivery) noexcept {
        if (counted_) return service_operation_ready(*target_.service, *this, final_delivery);
        finish_safely(completion_mode::post);
    }
    /// finish() for callers that cannot throw: a handler that cannot be posted is destroyed.
    void finish_safely(completion_mode mode) noexcept {
        try {
            finish(mode);
        } catch (...) {
            try {
                finish(completion_mode::destroy);
            } catch (...) {
            }
        }
    }

    // What the completion reads first, after the registry's links (a stream's copies leave
    // none of it cached: each line costs a miss).
    finish_fn finish_;
    op_kind kind_;
    bool owns_ref_{false};  ///< holds a reference on target_.owner
    bool counted_{false};   ///< counted by target_.service as outstanding
    std::size_t total_{0};
    std::size_t bytes_{0};
    std::error_code ec_{};
    op_target target_;

private:
    static void deliver(registered_completion& self, const completion_event& ev, bool final_delivery) noexcept {
        auto& op = static_cast<operation_base&>(self);
        std::error_code ec = ev.error;
        // Compared only when set: a success reads no error category (one line less, cold).
        if (ec && ec == make_error_code(errc::canceled)) ec = ::asio::error::operation_aborted;  // fi_cancel
        // A receive reports the message length, partial bytes with an error included.
        op.ec_ = ec;
        op.bytes_ = op.kind_ == op_kind::receive ? ev.bytes_transferred : (ec ? 0 : op.total_);
        op.hand_over(final_delivery);
    }
};

/// Calls a handler with its result; carries the handler's executor (the I/O executor where the
/// handler names none) and allocator.
template <class Handler, class Executor>
struct bound_completion {
    Handler handler;
    Executor executor;
    std::error_code ec;
    std::size_t bytes;
    void operator()() { std::move(handler)(ec, bytes); }
};

/// One operation for a handler of signature void(std::error_code, std::size_t); `Single`: its
/// buffer sequence is one buffer, kept in the state itself.
template <class Handler, class IoExecutor, bool Single>
class operation final : public operation_base {
public:
    using allocator_type = ::asio::associated_allocator_t<Handler, state_allocator<void>>;
    using handler_executor = ::asio::associated_executor_t<Handler, IoExecutor>;
    using buffers_type = buffer_storage<Single, allocator_type>;

    /// Allocates (through the handler's allocator), checks, submits; the handler runs later,
    /// never inside this call. Throws only what allocation throws.
    template <op_kind Kind, class Seq>
    static void start(Handler&& handler, const IoExecutor& io_ex, const op_target& target, const op_params& params,
                      const Seq& buffers) {
        constexpr bool writable = writes_local(Kind);
        using rebound = typename std::allocator_traits<allocator_type>::template rebind_alloc<operation>;
        rebound alloc(::asio::get_associated_allocator(handler, state_allocator<void>()));
        operation* op = std::allocator_traits<rebound>::allocate(alloc, 1);
        try {
            ::new (static_cast<void*>(op)) operation(std::move(handler), io_ex, target, Kind, &resubmit_as<Kind>);
        } catch (...) {
            std::allocator_traits<rebound>::deallocate(alloc, op, 1);
            throw;
        }
        std::error_code ec;
        if (target.ep == nullptr || target.cq == nullptr || target.cq->registry() == nullptr) {
            ec = make_error_code(errc::bad_state);  // a closed or moved-from endpoint
        } else {
            try {
                ec = params.rma_mr != nullptr
                         ? op->buffers_.template assign_within<writable>(buffers, *params.rma_mr, *target.ep)
                         : op->buffers_.template assign<writable>(buffers, *target.ep);
            } catch (...) {
                op->finish(completion_mode::destroy);
                throw;
            }
            op->total_ = op->buffers_.total();
            if (!ec) ec = check_operation<Kind>(*target.ep, *target.cq, params, op->total_);
        }
        if (ec) {  // refused before submission: the handler is posted with the reason
            op->ec_ = ec;
            op->finish(completion_mode::post);
            return;
        }
        if (target.owner != nullptr) {
            target.owner->add_ref();
            op->owns_ref_ = true;
        }
        bool arm = false;
        if (target.service != nullptr) {
            arm = service_operation_started(*target.service);
            op->counted_ = true;
        }
        auto slot = ::asio::get_associated_cancellation_slot(op->handler_);
        if (slot.is_connected()) slot.template emplace<cancel_handler>(op);
        // The state may be gone once this returns.
        op->template submit<Kind>(params, op->buffers_.iov(), op->buffers_.desc(), &op->params_);
        // Armed after submission: a message is not held back by posting the first pass. An
        // operation deferred (by it or before it) needs a read of its queue, which may be what
        // makes room, also where the service waits on the queue's descriptor.
        if (arm || (target.service != nullptr && target.cq->registry()->deferred_count() != 0)) [[unlikely]]
            service_arm_polling(*target.service);
    }

private:
    struct cancel_handler {
        operation_base* op;
        void operator()(::asio::cancellation_type type) const {
            constexpr auto any = ::asio::cancellation_type::terminal | ::asio::cancellation_type::partial |
                                 ::asio::cancellation_type::total;
            if ((type & any) != ::asio::cancellation_type::none) op->request_cancel();
        }
    };

    operation(Handler&& h, const IoExecutor& io_ex, const op_target& target, op_kind kind, retry_fn retry)
        : operation_base(&do_finish, retry, target, kind),
          handler_(std::move(h)),
          ex_(::asio::get_associated_executor(handler_, io_ex)),
          buffers_(make_buffer_storage<Single>(::asio::get_associated_allocator(handler_, state_allocator<void>()))) {
        // Another executor is kept running while the operation is outstanding; the endpoint's
        // own io_context is, by the service's polling.
        if (tracks_work(ex_, io_ex)) work_.emplace(ex_);
    }
    /// The registry's retry_fn for an operation of kind `Kind`.
    template <op_kind Kind>
    static auto resubmit_as(registered_completion& self) noexcept -> bool {
        auto& op = static_cast<operation&>(self);
        return op.template resubmit<Kind>(*op.target_.cq->registry(), op.params_, op.buffers_.iov(),
                                          op.buffers_.desc());
    }
    static auto tracks_work(const handler_executor& ex, const IoExecutor& io_ex) noexcept -> bool {
        if constexpr (std::is_same_v<handler_executor, IoExecutor>)
            return !(ex == io_ex);
        else
            return true;
    }

    static void do_finish(operation_base& base, completion_mode mode) {
        auto& op = static_cast<operation&>(base);
        // What outlives the state; the state is freed before the handler runs so that its
        // memory can serve the next operation the handler starts.
        Handler handler(std::move(op.handler_));
        const handler_executor ex = op.ex_;
        std::optional<::asio::executor_work_guard<handler_executor>> work;  // across the state's end
        if (op.work_) work.emplace(ex);
        const std::error_code ec = op.ec_;
        const std::size_t bytes = op.bytes_;
        fabric_service* const service = op.counted_ ? op.target_.service : nullptr;
        endpoint_state* const owner = op.owns_ref_ ? op.target_.owner : nullptr;
        ::asio::get_associated_cancellation_slot(handler).clear();
        using rebound = typename std::allocator_traits<allocator_type>::template rebind_alloc<operation>;
        rebound alloc(::asio::get_associated_allocator(handler, state_allocator<void>()));
        op.~operation();
        std::allocator_traits<rebound>::deallocate(alloc, &op, 1);
        if (owner != nullptr) owner->release();
        struct finished_guard {
            fabric_service* s;
            ~finished_guard() {
                if (s != nullptr) service_operation_finished(*s);
            }
        } guard{service};
        if (mode == completion_mode::destroy) return;
        // The one-argument forms submit to the handler's executor without wrapping it again.
        bound_completion<Handler, handler_executor> f{std::move(handler), ex, ec, bytes};
        if (mode == completion_mode::post) return ::asio::post(std::move(f));
        // What dispatch does for the io_context's own executor, without wrapping the handler.
        if constexpr (std::is_same_v<handler_executor, ::asio::io_context::executor_type>) {
            if (ex.running_in_this_thread()) return std::move(f)();
        }
        ::asio::dispatch(std::move(f));
    }

    Handler handler_;
    handler_executor ex_;
    std::optional<::asio::executor_work_guard<handler_executor>> work_;
    buffers_type buffers_;
    // Last, written only when the operation is deferred (submit): what its resubmission reads.
    union {
        op_params params_;
    };
};

}  // namespace loom::asio::detail

// The handler's allocator and executor stay associated when its result is bound to it.
template <class Handler, class Executor, class Allocator>
struct asio::associated_allocator<loom::asio::detail::bound_completion<Handler, Executor>, Allocator> {
    using type = ::asio::associated_allocator_t<Handler, Allocator>;
    static auto get(const loom::asio::detail::bound_completion<Handler, Executor>& b,
                    const Allocator& a = Allocator()) noexcept -> type {
        return ::asio::get_associated_allocator(b.handler, a);
    }
};
template <class Handler, class Executor, class Executor1>
struct asio::associated_executor<loom::asio::detail::bound_completion<Handler, Executor>, Executor1> {
    using type = Executor;
    static auto get(const loom::asio::detail::bound_completion<Handler, Executor>& b,
                    const Executor1& = Executor1()) noexcept -> type {
        return b.executor;
    }
};
