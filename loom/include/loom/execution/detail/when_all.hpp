// loom/execution/detail/when_all.hpp — when_all for builds with no execution backend: starts
// every child, completes with all their values in order; the first error or stop asks the
// others to stop (through an in-place stop source) and is reported once they are all done.
#pragma once

#include <loom/execution/detail/signatures.hpp>

#include <atomic>
#include <optional>
#include <utility>

namespace loom::execution {
namespace detail {

/// The environment when_all gives its children: its own stop token, the rest from its receiver.
template <class ParentEnv>
struct when_all_env {
    const ParentEnv* parent;
    inplace_stop_token token;
    [[nodiscard]] auto query(get_stop_token_t) const noexcept -> inplace_stop_token { return token; }
    template <class Q>
        requires(!std::is_same_v<Q, get_stop_token_t>) && requires(const ParentEnv& e, Q q) { e.query(q); }
    auto query(Q q) const noexcept(noexcept(parent->query(q))) -> decltype(auto) {
        return parent->query(q);
    }
};

template <class... Children>
struct when_all_sender {
    using sender_concept = sender_t;
    template <class S>
    using values_of = typename decayed_tuple<single_value_t<S>>::type;
    using all_values = typename concat<single_value_t<Children>...>::type;
    template <class List>
    struct value_sig_of;
    template <class... Vs>
    struct value_sig_of<type_list<Vs...>> {
        using type = set_value_t(std::decay_t<Vs>...);
    };
    using errors = dedup_t<typename concat<typename analyse<sigs_of_t<Children>>::errors...>::type>;
    template <class List>
    struct error_sigs;
    template <class... Es>
    struct error_sigs<type_list<Es...>> {
        using type = type_list<set_error_t(std::decay_t<Es>)...>;
    };
    using completion_signatures = signatures_t<
        typename concat<type_list<typename value_sig_of<all_values>::type>, typename error_sigs<errors>::type,
                        type_list<set_error_t(std::exception_ptr), set_stopped_t()>>::type>;

    std::tuple<Children...> children;

    template <class R>
    struct operation;

    template <std::size_t I, class R>
    struct child_receiver {
        using receiver_concept = receiver_t;
        operation<R>* op;
        template <class... Vs>
        void set_value(Vs&&... vs) && noexcept {
            try {
                std::get<I>(op->values).emplace(static_cast<Vs&&>(vs)...);
            } catch (...) {
                op->fail(std::current_exception());
            }
            op->arrive();
        }
        template <class E>
        void set_error(E&& e) && noexcept {
            op->fail(static_cast<E&&>(e));
            op->arrive();
        }
        void set_stopped() && noexcept {
            op->stop_all();
            op->arrive();
        }
        auto get_env() const noexcept -> when_all_env<env_of_t<R>> { return {&op->parent_env, op->source.get_token()}; }
    };

    template <std::size_t I, class R>
    struct child_slot {
        connect_result_t<std::tuple_element_t<I, std::tuple<Children...>>, child_receiver<I, R>> op;
        template <class S>
        child_slot(S&& s, operation<R>* parent)
            : op(execution::connect(static_cast<S&&>(s), child_receiver<I, R>{parent})) {}
    };

    template <class R, class Seq>
    struct slots;
    template <class R, std::size_t... Is>
    struct slots<R, std::index_sequence<Is...>> : child_slot<Is, R>... {
        slots(std::tuple<Children...>&& cs, operation<R>* parent)
            : child_slot<Is, R>(std::get<Is>(std::move(cs)), parent)... {}
        void start_all() noexcept { (execution::start(static_cast<child_slot<Is, R>&>(*this).op), ...); }
    };

    template <class R>
    struct operation {
        using operation_state_concept = operation_state_t;
        struct forward_stop {
            inplace_stop_source* source;
            void operator()() noexcept { source->request_stop(); }
        };
        using parent_token = stop_token_of_t<env_of_t<R>>;
        using parent_callback = stop_callback_for_t<parent_token, forward_stop>;

        operation(std::tuple<Children...>&& cs, R&& rr)
            : r(std::move(rr)), parent_env(execution::get_env(r)), children(std::move(cs), this) {}
        operation(const operation&) = delete;
        auto operator=(const operation&) -> operation& = delete;
        ~operation() = default;

        void start() & noexcept {
            callback.emplace(execution::get_stop_token(parent_env), forward_stop{&source});
            if (source.stop_requested()) {  // asked before start: no child runs
                callback.reset();
                execution::set_stopped(std::move(r));
                return;
            }
            children.start_all();
        }
        template <class E>
        void fail(E&& e) noexcept {
            if (!failed.exchange(true, std::memory_order_acq_rel)) {
                error.template emplace<std::decay_t<E>>(static_cast<E&&>(e));
                source.request_stop();
            }
        }
        void stop_all() noexcept {
            stopped.store(true, std::memory_order_release);
            source.request_stop();
        }
        void arrive() noexcept {
            if (remaining.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
            callback.reset();
            if (failed.load(std::memory_order_acquire)) {
                std::visit(
                    [this](auto& e) {
                        if constexpr (!std::is_same_v<std::decay_t<decltype(e)>, std::monostate>)
                            execution::set_error(std::move(r), std::move(e));
                    },
                    error);
            } else if (stopped.load(std::memory_order_acquire)) {
                execution::set_stopped(std::move(r));
            } else {
                deliver(std::index_sequence_for<Children...>{});
            }
        }
        template <std::size_t... Is>
        void deliver(std::index_sequence<Is...>) noexcept {
            std::apply([this](auto&&... vs) { execution::set_value(std::move(r), static_cast<decltype(vs)&&>(vs)...); },
                       std::tuple_cat(std::move(*std::get<Is>(values))...));
        }

        R r;
        env_of_t<R> parent_env;
        inplace_stop_source source;
        std::optional<parent_callback> callback;
        std::atomic<std::size_t> remaining{sizeof...(Children)};
        std::atomic<bool> failed{false};
        std::atomic<bool> stopped{false};
        typename variant_of<typename concat<errors, type_list<std::exception_ptr>>::type>::type error;
        std::tuple<std::optional<values_of<Children>>...> values;
        slots<R, std::index_sequence_for<Children...>> children;
    };

    template <receiver R>
    auto connect(R r) && -> operation<R> {
        return operation<R>{std::move(children), std::move(r)};
    }
    /// A when_all of copyable senders connects as often as they do (each time with copies).
    template <receiver R>
        requires(std::copy_constructible<Children> && ...)
    auto connect(R r) const& -> operation<R> {
        return operation<R>{std::tuple<Children...>(children), std::move(r)};
    }
};

struct when_all_fn {
    template <sender... S>
        requires(sizeof...(S) > 0)
    auto operator()(S&&... s) const {
        return when_all_sender<std::decay_t<S>...>{{static_cast<S&&>(s)...}};
    }
};

}  // namespace detail

inline constexpr detail::when_all_fn when_all{};

}  // namespace loom::execution
