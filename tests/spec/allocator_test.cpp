// "Allocator-Aware Design": every factory that takes a memory resource allocates the object's
// own state from it, and nothing from the default resource or the global heap. Counted over
// real objects of a tcp domain (and an event queue of its fabric).
#include <loom/loom.hpp>

#include <gtest/gtest.h>

#include "allocation_count.hpp"
#include "core_support.hpp"
#include "counting_resource.hpp"

#include <array>
#include <optional>
#include <vector>

using loom::test::allocations_so_far;
using loom::test::counting_resource;

namespace {

/// Counts the default pmr resource for the test's lifetime.
struct default_watch {
    counting_resource counted;
    std::pmr::memory_resource* before{std::pmr::set_default_resource(&counted)};
    ~default_watch() { std::pmr::set_default_resource(before); }
};

/// What one step took: from the given resource, the default resource, and operator new.
struct taken {
    long given{0}, by_default{0}, global{0};
};
template <class F>
auto measure(counting_resource& given, counting_resource& by_default, F&& step) -> taken {
    const long g0 = given.allocations, d0 = by_default.allocations, n0 = allocations_so_far();
    step();
    return {given.allocations - g0, by_default.allocations - d0, allocations_so_far() - n0};
}

/// Nothing was taken from the default resource or the global heap.
auto none_elsewhere(const taken& t) -> ::testing::AssertionResult {
    if (t.by_default == 0 && t.global == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << t.by_default << " allocation(s) from the default resource and " << t.global
                                         << " from the global heap";
}

/// A tcp RDM endpoint's info, its state from `r`.
auto tcp_info(counting_resource& r) -> loom::result<loom::fabric_info> {
    return loom::query_fabric({.capabilities = loom::capability::msg | loom::capability::tagged,
                               .ep_type = loom::endpoint_types::rdm,
                               .provider = "tcp"},
                              &r);
}

}  // namespace

TEST(SpecAllocators, every_object_allocates_its_state_from_the_resource_it_was_given) {
    default_watch def;
    counting_resource r;
    auto info = tcp_info(r);
    ASSERT_TRUE(info);

    loom::result<loom::fabric> fab = loom::make_unexpected(loom::errc::other);
    auto t = measure(r, def.counted, [&] { fab = loom::fabric::create(*info, &r); });
    ASSERT_TRUE(fab);
    EXPECT_GT(t.given, 0) << "fabric: its child count";
    EXPECT_TRUE(none_elsewhere(t));

    loom::result<loom::domain> dom = loom::make_unexpected(loom::errc::other);
    t = measure(r, def.counted, [&] { dom = loom::domain::create(*fab, *info, &r); });
    ASSERT_TRUE(dom);
    EXPECT_GT(t.given, 0) << "domain: its child count";
    EXPECT_TRUE(none_elsewhere(t));

    loom::result<loom::completion_queue> cq = loom::make_unexpected(loom::errc::other);
    t = measure(r, def.counted, [&] { cq = loom::completion_queue::create(*dom, {.size = 64}, &r); });
    ASSERT_TRUE(cq);
    EXPECT_GE(t.given, 2) << "completion queue: its registry and the registry's held-event ring";
    EXPECT_TRUE(none_elsewhere(t));
    EXPECT_EQ(cq->memory_resource(), &r);

    loom::result<loom::address_vector> av = loom::make_unexpected(loom::errc::other);
    t = measure(r, def.counted, [&] { av = loom::address_vector::create(*dom, {}, &r); });
    ASSERT_TRUE(av);
    EXPECT_GT(t.given, 0) << "address vector: its record of inserted handles";
    EXPECT_TRUE(none_elsewhere(t));
    EXPECT_EQ(av->memory_resource(), &r);

    loom::result<loom::counter> cntr = loom::make_unexpected(loom::errc::other);
    t = measure(r, def.counted, [&] { cntr = loom::counter::create(*dom, {}, &r); });
    ASSERT_TRUE(cntr);
    EXPECT_TRUE(none_elsewhere(t));
    EXPECT_EQ(cntr->memory_resource(), &r);

    loom::result<loom::endpoint> ep = loom::make_unexpected(loom::errc::other);
    t = measure(r, def.counted, [&] { ep = loom::endpoint::create(*dom, *info, &r); });
    ASSERT_TRUE(ep);
    EXPECT_TRUE(none_elsewhere(t));
    EXPECT_EQ(ep->memory_resource(), &r);

    std::array<std::byte, 256> data{};
    loom::result<loom::memory_region> mr = loom::make_unexpected(loom::errc::other);
    t = measure(r, def.counted, [&] {
        mr = loom::memory_region::register_memory(*dom, std::span{data}, loom::mr_access_flags::send, &r);
    });
    ASSERT_TRUE(mr);
    EXPECT_TRUE(none_elsewhere(t));
    EXPECT_EQ(mr->memory_resource(), &r);

    loom::result<loom::event_queue> eq = loom::make_unexpected(loom::errc::other);
    t = measure(r, def.counted, [&] { eq = loom::event_queue::create(*fab, {}, &r); });
    ASSERT_TRUE(eq);
    EXPECT_GT(t.given, 0) << "event queue: its event buffer";
    EXPECT_TRUE(none_elsewhere(t));
}

TEST(SpecAllocators, using_the_objects_allocates_from_their_resource_or_not_at_all) {
    default_watch def;
    counting_resource r;
    auto info = tcp_info(r);
    ASSERT_TRUE(info);
    auto fab = loom::fabric::create(*info, &r);
    ASSERT_TRUE(fab);
    auto dom = loom::domain::create(*fab, *info, &r);
    ASSERT_TRUE(dom);
    auto cq = loom::completion_queue::create(*dom, {.size = 64}, &r);
    auto av = loom::address_vector::create(*dom, {}, &r);
    auto ep = loom::endpoint::create(*dom, *info, &r);
    ASSERT_TRUE(cq && av && ep);

    // Binding, enabling, naming, inserting, looking up — loom's own part allocates from the
    // given resource or not at all.
    ASSERT_TRUE(ep->bind_cq(*cq, loom::cq_bind::transmit | loom::cq_bind::recv));
    ASSERT_TRUE(ep->bind_av(*av));
    ASSERT_TRUE(ep->enable());
    loom::result<loom::address> me = loom::make_unexpected(loom::errc::other);
    auto t = measure(r, def.counted, [&] { me = ep->name(); });
    ASSERT_TRUE(me);
    EXPECT_TRUE(none_elsewhere(t)) << "a socket address is named without the heap";
    loom::result<loom::peer_addr> peer = loom::make_unexpected(loom::errc::other);
    t = measure(r, def.counted, [&] { peer = av->insert(*me); });
    ASSERT_TRUE(peer);
    EXPECT_GT(t.given, 0) << "the inserted handle's record";
    EXPECT_TRUE(none_elsewhere(t));
    t = measure(r, def.counted, [&] { EXPECT_EQ(av->lookup(*peer).value(), *me); });
    EXPECT_TRUE(none_elsewhere(t));

    // Moves keep the resource: the state goes with the object.
    loom::address_vector moved;
    moved = std::move(*av);
    EXPECT_EQ(moved.memory_resource(), &r);
    EXPECT_TRUE(moved.contains(*peer));
    loom::completion_queue moved_cq;
    moved_cq = std::move(*cq);
    EXPECT_EQ(moved_cq.memory_resource(), &r);
}

TEST(SpecAllocators, the_spec_example_runs_with_a_monotonic_arena) {
    // The example's objects on sockets (its deferred work needs triggered operations); the arena
    // is on the heap here, the example's 1 MiB stack array aside.
    using namespace loom;
    auto buffer = std::make_unique<std::array<std::byte, 1024 * 1024>>();
    std::pmr::monotonic_buffer_resource arena{buffer->data(), buffer->size()};
    auto info = query_fabric({.provider = "sockets"}, &arena).value();
    auto fab = fabric::create(info, &arena).value();
    auto dom = domain::create(fab, info, &arena).value();
    auto cq = completion_queue::create(dom, {.size = 256}, &arena).value();
    auto av = address_vector::create(dom, {}, &arena).value();
    auto cntr = counter::create(dom, {}, &arena).value();
    auto ep = endpoint::create(dom, info, &arena).value();
    std::array<std::byte, 4096> data{};
    auto mr =
        memory_region::register_memory(dom, std::span{data}, mr_access_flags::send | mr_access_flags::recv, &arena)
            .value();
    auto completed = counter::create(dom, {.wait_obj = true}, &arena).value();
    auto deferred =
        trigger::deferred_work::create_counter_add(dom, trigger::threshold_condition{&cntr, 1}, completed, 1, &arena)
            .value();
    cntr.add(1).value();
    completed.wait().value();
    deferred.mark_completed();
    EXPECT_EQ(completed.read(), 1u);
    for (auto* res : {cq.memory_resource(), av.memory_resource(), cntr.memory_resource(), ep.memory_resource(),
                      mr.memory_resource()})
        EXPECT_EQ(res, &arena);
}

// The factories that took no resource before: the registration cache, scalable-endpoint
// contexts, and mapped raw keys.
TEST(SpecAllocators, caches_contexts_and_mappings_take_a_resource_too) {
    default_watch def;
    counting_resource r;
    core_test::loop_stack s;
    ASSERT_NO_FATAL_FAILURE(core_test::must_open_loop("sockets", {.caps = loom::capability::msg}, s));

    std::optional<loom::mr_cache> cache;
    auto t = measure(r, def.counted, [&] { cache.emplace(loom::make_mr_cache(s.domain, {}, &r)); });
    EXPECT_GE(t.given, 3) << "the cache's state, its index roots and its first hint table";
    EXPECT_TRUE(none_elsewhere(t));
    EXPECT_EQ(cache->memory_resource(), &r);
    std::vector<std::byte> buffer(3 * 4096);
    t = measure(r, def.counted, [&] {
        auto h = cache->lookup(std::span{buffer}, loom::mr_access_flags::send);
        ASSERT_TRUE(h) << core_test::outcome(h.error());
    });
    EXPECT_GT(t.given, 0) << "the new entry";
    EXPECT_TRUE(none_elsewhere(t));
    const long live_with_entries = r.live_bytes;
    t = measure(r, def.counted, [&] { (void)cache->lookup(std::span{buffer}, loom::mr_access_flags::send); });
    EXPECT_EQ(t.given, 0) << "a hit allocates nothing";
    EXPECT_EQ(t.global, 0);
    cache.reset();
    EXPECT_LT(r.live_bytes, live_with_entries) << "the cache returned its storage";

    auto info = loom_test::find_info("sockets", loom::capability::msg);
    ASSERT_TRUE(info);
    loom::result<loom::scalable_endpoint> sep = loom::make_unexpected(loom::errc::other);
    t = measure(r, def.counted, [&] {
        sep = loom::scalable_endpoint::create(s.domain, *info, {.tx_contexts = 2, .rx_contexts = 2}, &r);
    });
    ASSERT_TRUE(sep) << core_test::outcome(sep.error());
    EXPECT_GT(t.given, 0) << "the per-context open counts";
    EXPECT_EQ(t.by_default, 0);
    EXPECT_EQ(sep->memory_resource(), &r);
    counting_resource for_context;
    auto tx = sep->tx_context(0, {}, &for_context);
    ASSERT_TRUE(tx) << core_test::outcome(tx.error());
    EXPECT_EQ(tx->memory_resource(), &for_context);
    auto rx = sep->rx_context(1);
    ASSERT_TRUE(rx);
    EXPECT_EQ(rx->memory_resource(), &r) << "without one, a context records its endpoint's";

    // No provider here maps raw keys: the refusal comes before any allocation.
    const loom::raw_remote_memory raw{.base_addr = 0x1000, .addr = 0x1000, .length = 64, .key = {1, 2, 3, 4}};
    t = measure(r, def.counted, [&] {
        EXPECT_EQ(core_test::outcome(loom::mapped_remote_memory::map(s.domain, raw, &r).error()), "not_supported");
    });
    EXPECT_EQ(t.given, 0);
    EXPECT_EQ(t.by_default, 0);
    EXPECT_EQ(loom::mapped_remote_memory{}.memory_resource(), std::pmr::get_default_resource());
}
