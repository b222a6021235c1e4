// loom's own sender protocol and algorithms (the build's no-backend mode): completions of
// just/then/upon_error/let_value/when_all/starts_on, stop tokens, sync_wait, the scheduler.
#include "sender_receiver.hpp"

#include <loom/execution.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>

namespace ex = loom::execution;
using loom_test::completion_kind;
using loom_test::recorded;
using loom_test::recording_receiver;

namespace {

/// A sender that fails with `ec`.
struct error_sender {
    using sender_concept = ex::sender_t;
    using completion_signatures = ex::completion_signatures<ex::set_value_t(int), ex::set_error_t(std::error_code)>;
    std::error_code ec;
    template <class R>
    struct operation {
        using operation_state_concept = ex::operation_state_t;
        std::error_code ec;
        R r;
        void start() & noexcept { ex::set_error(std::move(r), ec); }
    };
    template <class R>
    auto connect(R r) const -> operation<R> {
        return {ec, std::move(r)};
    }
};

/// A sender that completes only when stop is requested (set_stopped), like a posted receive.
struct until_stopped {
    using sender_concept = ex::sender_t;
    using completion_signatures = ex::completion_signatures<ex::set_value_t(int), ex::set_stopped_t()>;
    template <class R>
    struct operation {
        using operation_state_concept = ex::operation_state_t;
        struct on_stop {
            operation* op;
            void operator()() noexcept { ex::set_stopped(std::move(op->r)); }
        };
        R r;
        std::optional<ex::stop_callback_for_t<ex::stop_token_of_t<ex::env_of_t<R>>, on_stop>> cb;
        void start() & noexcept { cb.emplace(ex::get_stop_token(ex::get_env(r)), on_stop{this}); }
    };
    template <class R>
    auto connect(R r) const -> operation<R> {
        return {std::move(r), {}};
    }
};

TEST(Algorithms, then_transforms_values_and_passes_errors) {
    auto v = ex::sync_wait(ex::just(20, 22) | ex::then([](int a, int b) { return a + b; }));
    ASSERT_TRUE(v);
    EXPECT_EQ(std::get<0>(*v), 42);
    recorded<int> rec;
    auto op = ex::connect(error_sender{std::make_error_code(std::errc::io_error)} | ex::then([](int x) { return x; }),
                          recording_receiver<int>{&rec});
    ex::start(op);
    EXPECT_EQ(rec.how, completion_kind::error);
    EXPECT_EQ(rec.error, std::make_error_code(std::errc::io_error));
}

TEST(Algorithms, a_throwing_function_becomes_an_error) {
    auto s = ex::just(1) | ex::then([](int) -> int { throw std::runtime_error("boom"); });
    EXPECT_THROW((void)ex::sync_wait(std::move(s)), std::runtime_error);
}

TEST(Algorithms, upon_error_turns_an_error_into_a_value) {
    auto s = error_sender{std::make_error_code(std::errc::timed_out)} |
             ex::upon_error([](std::error_code ec) { return ec == std::errc::timed_out ? -1 : -2; });
    auto v = ex::sync_wait(std::move(s));
    ASSERT_TRUE(v);
    EXPECT_EQ(std::get<0>(*v), -1);
}

TEST(Algorithms, sync_wait_throws_the_error_code_as_system_error) {
    try {
        (void)ex::sync_wait(error_sender{std::make_error_code(std::errc::invalid_argument)});
        FAIL() << "no exception";
    } catch (const std::system_error& e) {
        EXPECT_EQ(e.code(), std::make_error_code(std::errc::invalid_argument));
    }
}

TEST(Algorithms, let_value_chains_a_second_sender_with_the_first_values) {
    auto v = ex::sync_wait(ex::just(21) | ex::let_value([](int& x) { return ex::just(x * 2); }));
    ASSERT_TRUE(v);
    EXPECT_EQ(std::get<0>(*v), 42);
}

TEST(Algorithms, when_all_concatenates_values_in_order) {
    auto v = ex::sync_wait(ex::when_all(ex::just(1), ex::just(), ex::just(2.5, 'c')));
    ASSERT_TRUE(v);
    EXPECT_EQ(std::get<0>(*v), 1);
    EXPECT_EQ(std::get<1>(*v), 2.5);
    EXPECT_EQ(std::get<2>(*v), 'c');
}

TEST(Algorithms, a_when_all_of_copyable_senders_connects_again_as_an_lvalue) {
    auto both = ex::when_all(ex::just(1), ex::just(std::string("two")));
    for (int round = 0; round < 2; ++round) {
        auto v = ex::sync_wait(both);
        ASSERT_TRUE(v);
        EXPECT_EQ(std::get<0>(*v), 1);
        EXPECT_EQ(std::get<1>(*v), "two") << "round " << round << ": the children were copied, not moved from";
    }
}

TEST(Algorithms, when_all_stops_the_others_on_an_error_and_reports_it) {
    recorded<> rec;
    auto op = ex::connect(ex::when_all(until_stopped{}, error_sender{std::make_error_code(std::errc::io_error)}) |
                              ex::then([](int, int) {}),
                          recording_receiver<>{&rec});
    ex::start(op);
    EXPECT_EQ(rec.how, completion_kind::error) << "the pending child was not stopped";
    EXPECT_EQ(rec.error, std::make_error_code(std::errc::io_error));
    EXPECT_EQ(rec.calls, 1);
}

TEST(Algorithms, a_stop_request_reaches_children_through_when_all) {
    recorded<> rec;
    auto op = ex::connect(ex::when_all(until_stopped{}, until_stopped{}) | ex::then([](int, int) {}),
                          recording_receiver<>{&rec});
    ex::start(op);
    EXPECT_FALSE(rec.done());
    std::thread t([&] { rec.stop.request_stop(); });
    t.join();
    EXPECT_EQ(rec.how, completion_kind::stopped);
    EXPECT_EQ(rec.calls, 1);
}

TEST(StopToken, callbacks_run_once_and_not_after_destruction) {
    ex::inplace_stop_source src;
    int runs = 0;
    {
        ex::inplace_stop_token::callback_type<std::function<void()>> gone(src.get_token(), [&] { runs += 100; });
    }
    ex::inplace_stop_token::callback_type<std::function<void()>> cb(src.get_token(), [&] { ++runs; });
    EXPECT_TRUE(src.request_stop());
    EXPECT_FALSE(src.request_stop());
    EXPECT_EQ(runs, 1);
    ex::inplace_stop_token::callback_type<std::function<void()>> late(src.get_token(), [&] { runs += 10; });
    EXPECT_EQ(runs, 11) << "a callback made after the request runs at once";
    EXPECT_FALSE(ex::never_stop_token{}.stop_possible());
}

TEST(Scheduler, schedule_completes_inline_and_starts_on_runs_the_sender) {
    auto cq = std::make_shared<loom::completion_queue>();
    loom::scheduler sched{cq};
    EXPECT_EQ(sched, loom::scheduler{cq});
    const auto caller = std::this_thread::get_id();
    auto v = ex::sync_wait(ex::schedule(sched) | ex::then([&] { return std::this_thread::get_id() == caller; }));
    ASSERT_TRUE(v);
    EXPECT_TRUE(std::get<0>(*v));
    auto w = ex::sync_wait(ex::starts_on(sched, ex::just(7)));
    ASSERT_TRUE(w);
    EXPECT_EQ(std::get<0>(*w), 7);
    auto env = ex::get_env(ex::schedule(sched));
    EXPECT_EQ(ex::get_completion_scheduler<ex::set_value_t>(env), sched);
}

TEST(Backend, names_the_backend_this_build_selected) {
#if defined(LOOM_EXECUTION_USE_NONE)
    EXPECT_FALSE(ex::has_execution_backend);
    EXPECT_STREQ(ex::execution_backend_name, "none");
#elif defined(LOOM_EXECUTION_USE_STDEXEC)
    EXPECT_TRUE(ex::has_execution_backend);
    EXPECT_STREQ(ex::execution_backend_name, "stdexec");
#elif defined(LOOM_EXECUTION_USE_BEMAN)
    EXPECT_TRUE(ex::has_execution_backend);
    EXPECT_STREQ(ex::execution_backend_name, "beman::execution");
#else
    EXPECT_TRUE(ex::has_execution_backend);
    EXPECT_STREQ(ex::execution_backend_name, "std::execution");
#endif
    static_assert(ex::features::has_when_all && ex::features::has_let_value);
    static_assert(ex::sender<loom::message_senders::send_sender>);
    static_assert(ex::scheduler<loom::scheduler>);
}

/// An operation state without the P2300 tag: what the standard's (and beman's) connect reject.
struct untagged_operation {
    void start() & noexcept {}
};

// Every operation state loom's senders and algorithms return is a P2300 operation state (the
// tag the standard and beman require) and immovable: started, it is where its completion lands.
template <class S, class R = recording_receiver<std::size_t>>
constexpr bool is_immovable_operation_state =
    ex::operation_state<ex::connect_result_t<S, R>> && !std::is_move_constructible_v<ex::connect_result_t<S, R>> &&
    !std::is_copy_constructible_v<ex::connect_result_t<S, R>>;

TEST(Protocol, operation_states_are_tagged_and_immovable) {
    static_assert(!ex::operation_state<untagged_operation>);
    static_assert(is_immovable_operation_state<loom::message_senders::send_sender, recording_receiver<>>);
    static_assert(is_immovable_operation_state<loom::message_senders::receive_sender>);
    using rma = decltype(loom::rma_async(std::declval<loom::endpoint&>()));
    using read_sender =
        decltype(std::declval<rma>().read_from({}, std::declval<const loom::memory_region&>(), {}, {}, nullptr));
    static_assert(is_immovable_operation_state<read_sender>);
    using fetch_sender = decltype(std::declval<rma>().fetch_add_to(
        std::declval<const std::uint64_t&>(), nullptr, std::declval<std::uint64_t&>(), nullptr, {}, {}, nullptr));
    static_assert(is_immovable_operation_state<fetch_sender, recording_receiver<std::uint64_t>>);
    using schedule_sender = decltype(ex::schedule(std::declval<const loom::scheduler&>()));
    static_assert(is_immovable_operation_state<schedule_sender, recording_receiver<>>);
    static_assert(is_immovable_operation_state<decltype(ex::just(1)), recording_receiver<int>>);
    static_assert(is_immovable_operation_state<decltype(ex::just(1) | ex::then([](int) {})), recording_receiver<>>);
    static_assert(is_immovable_operation_state<decltype(ex::when_all(ex::just(1), ex::just(2))),
                                               recording_receiver<std::tuple<int, int>>>);
    // Connected and started where it lies: the operation completes through its own storage.
    recorded<int> rec;
    auto op = ex::connect(ex::just(5), recording_receiver<int>{&rec});
    ex::start(op);
    ASSERT_EQ(rec.how.load(), completion_kind::value);
    EXPECT_EQ(*rec.value, 5);
}

}  // namespace
