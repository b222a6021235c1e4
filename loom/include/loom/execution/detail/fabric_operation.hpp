// loom/execution/detail/fabric_operation.hpp — the operation state of every fabric sender:
// registered with its completion queue by context, submitted on start, completed by whoever
// dispatches the queue's events.
#pragma once

#include <loom/completion_queue.hpp>
#include <loom/endpoint.hpp>
#include <loom/execution/backend.hpp>

#include <optional>
#include <system_error>

namespace loom::execution::detail {

/// What a fabric sender's description provides (message_senders and rma_senders define them):
///   using value_signature = set_value_t(...);
///   check(endpoint&, const completion_queue&) const noexcept -> std::error_code   (before submission)
///   submit(endpoint&, void* context) noexcept -> void_result
///   complete(Receiver&&, const completion_event&) noexcept                         (set_value)
template <class D>
concept fabric_description = requires(const D& cd, D& d, endpoint& ep, const completion_queue& cq, void* ctx) {
    { cd.check(ep, cq) } noexcept -> std::same_as<std::error_code>;
    { d.submit(ep, ctx) } noexcept -> std::same_as<void_result>;
};

template <class Description, class Receiver>
class fabric_operation : private registered_completion {
public:
    using operation_state_concept = operation_state_t;
    fabric_operation(const Description& d, endpoint* ep, completion_queue* cq,
                     Receiver r) noexcept(std::is_nothrow_move_constructible_v<Receiver>)
        : registered_completion(&deliver, &retry), desc_(d), ep_(ep), cq_(cq), r_(std::move(r)) {}
    fabric_operation(const fabric_operation&) = delete;
    auto operator=(const fabric_operation&) -> fabric_operation& = delete;
    ~fabric_operation() = default;

    void start() & noexcept {
        if (ep_ == nullptr || cq_ == nullptr || cq_->registry() == nullptr) return fail(errc::invalid_argument);
        if (const std::error_code ec = desc_.check(*ep_, *cq_)) return fail(ec);
        auto token = execution::get_stop_token(execution::get_env(r_));
        if (token.stop_requested()) return execution::set_stopped(std::move(r_));
        if constexpr (!std::is_same_v<decltype(token), never_stop_token>) {
            if (token.stop_possible()) {
                callback_.emplace(token, on_stop{this});
                if (token.stop_requested()) {  // asked while the callback was being set up
                    callback_.reset();
                    return execution::set_stopped(std::move(r_));
                }
            }
        }
        submit();
    }

private:
    using token_type = stop_token_of_t<env_of_t<Receiver>>;
    struct on_stop {
        fabric_operation* op;
        void operator()() noexcept {
            // Not yet submitted (the provider was busy): it is ours to complete. Otherwise ask
            // the provider; a cancelled operation completes with FI_ECANCELED (set_stopped), one
            // that cannot be cancelled completes normally.
            if (op->cq_->registry()->withdraw_deferred(*op)) return execution::set_stopped(std::move(op->r_));
            (void)op->ep_->cancel(op->context());
        }
    };
    using callback_type = stop_callback_for_t<token_type, on_stop>;

    void fail(std::error_code ec) noexcept {
        callback_.reset();
        execution::set_error(std::move(r_), ec);
    }
    void fail(errc e) noexcept { fail(make_error_code(e)); }

    void submit() noexcept {
        // A deferred operation is submitted again by the next poll_completions.
        completion_registry& reg = *cq_->registry();
        (void)reg.submit_in_order(*this, [&] { return try_submit(reg); });
    }
    /// Registers and submits; true when the provider is busy (FI_EAGAIN), the operation unchanged.
    auto try_submit(completion_registry& reg) noexcept -> bool {
        (void)reg.add(*this);  // before submission: the completion may come at once
        const void_result r = desc_.submit(*ep_, context());
        if (r) return false;
        (void)reg.remove(*this);  // refused: no completion will come
        if (is_again(r.error())) return true;
        fail(r.error());
        return false;
    }
    static auto retry(registered_completion& self) noexcept -> bool {
        auto& op = static_cast<fabric_operation&>(self);
        if (execution::get_stop_token(execution::get_env(op.r_)).stop_requested()) {
            op.callback_.reset();
            execution::set_stopped(std::move(op.r_));
            return false;
        }
        return op.try_submit(*op.cq_->registry());
    }
    static void deliver(registered_completion& self, const completion_event& ev, bool /*final_delivery*/) noexcept {
        auto& op = static_cast<fabric_operation&>(self);
        op.callback_.reset();  // waits for a cancellation running on another thread
        if (!ev.has_error()) return op.desc_.complete(std::move(op.r_), ev);
        if (ev.error == make_error_code(errc::canceled)) return execution::set_stopped(std::move(op.r_));
        execution::set_error(std::move(op.r_), ev.error);
    }

    Description desc_;
    endpoint* ep_;
    completion_queue* cq_;
    Receiver r_;
    std::optional<callback_type> callback_;
};

/// A sender of one fabric operation: the description, the endpoint and the queue it completes
/// on (both borrowed until completion). Copyable; each connect makes an independent operation.
template <class Description>
class fabric_sender {
public:
    using sender_concept = sender_t;
    using completion_signatures = execution::completion_signatures<typename Description::value_signature,
                                                                   set_error_t(std::error_code), set_stopped_t()>;

    fabric_sender(const Description& d, endpoint* ep, completion_queue* cq) noexcept : desc_(d), ep_(ep), cq_(cq) {}

    template <class Receiver>
    auto connect(Receiver r) const -> fabric_operation<Description, Receiver> {
        return fabric_operation<Description, Receiver>{desc_, ep_, cq_, std::move(r)};
    }
    [[nodiscard]] auto get_env() const noexcept -> env { return {}; }

private:
    Description desc_;
    endpoint* ep_;
    completion_queue* cq_;
};

}  // namespace loom::execution::detail
