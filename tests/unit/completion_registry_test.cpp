// The completion registry: operations found by context (never dereferenced), delivered once,
// unlinked before delivery; the deferred list and the held events keep their order.
#include <loom/completion_registry.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <thread>
#include <vector>

namespace {

struct op : loom::registered_completion {
    explicit op(const void* owner = nullptr, bool passive = false)
        : registered_completion(&deliver_to, &retry_to, owner) {
        if (passive) make_passive();
    }
    static void deliver_to(registered_completion& self, const loom::completion_event& ev,
                           bool final_delivery) noexcept {
        auto& o = static_cast<op&>(self);
        ++o.delivered;
        o.bytes = ev.bytes_transferred;
        o.final_delivery = final_delivery;
        if (o.on_deliver) o.on_deliver(o);
    }
    static auto retry_to(registered_completion& self) noexcept -> bool {
        auto& o = static_cast<op&>(self);
        ++o.retried;
        return o.busy_retries-- > 0;
    }
    int delivered{0};
    int retried{0};
    int busy_retries{0};  ///< retries that find the provider busy again
    std::size_t bytes{0};
    void (*on_deliver)(op&){nullptr};
    bool final_delivery{false};  ///< what the last delivery was told
};

auto event_for(op& o, std::size_t bytes = 0) -> loom::completion_event {
    loom::completion_event ev{};
    ev.context = o.context();
    ev.bytes_transferred = bytes;
    return ev;
}

TEST(CompletionRegistry, delivers_many_operations_in_any_order_exactly_once) {
    loom::completion_registry reg;
    std::vector<std::unique_ptr<op>> ops;
    for (int i = 0; i < 1000; ++i) ops.push_back(std::make_unique<op>());
    for (auto& o : ops) ASSERT_TRUE(reg.add(*o));
    EXPECT_EQ(reg.size(), 1000u);
    std::vector<std::size_t> order(ops.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), std::mt19937{7});
    for (std::size_t i : order) {
        EXPECT_TRUE(reg.owns(ops[i]->context()));
        ASSERT_TRUE(reg.dispatch(event_for(*ops[i], i)));
        EXPECT_FALSE(reg.owns(ops[i]->context()));
        EXPECT_FALSE(reg.dispatch(event_for(*ops[i], i))) << "a second completion found an owner";
    }
    EXPECT_EQ(reg.size(), 0u);
    for (std::size_t i = 0; i < ops.size(); ++i) {
        EXPECT_EQ(ops[i]->delivered, 1);
        EXPECT_EQ(ops[i]->bytes, i);
    }
}

// Both kinds of registry: locked, and serialized (no lock: the application serializes).
class CompletionRegistryKinds : public ::testing::TestWithParam<bool> {};

