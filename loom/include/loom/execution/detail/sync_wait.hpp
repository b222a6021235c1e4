// loom/execution/detail/sync_wait.hpp — sync_wait for builds with no execution backend: starts
// the sender and blocks the calling thread until it completes. Fabric senders need progress
// from another thread meanwhile (loom::execution::poll_completions).
#pragma once

#include <loom/execution/detail/signatures.hpp>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <system_error>

namespace loom::execution {
namespace detail {

template <class Values, class Errors>
struct sync_wait_state {
    std::mutex m;
    std::condition_variable cv;
    bool done{false};
    std::optional<Values> value;
    typename variant_of<Errors>::type error;
    void finish() noexcept {
        const std::lock_guard lock(m);
        done = true;
        cv.notify_one();
    }
};

template <class State>
struct sync_wait_receiver {
    using receiver_concept = receiver_t;
    State* st;
    template <class... Vs>
    void set_value(Vs&&... vs) && noexcept {
        st->value.emplace(static_cast<Vs&&>(vs)...);
        st->finish();
    }
    template <class E>
    void set_error(E&& e) && noexcept {
        st->error.template emplace<std::decay_t<E>>(static_cast<E&&>(e));
        st->finish();
    }
    void set_stopped() && noexcept { st->finish(); }
};

struct sync_wait_fn {
    template <sender S>
    auto operator()(S&& s) const -> std::optional<typename decayed_tuple<single_value_t<S>>::type> {
        using values = typename decayed_tuple<single_value_t<S>>::type;
        using state = sync_wait_state<values, typename analyse<sigs_of_t<S>>::errors>;
        state st;
        auto op = execution::connect(static_cast<S&&>(s), sync_wait_receiver<state>{&st});
        execution::start(op);
        std::unique_lock lock(st.m);
        st.cv.wait(lock, [&] { return st.done; });
        std::visit(
            [](auto& e) {
                using E = std::decay_t<decltype(e)>;
                if constexpr (std::is_same_v<E, std::exception_ptr>)
                    std::rethrow_exception(e);
                else if constexpr (std::is_same_v<E, std::error_code>)
                    throw std::system_error(e);
                else if constexpr (!std::is_same_v<E, std::monostate>)
                    throw e;
            },
            st.error);
        return std::move(st.value);
    }
};

}  // namespace detail

/// Blocks until `s` completes: its values, nullopt when it stopped; an error is thrown
/// (std::system_error for a std::error_code, the exception itself for an exception_ptr).
inline constexpr detail::sync_wait_fn sync_wait{};

}  // namespace loom::execution
