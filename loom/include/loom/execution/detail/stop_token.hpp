// loom/execution/detail/stop_token.hpp — stop tokens for builds with no execution backend:
// never_stop_token, and the in-place stop source, token and callback (no allocation).
#pragma once

#include <atomic>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>

namespace loom::execution {

/// A token that never asks to stop.
struct never_stop_token {
    template <class F>
    struct callback_type {
        template <class Init>
        explicit callback_type(never_stop_token, Init&&) noexcept {}
    };
    [[nodiscard]] static constexpr auto stop_requested() noexcept -> bool { return false; }
    [[nodiscard]] static constexpr auto stop_possible() noexcept -> bool { return false; }
    friend constexpr auto operator==(never_stop_token, never_stop_token) noexcept -> bool = default;
};

class inplace_stop_source;
class inplace_stop_token;

namespace detail {
/// A registered callback: an intrusive list node of its source.
class stop_callback_node {
public:
    using invoke_fn = void (*)(stop_callback_node&) noexcept;
    explicit stop_callback_node(invoke_fn fn) noexcept : invoke_(fn) {}

private:
    friend class loom::execution::inplace_stop_source;
    invoke_fn invoke_;
    stop_callback_node* next_{nullptr};
    stop_callback_node* prev_{nullptr};
    std::atomic<bool> finished_{false};
    bool* destroyed_during_invoke_{nullptr};
};
}  // namespace detail

/// The source of stop requests for the operations given its tokens. Immovable; the callbacks
/// run on the thread that calls request_stop.
class inplace_stop_source {
public:
    inplace_stop_source() = default;
    inplace_stop_source(const inplace_stop_source&) = delete;
    auto operator=(const inplace_stop_source&) -> inplace_stop_source& = delete;
    ~inplace_stop_source() = default;

    [[nodiscard]] auto get_token() const noexcept -> inplace_stop_token;
    [[nodiscard]] auto stop_requested() const noexcept -> bool { return requested_.load(std::memory_order_acquire); }
    [[nodiscard]] static constexpr auto stop_possible() noexcept -> bool { return true; }
    /// Asks to stop and runs the registered callbacks; false when stop was asked before.
    auto request_stop() noexcept -> bool {
        std::unique_lock lock(m_);
        if (requested_.exchange(true, std::memory_order_acq_rel)) return false;
        running_ = std::this_thread::get_id();
        while (head_ != nullptr) {
            detail::stop_callback_node* cb = head_;
            unlink(*cb);
            bool destroyed = false;
            cb->destroyed_during_invoke_ = &destroyed;
            lock.unlock();
            cb->invoke_(*cb);
            lock.lock();
            if (!destroyed) {
                cb->destroyed_during_invoke_ = nullptr;
                cb->finished_.store(true, std::memory_order_release);
            }
        }
        running_ = {};
        return true;
    }

    /// Registers `cb`; false (and `cb` not registered) when stop was requested already.
    auto attach(detail::stop_callback_node& cb) noexcept -> bool {
        const std::lock_guard lock(m_);
        if (requested_.load(std::memory_order_relaxed)) return false;
        cb.next_ = head_;
        if (head_ != nullptr) head_->prev_ = &cb;
        head_ = &cb;
        return true;
    }
    /// Unregisters `cb`; waits when another thread is running it.
    void detach(detail::stop_callback_node& cb) noexcept {
        std::unique_lock lock(m_);
        if (cb.prev_ != nullptr || head_ == &cb) {
            unlink(cb);
            return;
        }
        if (cb.finished_.load(std::memory_order_acquire)) return;
        if (running_ == std::this_thread::get_id()) {  // destroyed by its own invocation
            if (cb.destroyed_during_invoke_ != nullptr) *cb.destroyed_during_invoke_ = true;
            return;
        }
        lock.unlock();
        while (!cb.finished_.load(std::memory_order_acquire)) std::this_thread::yield();
    }

private:
    void unlink(detail::stop_callback_node& cb) noexcept {
        if (cb.prev_ != nullptr)
            cb.prev_->next_ = cb.next_;
        else
            head_ = cb.next_;
        if (cb.next_ != nullptr) cb.next_->prev_ = cb.prev_;
        cb.next_ = cb.prev_ = nullptr;
    }
    mutable std::mutex m_;
    std::atomic<bool> requested_{false};
    detail::stop_callback_node* head_{nullptr};
    std::thread::id running_{};
};

/// A token of an inplace_stop_source (or of none: never asks to stop).
class inplace_stop_token {
public:
    template <class F>
    class callback_type;

    inplace_stop_token() noexcept = default;
    [[nodiscard]] auto stop_requested() const noexcept -> bool { return src_ != nullptr && src_->stop_requested(); }
    [[nodiscard]] auto stop_possible() const noexcept -> bool { return src_ != nullptr; }
    friend auto operator==(const inplace_stop_token&, const inplace_stop_token&) noexcept -> bool = default;

private:
    friend class inplace_stop_source;
    explicit inplace_stop_token(const inplace_stop_source* s) noexcept : src_(s) {}
    const inplace_stop_source* src_{nullptr};
};

inline auto inplace_stop_source::get_token() const noexcept -> inplace_stop_token { return inplace_stop_token{this}; }

/// Runs f() once when stop is requested (at once when it already was); unregisters on
/// destruction, waiting for a run in progress on another thread.
template <class F>
class inplace_stop_token::callback_type : private detail::stop_callback_node {
public:
    template <class Init>
    explicit callback_type(inplace_stop_token t, Init&& init) noexcept(std::is_nothrow_constructible_v<F, Init>)
        : stop_callback_node(&run), f_(static_cast<Init&&>(init)), src_(const_cast<inplace_stop_source*>(t.src_)) {
        if (src_ == nullptr) return;
        if (!src_->attach(*this)) {
            src_ = nullptr;
            std::move(f_)();
        }
    }
    callback_type(const callback_type&) = delete;
    auto operator=(const callback_type&) -> callback_type& = delete;
    ~callback_type() {
        if (src_ != nullptr) src_->detach(*this);
    }

private:
    static void run(stop_callback_node& n) noexcept { std::move(static_cast<callback_type&>(n).f_)(); }
    F f_;
    inplace_stop_source* src_;
};

template <class Token, class F>
using stop_callback_for_t = typename Token::template callback_type<F>;

}  // namespace loom::execution
