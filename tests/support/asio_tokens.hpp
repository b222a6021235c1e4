// Starting Asio operations with each kind of completion token and collecting what their
// handlers saw: the driver of the Asio front end's token tests.
#pragma once

#include "asio_progress.hpp"

#include <loom/asio.hpp>

#include <asio/co_spawn.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <asio/experimental/deferred.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/use_future.hpp>

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <system_error>
#include <tuple>
#include <vector>

namespace loom_test {

/// What a handler saw.
struct outcome {
    std::error_code ec;
    std::size_t bytes{0};
    int calls{0};
    void set(std::error_code e, std::size_t n) {
        ec = e;
        bytes = n;
        ++calls;
    }
    [[nodiscard]] auto done() const -> bool { return calls > 0; }
};
inline auto record(outcome& o) {
    return [&o](std::error_code ec, std::size_t n) { o.set(ec, n); };
}
/// One successful handler call that moved `size` bytes.
inline void expect_moved(const outcome& o, std::size_t size, const char* what) {
    ASSERT_TRUE(o.done()) << what;
    EXPECT_FALSE(o.ec) << what << ": " << o.ec.message();
    EXPECT_EQ(o.bytes, size) << what;
    EXPECT_EQ(o.calls, 1) << what;
}

enum class token { callback, future, deferred, tuple_callback, awaitable, tuple_awaitable };
inline constexpr std::array all_tokens{token::callback,       token::future,    token::deferred,
                                       token::tuple_callback, token::awaitable, token::tuple_awaitable};
inline auto token_name(token t) -> const char* {
    constexpr std::array names{"callback",          "future",    "deferred",
                               "as_tuple_callback", "awaitable", "as_tuple_awaitable"};
    return names.at(static_cast<std::size_t>(t));
}

/// Awaits launch(use_awaitable or as_tuple(use_awaitable)); a thrown error is recorded, not
/// lost. `entered` counts the coroutine in just before it submits the operation.
template <class Launch>
auto await_one(Launch launch, outcome& out, bool as_tuple, int* entered = nullptr) -> ::asio::awaitable<void> {
    if (entered != nullptr) ++*entered;
    if (as_tuple) {
        const auto [ec, n] = co_await launch(::asio::experimental::as_tuple(::asio::use_awaitable));
        out.set(ec, n);
        co_return;
    }
    try {
        const std::size_t n = co_await launch(::asio::use_awaitable);
        out.set({}, n);
    } catch (const std::system_error& e) {
        out.set(e.code(), 0);
    }
}

/// Starts operations with one kind of token, each reporting into an outcome, and runs the
/// io_context until all have reported.
class token_driver {
public:
    token_driver(::asio::io_context& ioc, token kind) : ioc_(ioc), kind_(kind) {}

    /// Starts launch(a token of this driver's kind). A coroutine's operation is submitted
    /// once the io_context runs it: submitted() waits for that.
    template <class Launch>
    void start(Launch launch, outcome& out) {
        switch (kind_) {
            case token::callback: launch(record(out)); break;
            case token::future: {
                auto f = std::make_shared<std::future<std::size_t>>(launch(::asio::use_future));
                pending_.emplace_back([f, &out] {
                    if (f->wait_for(std::chrono::seconds(0)) != std::future_status::ready) return false;
                    try {
                        out.set({}, f->get());
                    } catch (const std::system_error& e) {
                        out.set(e.code(), 0);
                    }
                    return true;
                });
                return;
            }
            case token::deferred: {
                // Nothing may start until the deferred operation is invoked.
                auto& service = loom::asio::fabric_service::use(ioc_);
                const std::size_t before = service.outstanding_operations();
                auto op = launch(::asio::experimental::deferred);
                EXPECT_EQ(service.outstanding_operations(), before) << "deferred started the operation";
                std::move(op)(record(out));
                EXPECT_EQ(service.outstanding_operations(), before + 1)
                    << "the invoked deferred operation did not start";
                break;
            }
            case token::tuple_callback:
                launch(::asio::experimental::as_tuple(
                    [&out](std::tuple<std::error_code, std::size_t> r) { out.set(std::get<0>(r), std::get<1>(r)); }));
                break;
            case token::awaitable:
            case token::tuple_awaitable:
                ++spawned_;
                ::asio::co_spawn(ioc_, await_one(launch, out, kind_ == token::tuple_awaitable, &entered_),
                                 [](const std::exception_ptr& e) { EXPECT_FALSE(e) << "the coroutine threw"; });
                break;
        }
        pending_.emplace_back([&out] { return out.done(); });
    }

    /// Runs the io_context until every coroutine started has submitted its operation (a
    /// coroutine submits in the same handler run that counts it in); false on timeout.
    auto submitted(std::chrono::milliseconds timeout = std::chrono::seconds(10)) -> bool {
        return run_until(ioc_, [&] { return entered_ == spawned_; }, timeout);
    }

    /// Runs the io_context until every outcome is in; false on timeout.
    auto finish(std::chrono::milliseconds timeout = std::chrono::seconds(20)) -> bool {
        const bool all = run_until(
            ioc_,
            [&] {
                std::erase_if(pending_, [](const std::function<bool()>& ready) { return ready(); });
                return pending_.empty();
            },
            timeout);
        if (ioc_.stopped()) ioc_.restart();
        ioc_.poll();  // a handler called twice would show in outcome::calls
        return all;
    }

private:
    ::asio::io_context& ioc_;
    token kind_;
    std::vector<std::function<bool()>> pending_;
    int spawned_{0};
    int entered_{0};
};

}  // namespace loom_test