TEST_P(CompletionRegistryKinds, random_churn_of_neighbouring_contexts_matches_a_reference_set) {
    // Neighbouring states (one array) give neighbouring keys: long probe runs, growth and
    // removals from the middle of runs, each checked against a plain set.
    constexpr std::size_t n = 300;
    const std::unique_ptr<op[]> ops(new op[n]);
    loom::completion_registry reg{nullptr, GetParam()};
    EXPECT_EQ(reg.serialized(), GetParam());
    std::vector<bool> in(n, false);
    std::size_t count = 0;
    std::mt19937 rng{11};
    for (int step = 0; step < 20000; ++step) {
        const std::size_t i = rng() % n;
        if (!in[i]) {
            ASSERT_TRUE(reg.add(ops[i]));
            ++count;
        } else if (rng() % 2 == 0) {
            ASSERT_TRUE(reg.dispatch(event_for(ops[i])));
            --count;
        } else {
            ASSERT_TRUE(reg.remove(ops[i]));
            --count;
        }
        in[i] = !in[i];
        ASSERT_EQ(reg.size(), count);
        if (step % 97 != 0) continue;
        for (std::size_t k = 0; k < n; ++k) {
            ASSERT_EQ(reg.owns(ops[k].context()), in[k]) << "state " << k << " at step " << step;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(locking, CompletionRegistryKinds, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "serialized" : "locked"; });

TEST(CompletionRegistry, foreign_and_missing_contexts_are_left_with_the_caller) {
    loom::completion_registry reg;
    op a;
    ASSERT_TRUE(reg.add(a));
    loom::completion_event foreign{};
    foreign.context = reinterpret_cast<void*>(0x10);  // would crash if dereferenced
    EXPECT_FALSE(reg.dispatch(foreign));
    loom::completion_event none{};
    EXPECT_FALSE(reg.dispatch(none));
    EXPECT_EQ(a.delivered, 0);
    EXPECT_EQ(reg.size(), 1u);
}

TEST(CompletionRegistry, refuses_a_second_registration_and_removes_once) {
    loom::completion_registry reg;
    op a;
    EXPECT_TRUE(reg.add(a));
    EXPECT_FALSE(reg.add(a));
    EXPECT_TRUE(reg.remove(a));
    EXPECT_FALSE(reg.remove(a));
    EXPECT_FALSE(reg.dispatch(event_for(a)));
    EXPECT_EQ(reg.size(), 0u);
}

TEST(CompletionRegistry, a_delivered_operation_may_register_again_from_its_delivery) {
    static loom::completion_registry reg;
    op a;
    a.on_deliver = [](op& self) {
        if (self.delivered == 1) {
            EXPECT_TRUE(reg.add(self));  // resubmits, e.g. a repeating receive
        }
    };
    ASSERT_TRUE(reg.add(a));
    ASSERT_TRUE(reg.dispatch(event_for(a)));
    EXPECT_TRUE(reg.owns(a.context()));
    ASSERT_TRUE(reg.dispatch(event_for(a)));
    EXPECT_EQ(a.delivered, 2);
    EXPECT_EQ(reg.size(), 0u);
}

TEST(CompletionRegistry, only_the_event_dispatch_final_delivers_is_the_readers_last) {
    loom::completion_registry reg;
    op a, b, c, d;
    for (op* o : {&a, &b, &c, &d}) ASSERT_TRUE(reg.add(*o));
    loom::completion_event ev = event_for(a);
    ASSERT_TRUE(reg.dispatch_final(ev));
    EXPECT_TRUE(a.final_delivery);
    ev.context = b.context();  // the same event object, now delivered by dispatch(): not the last
    ASSERT_TRUE(reg.dispatch(ev));
    EXPECT_EQ(b.delivered, 1);
    EXPECT_FALSE(b.final_delivery);
    loom::completion_event other = event_for(c);
    ASSERT_TRUE(reg.dispatch_final(other));
    EXPECT_TRUE(c.final_delivery);
    loom::completion_event foreign{};
    foreign.context = &foreign;
    EXPECT_FALSE(reg.dispatch_final(foreign)) << "no owner: left with the caller";
    ev.context = d.context();
    ASSERT_TRUE(reg.dispatch(ev));
    EXPECT_FALSE(d.final_delivery);
    EXPECT_EQ(reg.size(), 0u);
}

TEST(CompletionRegistry, nothing_is_delivered_as_final_while_a_batch_is_open) {
    loom::completion_registry reg;
    op a, b, c;
    for (op* o : {&a, &b, &c}) ASSERT_TRUE(reg.add(*o));
    reg.open_batch();  // e.g. a reader nested in another reader's delivery
    reg.open_batch();
    ASSERT_TRUE(reg.dispatch_final(event_for(a)));
    EXPECT_FALSE(a.final_delivery);
    reg.close_batch();
    ASSERT_TRUE(reg.dispatch_final(event_for(b)));
    EXPECT_FALSE(b.final_delivery) << "one batch is still open";
    reg.close_batch();
    ASSERT_TRUE(reg.dispatch_final(event_for(c)));
    EXPECT_TRUE(c.final_delivery);
}

TEST(CompletionRegistry, deferred_operations_are_retried_in_order_once_per_call) {
    loom::completion_registry reg;
    op a, b, c;
    EXPECT_TRUE(reg.defer(a));
    EXPECT_TRUE(reg.defer(b));
    EXPECT_TRUE(reg.defer(c));
    EXPECT_FALSE(reg.defer(b)) << "queued twice";
    EXPECT_FALSE(reg.add(b)) << "registered while queued";
    EXPECT_TRUE(reg.withdraw_deferred(b));
    EXPECT_FALSE(reg.withdraw_deferred(b));
    EXPECT_EQ(reg.deferred_count(), 2u);
    EXPECT_EQ(reg.retry_deferred(), 2u);
    EXPECT_EQ(a.retried, 1);
    EXPECT_EQ(b.retried, 0);
    EXPECT_EQ(c.retried, 1);
    EXPECT_EQ(reg.retry_deferred(), 0u);
    loom::registered_completion no_retry{&op::deliver_to};
    EXPECT_FALSE(reg.defer(no_retry));
}

TEST(CompletionRegistry, a_retry_that_finds_the_provider_busy_keeps_its_place_and_stops_the_round) {
    loom::completion_registry reg;
    op a, b, c;
    ASSERT_TRUE(reg.defer(a) && reg.defer(b) && reg.defer(c));
    a.busy_retries = 1;
    EXPECT_EQ(reg.retry_deferred(), 1u) << "b and c wait behind a";
    EXPECT_EQ(a.retried, 1);
    EXPECT_EQ(b.retried, 0);
    EXPECT_EQ(c.retried, 0);
    EXPECT_EQ(reg.deferred_count(), 3u);
    b.busy_retries = 1;
    EXPECT_EQ(reg.retry_deferred(), 2u) << "a first again, then b, busy: c waits";
    EXPECT_EQ(a.retried, 2);
    EXPECT_EQ(b.retried, 1);
    EXPECT_EQ(c.retried, 0);
    EXPECT_EQ(reg.deferred_count(), 2u) << "b back in front of c";
    EXPECT_EQ(reg.retry_deferred(), 2u);
    EXPECT_EQ(b.retried, 2);
    EXPECT_EQ(c.retried, 1);
    EXPECT_EQ(reg.deferred_count(), 0u);
}

TEST(CompletionRegistry, held_events_come_back_in_order_beyond_the_first_capacity) {
    loom::completion_registry reg;
    constexpr std::size_t n = 3 * loom::completion_registry::hold_capacity + 5;
    loom::completion_event out{};
    // Start the ring off its first slot so that growing must unwrap it.
    ASSERT_TRUE(reg.hold(loom::completion_event{}));
    ASSERT_TRUE(reg.take_held(out));
    for (std::size_t i = 0; i < n; ++i) {
        loom::completion_event ev{};
        ev.bytes_transferred = i;
        ev.error_text = "text";
        ASSERT_TRUE(reg.hold(ev));
    }
    EXPECT_EQ(reg.held_count(), n);
    for (std::size_t i = 0; i < n; ++i) {
        ASSERT_TRUE(reg.take_held(out));
        EXPECT_EQ(out.bytes_transferred, i);
        EXPECT_EQ(out.error_text, "text");
    }
    EXPECT_FALSE(reg.take_held(out));
}

TEST(CompletionRegistry, reserving_room_makes_that_many_holds_possible) {
    loom::completion_registry reg;
    EXPECT_EQ(reg.hold_room(), loom::completion_registry::hold_capacity);
    ASSERT_TRUE(reg.reserve_hold(100));
    EXPECT_GE(reg.hold_room(), 100u);
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(reg.hold(loom::completion_event{}));
    EXPECT_EQ(reg.held_count(), 100u);
}

TEST(CompletionRegistry, passive_dispatch_delivers_only_passive_operations) {
    loom::completion_registry reg;
    op active, passive{nullptr, true};
    ASSERT_TRUE(reg.add(active));
    ASSERT_TRUE(reg.add(passive));
    EXPECT_FALSE(reg.dispatch_passive(event_for(active)));
    EXPECT_TRUE(reg.owns(active.context())) << "a refused passive dispatch must leave the operation registered";
    EXPECT_TRUE(reg.dispatch_passive(event_for(passive, 7)));
    EXPECT_EQ(passive.delivered, 1);
    EXPECT_EQ(passive.bytes, 7u);
    EXPECT_TRUE(reg.dispatch(event_for(active)));
    EXPECT_EQ(active.delivered, 1);
}

TEST(CompletionRegistry, held_events_of_passive_operations_are_delivered_and_the_rest_keep_their_order) {
    loom::completion_registry reg;
    op active, passive{nullptr, true};
    ASSERT_TRUE(reg.add(active));
    ASSERT_TRUE(reg.add(passive));
    loom::completion_event foreign{};
    foreign.bytes_transferred = 1;
    ASSERT_TRUE(reg.hold(foreign));
    ASSERT_TRUE(reg.hold(event_for(passive, 2)));
    ASSERT_TRUE(reg.hold(event_for(active, 3)));
    EXPECT_EQ(reg.dispatch_held_passive(), 1u);
    EXPECT_EQ(passive.delivered, 1);
    EXPECT_EQ(active.delivered, 0) << "an operation that runs user code must wait for a normal reader";
    loom::completion_event out{};
    ASSERT_TRUE(reg.take_held(out));
    EXPECT_EQ(out.bytes_transferred, 1u);
    ASSERT_TRUE(reg.take_held(out));
    EXPECT_EQ(out.bytes_transferred, 3u);
    EXPECT_FALSE(reg.take_held(out));
    EXPECT_EQ(reg.dispatch_held_passive(), 0u);
}

TEST(CompletionRegistry, owned_operations_are_visited_and_removed_by_owner_only) {
    loom::completion_registry reg;
    int mine = 0, theirs = 0;
    std::vector<std::unique_ptr<op>> ops;
    for (int i = 0; i < 50; ++i) ops.push_back(std::make_unique<op>(i % 3 == 0 ? &theirs : &mine));
    for (std::size_t i = 0; i < ops.size(); ++i) {
        if (i % 5 == 4) {
            ASSERT_TRUE(reg.defer(*ops[i]));
        } else {
            ASSERT_TRUE(reg.add(*ops[i]));
        }
    }
    struct seen {
        std::vector<const loom::registered_completion*> registered, deferred;
    } visited, removed;
    auto note = [](loom::registered_completion& o, bool deferred, void* arg) noexcept {
        auto* s = static_cast<seen*>(arg);
        (deferred ? s->deferred : s->registered).push_back(&o);
    };
    std::size_t mine_registered = 0, mine_deferred = 0;
    for (std::size_t i = 0; i < ops.size(); ++i)
        if (ops[i]->owner() == &mine) ++(i % 5 == 4 ? mine_deferred : mine_registered);
    EXPECT_EQ(reg.visit_owned(&mine, note, &visited), mine_registered + mine_deferred);
    EXPECT_EQ(visited.registered.size(), mine_registered);
    EXPECT_EQ(visited.deferred.size(), mine_deferred) << "visiting takes deferred operations out";
    EXPECT_EQ(reg.deferred_count(), 10u - mine_deferred);
    for (auto* o : visited.registered) EXPECT_TRUE(reg.owns(reinterpret_cast<const void*>(o->context_address())));
    EXPECT_EQ(reg.remove_owned(&mine, note, &removed), mine_registered);
    EXPECT_EQ(removed.registered.size(), mine_registered);
    for (std::size_t i = 0; i < ops.size(); ++i) {
        const bool registered = i % 5 != 4;
        EXPECT_EQ(reg.owns(ops[i]->context()), registered && ops[i]->owner() == &theirs) << i;
    }
    // What is left still works as a tree.
    for (std::size_t i = 0; i < ops.size(); ++i) {
        if (i % 5 == 4 || ops[i]->owner() != &theirs) continue;
        EXPECT_TRUE(reg.dispatch(event_for(*ops[i])));
    }
    EXPECT_EQ(reg.size(), 0u);
}

}  // namespace

namespace {

TEST(CompletionRegistryConcurrency, registering_and_dispatching_from_several_threads) {
    loom::completion_registry reg;
    constexpr int per_thread = 2000;
    constexpr int threads = 4;
    std::vector<std::unique_ptr<op>> ops;
    for (int i = 0; i < per_thread * threads; ++i) ops.push_back(std::make_unique<op>());
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            // Each thread registers its share, then delivers the share of the next thread (which
            // may not be registered yet: dispatch says so and the event is offered again).
            for (int i = 0; i < per_thread; ++i) ASSERT_TRUE(reg.add(*ops[t * per_thread + i]));
            const int other = (t + 1) % threads;
            for (int i = 0; i < per_thread; ++i) {
                auto ev = event_for(*ops[other * per_thread + i]);
                while (!reg.dispatch(ev)) std::this_thread::yield();
            }
        });
    }
    for (auto& th : pool) th.join();
    EXPECT_EQ(reg.size(), 0u);
    for (auto& o : ops) EXPECT_EQ(o->delivered, 1);
}

