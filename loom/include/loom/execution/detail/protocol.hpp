// loom/execution/detail/protocol.hpp — the sender/receiver protocol (P2300 member form) for
// builds with no execution backend: tags, customization point objects, environments, stop
// tokens. With a backend, loom/execution/backend.hpp names the backend's instead.
#pragma once

#include <loom/execution/detail/stop_token.hpp>

#include <concepts>
#include <type_traits>
#include <utility>

namespace loom::execution {

struct sender_t {};
struct receiver_t {};
struct operation_state_t {};
struct scheduler_t {};

/// A list of completion signatures: set_value_t(Vs...), set_error_t(E), set_stopped_t().
template <class... Sigs>
struct completion_signatures {};

struct set_value_t {
    template <class R, class... Vs>
    void operator()(R&& r, Vs&&... vs) const noexcept {
        static_cast<R&&>(r).set_value(static_cast<Vs&&>(vs)...);
    }
};
struct set_error_t {
    template <class R, class E>
    void operator()(R&& r, E&& e) const noexcept {
        static_cast<R&&>(r).set_error(static_cast<E&&>(e));
    }
};
struct set_stopped_t {
    template <class R>
    void operator()(R&& r) const noexcept {
        static_cast<R&&>(r).set_stopped();
    }
};
inline constexpr set_value_t set_value{};
inline constexpr set_error_t set_error{};
inline constexpr set_stopped_t set_stopped{};

/// The environment of a receiver that answers no query.
struct env {};
using empty_env = env;

struct get_env_t {
    template <class T>
    auto operator()(const T& t) const noexcept {
        if constexpr (requires { t.get_env(); })
            return t.get_env();
        else
            return env{};
    }
};
inline constexpr get_env_t get_env{};

struct get_stop_token_t {
    template <class Env>
    auto operator()(const Env& e) const noexcept {
        if constexpr (requires { e.query(get_stop_token_t{}); })
            return e.query(get_stop_token_t{});
        else
            return never_stop_token{};
    }
};
inline constexpr get_stop_token_t get_stop_token{};

template <class Env>
using stop_token_of_t = std::remove_cvref_t<decltype(get_stop_token(std::declval<const Env&>()))>;
template <class T>
using env_of_t = decltype(get_env(std::declval<const T&>()));

template <class O>
concept operation_state = std::derived_from<typename O::operation_state_concept, operation_state_t> &&
                          std::destructible<O> && std::is_object_v<O> && requires(O& o) {
                              { o.start() } noexcept;
                          };

struct connect_t {
    template <class S, class R>
    auto operator()(S&& s, R&& r) const -> decltype(static_cast<S&&>(s).connect(static_cast<R&&>(r))) {
        // As the standard's connect (and beman's) insist: what a sender's connect returns is
        // an operation state, tag included, so a sender that works here works with them.
        static_assert(operation_state<decltype(static_cast<S&&>(s).connect(static_cast<R&&>(r)))>,
                      "connect must return an operation state (operation_state_concept, start() noexcept)");
        return static_cast<S&&>(s).connect(static_cast<R&&>(r));
    }
};
inline constexpr connect_t connect{};

struct start_t {
    template <class O>
    void operator()(O& o) const noexcept {
        o.start();
    }
};
inline constexpr start_t start{};

struct schedule_t {
    template <class Sch>
    auto operator()(Sch&& s) const -> decltype(static_cast<Sch&&>(s).schedule()) {
        return static_cast<Sch&&>(s).schedule();
    }
};
inline constexpr schedule_t schedule{};

template <class Tag>
struct get_completion_scheduler_t {
    template <class Env>
        requires requires(const Env& e) { e.query(get_completion_scheduler_t<Tag>{}); }
    auto operator()(const Env& e) const noexcept {
        return e.query(*this);
    }
};
template <class Tag>
inline constexpr get_completion_scheduler_t<Tag> get_completion_scheduler{};

template <class S, class R>
using connect_result_t = decltype(connect(std::declval<S>(), std::declval<R>()));

template <class S>
concept sender = std::derived_from<typename std::remove_cvref_t<S>::sender_concept, sender_t> &&
                 std::move_constructible<std::remove_cvref_t<S>>;
template <class R>
concept receiver = std::derived_from<typename std::remove_cvref_t<R>::receiver_concept, receiver_t> &&
                   std::move_constructible<std::remove_cvref_t<R>>;
template <class S>
concept scheduler = std::copy_constructible<std::remove_cvref_t<S>> &&
                    std::equality_comparable<std::remove_cvref_t<S>> && requires(S&& s) {
                        { static_cast<S&&>(s).schedule() } -> sender;
                    };

/// The signatures a sender declares (loom's senders and algorithms declare them as a member
/// type that does not depend on the environment).
template <class S, class... Env>
using completion_signatures_of_t = typename std::remove_cvref_t<S>::completion_signatures;

template <class S, class R>
concept sender_to =
    sender<S> && receiver<R> && requires(S&& s, R&& r) { connect(static_cast<S&&>(s), static_cast<R&&>(r)); };

}  // namespace loom::execution
