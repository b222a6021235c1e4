// A receiver for sender tests: records how (and with what) the sender completed, and offers
// a stop token of its own stop source through its environment.
#pragma once

#include <loom/execution.hpp>

#include <atomic>
#include <optional>
#include <system_error>
#include <tuple>
#include <type_traits>

namespace loom_test {

enum class completion_kind { none, value, error, stopped };

/// What a recording_receiver saw. Values of the one value signature (none, or one value V).
template <class V = void>
struct recorded {
    std::atomic<completion_kind> how{completion_kind::none};
    std::atomic<int> calls{0};
    std::conditional_t<std::is_void_v<V>, std::tuple<>, std::optional<V>> value{};
    std::error_code error{};
    loom::execution::inplace_stop_source stop;

    [[nodiscard]] auto done() const noexcept -> bool {
        return how.load(std::memory_order_acquire) != completion_kind::none;
    }
};

template <class V = void>
struct recording_receiver {
    using receiver_concept = loom::execution::receiver_t;
    recorded<V>* rec;

    struct env {
        loom::execution::inplace_stop_token token;
        [[nodiscard]] auto query(loom::execution::get_stop_token_t) const noexcept { return token; }
    };
    [[nodiscard]] auto get_env() const noexcept -> env { return {rec->stop.get_token()}; }

    template <class... Vs>
    void set_value(Vs&&... vs) && noexcept {
        if constexpr (!std::is_void_v<V>) rec->value.emplace(static_cast<Vs&&>(vs)...);
        finish(completion_kind::value);
    }
    void set_error(std::error_code ec) && noexcept {
        rec->error = ec;
        finish(completion_kind::error);
    }
    void set_error(std::exception_ptr) && noexcept { finish(completion_kind::error); }
    void set_stopped() && noexcept { finish(completion_kind::stopped); }

private:
    void finish(completion_kind k) noexcept {
        rec->calls.fetch_add(1, std::memory_order_relaxed);
        rec->how.store(k, std::memory_order_release);
    }
};

}  // namespace loom_test