// Registered while the process has one thread (the registry takes no lock then), delivered by
// threads started afterwards, which register and deliver more under the lock: under
// ThreadSanitizer, what the first thread wrote without the lock is ordered before them.
TEST(CompletionRegistryConcurrency, operations_registered_before_the_first_thread_are_delivered_by_later_ones) {
    loom::completion_registry reg;
    constexpr int threads = 3;
    constexpr int per_thread = 500;
    std::vector<std::unique_ptr<op>> early, late;
    for (int i = 0; i < threads * per_thread; ++i) {
        early.push_back(std::make_unique<op>());
        late.push_back(std::make_unique<op>());
    }
    for (auto& o : early) ASSERT_TRUE(reg.add(*o));  // before any thread (ctest: a process per test)
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            for (int i = t * per_thread; i < (t + 1) * per_thread; ++i) {
                EXPECT_TRUE(reg.dispatch(event_for(*early[i])));
                EXPECT_TRUE(reg.add(*late[i]));
            }
            for (int i = t * per_thread; i < (t + 1) * per_thread; ++i) EXPECT_TRUE(reg.dispatch(event_for(*late[i])));
        });
    }
    for (auto& th : pool) th.join();
    EXPECT_EQ(reg.size(), 0u);
    for (auto& o : early) EXPECT_EQ(o->delivered, 1);
    for (auto& o : late) EXPECT_EQ(o->delivered, 1);
}

}  // namespace
