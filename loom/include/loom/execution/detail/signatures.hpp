// loom/execution/detail/signatures.hpp — type-level work on completion signatures for loom's
// own algorithms (then, upon_error, let_value, when_all, sync_wait).
#pragma once

#include <loom/execution/detail/protocol.hpp>

#include <exception>
#include <tuple>
#include <type_traits>
#include <variant>

namespace loom::execution::detail {

template <class... Ts>
struct type_list {};

// ---------------------------------------------------------------- concatenation, dedup
template <class... Lists>
struct concat;
template <>
struct concat<> {
    using type = type_list<>;
};
template <class... A>
struct concat<type_list<A...>> {
    using type = type_list<A...>;
};
template <class... A, class... B, class... Rest>
struct concat<type_list<A...>, type_list<B...>, Rest...> : concat<type_list<A..., B...>, Rest...> {};

template <class T, class List>
inline constexpr bool contains_v = false;
template <class T, class... Ts>
inline constexpr bool contains_v<T, type_list<Ts...>> = (std::is_same_v<T, Ts> || ...);

template <class Done, class Todo>
struct dedup_impl {
    using type = Done;
};
template <class... Done, class T, class... Todo>
struct dedup_impl<type_list<Done...>, type_list<T, Todo...>>
    : dedup_impl<std::conditional_t<contains_v<T, type_list<Done...>>, type_list<Done...>, type_list<Done..., T>>,
                 type_list<Todo...>> {};
template <class List>
using dedup_t = typename dedup_impl<type_list<>, List>::type;

template <class List>
struct as_signatures;
template <class... Sigs>
struct as_signatures<type_list<Sigs...>> {
    using type = completion_signatures<Sigs...>;
};
template <class List>
using signatures_t = typename as_signatures<dedup_t<List>>::type;

template <class Sigs>
struct as_list;
template <class... Sigs>
struct as_list<completion_signatures<Sigs...>> {
    using type = type_list<Sigs...>;
};
template <class S>
using sigs_of_t = typename as_list<completion_signatures_of_t<S>>::type;

// ---------------------------------------------------------------- per-signature transforms
template <class R>
struct value_sig {
    using type = set_value_t(R);
};
template <>
struct value_sig<void> {
    using type = set_value_t();
};

/// then(f): set_value_t(Vs...) becomes the signature of f's result; the rest pass.
template <class Sig, class F>
struct then_sig {
    using type = type_list<Sig>;
};
template <class... Vs, class F>
struct then_sig<set_value_t(Vs...), F> {
    using type = type_list<typename value_sig<std::invoke_result_t<F, Vs...>>::type>;
};
/// upon_error(f): set_error_t(E) becomes the signature of f's result.
template <class Sig, class F>
struct upon_error_sig {
    using type = type_list<Sig>;
};
template <class E, class F>
struct upon_error_sig<set_error_t(E), F> {
    using type = type_list<typename value_sig<std::invoke_result_t<F, E>>::type>;
};

template <template <class, class> class Transform, class F, class List>
struct transform_all;
template <template <class, class> class Transform, class F, class... Sigs>
struct transform_all<Transform, F, type_list<Sigs...>> {
    using type = typename concat<typename Transform<Sigs, F>::type...>::type;
};

// ---------------------------------------------------------------- picking signatures apart
template <class Sig>
struct value_args {
    using type = type_list<>;
    static constexpr int count = 0;
};
template <class... Vs>
struct value_args<set_value_t(Vs...)> {
    using type = type_list<Vs...>;
    static constexpr int count = 1;
};
template <class Sig>
struct error_of {
    using type = type_list<>;
};
template <class E>
struct error_of<set_error_t(E)> {
    using type = type_list<E>;
};

template <class List>
struct analyse;
template <class... Sigs>
struct analyse<type_list<Sigs...>> {
    static constexpr int value_count = (0 + ... + value_args<Sigs>::count);
    using values = typename concat<typename value_args<Sigs>::type...>::type;  // of the only one
    using errors = dedup_t<typename concat<typename error_of<Sigs>::type...>::type>;
    static constexpr bool stopped = (std::is_same_v<Sigs, set_stopped_t()> || ...);
};

/// The arguments of S's only value signature (algorithms that store values need one).
template <class S>
struct single_value {
    using info = analyse<sigs_of_t<S>>;
    static_assert(info::value_count == 1, "loom's algorithms need senders with exactly one value signature");
    using type = typename info::values;
};
template <class S>
using single_value_t = typename single_value<S>::type;

template <class List>
struct decayed_tuple;
template <class... Vs>
struct decayed_tuple<type_list<Vs...>> {
    using type = std::tuple<std::decay_t<Vs>...>;
};
template <class List>
struct variant_of;
template <class... Es>
struct variant_of<type_list<Es...>> {
    using type = std::variant<std::monostate, std::decay_t<Es>...>;
};

template <bool Throws>
using exception_sig_t = std::conditional_t<Throws, type_list<set_error_t(std::exception_ptr)>, type_list<>>;

/// Emplaces an immovable result: a conversion to T that the compiler elides into place.
template <class F>
struct emplace_from {
    F f;
    using type = std::invoke_result_t<F&>;
    operator type() && { return static_cast<F&&>(f)(); }  // NOLINT(google-explicit-constructor)
};
template <class F>
emplace_from(F) -> emplace_from<F>;

}  // namespace loom::execution::detail
