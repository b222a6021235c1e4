// loom/execution/detail/algorithms.hpp — the sender algorithms loom supplies when the build
// has no execution backend: just, then, upon_error, let_value, when_all, starts_on, sync_wait.
// They follow P2300's semantics for senders whose signatures do not depend on the environment.
#pragma once

#include <loom/execution/detail/signatures.hpp>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <system_error>

namespace loom::execution {

namespace detail {
/// A pipeable partial application: `sender | then(f)`.
template <class Algorithm, class F>
struct closure {
    F f;
    template <sender S>
    friend auto operator|(S&& s, closure c) {
        return Algorithm{}(static_cast<S&&>(s), std::move(c.f));
    }
};

/// A receiver of an algorithm's child that passes every completion on to the algorithm's own
/// receiver (`op->r`, of type R); algorithms derive from it and replace the channel they
/// transform.
template <class Op, class R>
struct forwarding_receiver {
    using receiver_concept = receiver_t;
    Op* op;
    template <class... Vs>
    void set_value(Vs&&... vs) && noexcept {
        execution::set_value(std::move(op->r), static_cast<Vs&&>(vs)...);
    }
    template <class E>
    void set_error(E&& e) && noexcept {
        execution::set_error(std::move(op->r), static_cast<E&&>(e));
    }
    void set_stopped() && noexcept { execution::set_stopped(std::move(op->r)); }
    auto get_env() const noexcept -> env_of_t<R> { return execution::get_env(op->r); }
};

// ---------------------------------------------------------------- just
template <class... Vs>
struct just_sender {
    using sender_concept = sender_t;
    using completion_signatures = execution::completion_signatures<set_value_t(Vs...)>;
    std::tuple<Vs...> values;

    template <class R>
    struct operation {
        using operation_state_concept = operation_state_t;
        operation(std::tuple<Vs...>&& vs, R&& rr) : values(std::move(vs)), r(std::move(rr)) {}
        operation(const operation&) = delete;
        auto operator=(const operation&) -> operation& = delete;
        ~operation() = default;
        std::tuple<Vs...> values;
        R r;
        void start() & noexcept {
            std::apply([this](Vs&... vs) { execution::set_value(std::move(r), std::move(vs)...); }, values);
        }
    };
    template <receiver R>
    auto connect(R r) && -> operation<R> {
        return {std::move(values), std::move(r)};
    }
    template <receiver R>
    auto connect(R r) const& -> operation<R> {
        return {values, std::move(r)};
    }
};

// ---------------------------------------------------------------- then, upon_error
/// What then and upon_error share: a child whose one kind of completion goes through f.
template <class Child, class F, bool OnValue>
struct transform_sender {
    using sender_concept = sender_t;
    using child_sigs = sigs_of_t<Child>;
    template <class Sig, class G>
    using step = std::conditional_t<OnValue, then_sig<Sig, G>, upon_error_sig<Sig, G>>;
    using completion_signatures =
        signatures_t<typename concat<typename transform_all<step, F, child_sigs>::type, exception_sig_t<true>>::type>;

    Child child;
    F f;

    template <class R>
    struct operation {
        using operation_state_concept = operation_state_t;
        struct inner : forwarding_receiver<operation, R> {
            template <class... Vs>
            void set_value(Vs&&... vs) && noexcept {
                if constexpr (OnValue)
                    this->op->call(static_cast<Vs&&>(vs)...);
                else
                    execution::set_value(std::move(this->op->r), static_cast<Vs&&>(vs)...);
            }
            template <class E>
            void set_error(E&& e) && noexcept {
                if constexpr (OnValue)
                    execution::set_error(std::move(this->op->r), static_cast<E&&>(e));
                else
                    this->op->call(static_cast<E&&>(e));
            }
        };
        template <class... As>
        void call(As&&... as) noexcept {
            try {
                if constexpr (std::is_void_v<std::invoke_result_t<F, As...>>) {
                    std::invoke(std::move(f), static_cast<As&&>(as)...);
                    execution::set_value(std::move(r));
                } else {
                    execution::set_value(std::move(r), std::invoke(std::move(f), static_cast<As&&>(as)...));
                }
            } catch (...) {
                execution::set_error(std::move(r), std::current_exception());
            }
        }
        operation(Child&& c, F&& g, R&& rr)
            : f(std::move(g)), r(std::move(rr)), child_op(execution::connect(std::move(c), inner{{this}})) {}
        operation(const operation&) = delete;
        auto operator=(const operation&) -> operation& = delete;
        ~operation() = default;
        void start() & noexcept { execution::start(child_op); }
        F f;
        R r;
        connect_result_t<Child, inner> child_op;
    };
    template <receiver R>
    auto connect(R r) && -> operation<R> {
        return operation<R>{std::move(child), std::move(f), std::move(r)};
    }
    template <receiver R>
    auto connect(R r) const& -> operation<R> {
        return operation<R>{Child(child), F(f), std::move(r)};
    }
};

struct then_fn {
    template <sender S, class F>
    auto operator()(S&& s, F f) const {
        return transform_sender<std::decay_t<S>, F, true>{static_cast<S&&>(s), std::move(f)};
    }
    template <class F>
    auto operator()(F f) const {
        return closure<then_fn, F>{std::move(f)};
    }
};
struct upon_error_fn {
    template <sender S, class F>
    auto operator()(S&& s, F f) const {
        return transform_sender<std::decay_t<S>, F, false>{static_cast<S&&>(s), std::move(f)};
    }
    template <class F>
    auto operator()(F f) const {
        return closure<upon_error_fn, F>{std::move(f)};
    }
};

// ---------------------------------------------------------------- let_value
template <class Child, class F>
struct let_value_sender {
    using sender_concept = sender_t;
    using values = typename decayed_tuple<single_value_t<Child>>::type;
    template <class Tuple>
    struct next_of;
    template <class... Vs>
    struct next_of<std::tuple<Vs...>> {
        using type = std::decay_t<std::invoke_result_t<F, Vs&...>>;
    };
    using next_sender = typename next_of<values>::type;
    using child_info = analyse<sigs_of_t<Child>>;
    template <class E>
    using error_sig = set_error_t(E);
    template <class List>
    struct error_sigs;
    template <class... Es>
    struct error_sigs<type_list<Es...>> {
        using type = type_list<set_error_t(Es)...>;
    };
    using completion_signatures =
        signatures_t<typename concat<sigs_of_t<next_sender>, typename error_sigs<typename child_info::errors>::type,
                                     std::conditional_t<child_info::stopped, type_list<set_stopped_t()>, type_list<>>,
                                     exception_sig_t<true>>::type>;

    Child child;
    F f;

    template <class R>
    struct operation {
        using operation_state_concept = operation_state_t;
        using forward = forwarding_receiver<operation, R>;
        struct first : forwarding_receiver<operation, R> {
            template <class... Vs>
            void set_value(Vs&&... vs) && noexcept {
                this->op->next(static_cast<Vs&&>(vs)...);
            }
        };
        template <class... Vs>
        void next(Vs&&... vs) noexcept {
            try {
                auto& kept = stored.emplace(static_cast<Vs&&>(vs)...);
                auto& op2 = next_op.emplace(
                    emplace_from{[&] { return execution::connect(std::apply(f, kept), forward{this}); }});
                execution::start(op2);
            } catch (...) {
                execution::set_error(std::move(r), std::current_exception());
            }
        }
        operation(Child&& c, F&& g, R&& rr)
            : f(std::move(g)), r(std::move(rr)), first_op(execution::connect(std::move(c), first{{this}})) {}
        operation(const operation&) = delete;
        auto operator=(const operation&) -> operation& = delete;
        ~operation() = default;
        void start() & noexcept { execution::start(first_op); }
        F f;
        R r;
        connect_result_t<Child, first> first_op;
        std::optional<values> stored;
        std::optional<connect_result_t<next_sender, forward>> next_op;
    };
    template <receiver R>
    auto connect(R r) && -> operation<R> {
        return operation<R>{std::move(child), std::move(f), std::move(r)};
    }
    template <receiver R>
    auto connect(R r) const& -> operation<R> {
        return operation<R>{Child(child), F(f), std::move(r)};
    }
};

struct let_value_fn {
    template <sender S, class F>
    auto operator()(S&& s, F f) const {
        return let_value_sender<std::decay_t<S>, F>{static_cast<S&&>(s), std::move(f)};
    }
    template <class F>
    auto operator()(F f) const {
        return closure<let_value_fn, F>{std::move(f)};
    }
};

}  // namespace detail

inline constexpr detail::then_fn then{};
inline constexpr detail::upon_error_fn upon_error{};
inline constexpr detail::let_value_fn let_value{};

/// A sender that completes with `vs` at once.
template <class... Vs>
auto just(Vs... vs) -> detail::just_sender<Vs...> {
    return {std::tuple<Vs...>{std::move(vs)...}};
}

}  // namespace loom::execution

#include <loom/execution/detail/sync_wait.hpp>
#include <loom/execution/detail/when_all.hpp>

namespace loom::execution {
namespace detail {
struct starts_on_fn {
    /// Starts `s` from a schedule(sch) completion (for loom::scheduler: inline, on start).
    template <class Sch, sender S>
    auto operator()(Sch&& sch, S&& s) const {
        return let_value(execution::schedule(static_cast<Sch&&>(sch)),
                         [child = std::decay_t<S>(static_cast<S&&>(s))]() mutable { return std::move(child); });
    }
};
}  // namespace detail
inline constexpr detail::starts_on_fn starts_on{};
}  // namespace loom::execution
