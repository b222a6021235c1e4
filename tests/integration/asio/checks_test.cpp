// What the Asio front end promises beyond moving data, each over an in-process loopback: checks
// before submission (an endpoint never enabled, an inherited FI_MULTI_RECV, a registration of
// another domain), progress after a handler throws, a handler that ends its own queue, a queue
// with a wait descriptor polled on the timer when asked to, a restart before the io_context
// runs, what poll_once() counts, how long a polling pass runs the operations its handlers
// start, and sends the provider refuses as busy reaching it in the order they were started (a
// blocking send included) and resubmitted where the queue is polled through its descriptor.
#include "asio_progress.hpp"
#include "busy_sends.hpp"
#include "guard_page_resource.hpp"
#include "harness.hpp"

#include <loom/asio.hpp>

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

using namespace loom_test;
using namespace std::chrono_literals;

namespace {

constexpr auto caps = loom::capability::msg | loom::capability::tagged;

/// A loopback stack whose endpoint is its own peer, with registered send and receive buffers
/// (registered where they lie: the object stays put).
struct loopback {
    stack st;
    std::optional<loom::peer_addr> self;
    std::array<std::byte, 64> out{}, in{};
    loom::memory_region out_mr, in_mr;

    auto open(const std::string& provider, const loom::cq_attr& cq = {.size = 64}) -> bool {
        auto s = open_stack(provider, caps, 0, cq);
        if (!s) return false;
        st = std::move(*s);
        auto me = st.ep.name();
        if (!me) return false;
        auto p = st.av.insert(*me);
        auto o = loom::memory_region::register_memory(st.domain, std::span{out}, loom::mr_access_flags::send);
        auto i = loom::memory_region::register_memory(st.domain, std::span{in}, loom::mr_access_flags::recv);
        if (!p || !o || !i) return false;
        self.emplace(*p);
        out_mr = std::move(*o);
        in_mr = std::move(*i);
        return true;
    }
    [[nodiscard]] auto to_send(std::size_t n) -> loom::asio::const_registered_buffer {
        return {::asio::buffer(out.data(), n), &out_mr};
    }
    [[nodiscard]] auto to_receive(std::size_t n) -> loom::asio::mutable_registered_buffer {
        return {::asio::buffer(in.data(), n), &in_mr};
    }
};

TEST(AsioChecks, an_endpoint_never_enabled_refuses_through_the_handler_and_registers_nothing) {
    loopback lb;
    ASSERT_TRUE(lb.open("shm"));
    auto idle = loom::endpoint::create(lb.st.domain, lb.st.info);  // bound to nothing, not enabled
    ASSERT_TRUE(idle) << idle.error().message();
    ::asio::io_context ioc;
    loom::asio::endpoint ep(ioc, std::move(*idle), lb.st.cq, lb.st.cq);
    auto& service = loom::asio::fabric_service::use(ioc);
    ASSERT_TRUE(service.register_cq(lb.st.cq));
    service.start();
    std::optional<std::error_code> sent, received;
    ep.async_send_to(lb.to_send(8), *lb.self, [&sent](std::error_code ec, std::size_t) { sent = ec; });
    ep.async_receive(lb.to_receive(8), [&received](std::error_code ec, std::size_t) { received = ec; });
    EXPECT_FALSE(sent || received) << "a handler ran inside its initiating call";
    ASSERT_TRUE(run_until(ioc, [&] { return sent && received; }, 10s));
    EXPECT_EQ(*sent, loom::make_error_code(loom::errc::bad_state));
    EXPECT_EQ(*received, loom::make_error_code(loom::errc::bad_state));
    EXPECT_EQ(lb.st.cq.registry()->size(), 0u);
    EXPECT_EQ(ep.outstanding_operations(), 0u);
}

TEST(AsioChecks, an_io_context_used_from_one_thread_counts_operations_with_plain_stores) {
    const auto one_thread = [](int hint) {
        ::asio::io_context ioc(hint);
        return loom::asio::fabric_service::use(ioc).one_thread();
    };
    EXPECT_TRUE(one_thread(ASIO_CONCURRENCY_HINT_UNSAFE));
    EXPECT_TRUE(one_thread(ASIO_CONCURRENCY_HINT_UNSAFE_IO));
    EXPECT_FALSE(one_thread(ASIO_CONCURRENCY_HINT_DEFAULT));
    EXPECT_FALSE(one_thread(1));  // one thread runs it; others may still start operations

    // The counts still count: an exchange in flight, then none; a receive left outstanding when
    // its endpoint goes keeps the endpoint state until it ends (LeakSanitizer in the sanitizer
    // build checks that it is freed then).
    loopback lb;
    ASSERT_TRUE(lb.open("shm"));
    ::asio::io_context ioc(ASIO_CONCURRENCY_HINT_UNSAFE);
    auto& service = loom::asio::fabric_service::use(ioc);
    ASSERT_TRUE(service.register_cq(lb.st.cq));
    service.start();
    auto ep = std::make_optional<loom::asio::endpoint>(ioc, std::move(lb.st.ep), lb.st.cq, lb.st.cq);
    std::optional<std::error_code> sent, received, abandoned;
    ep->async_receive(lb.to_receive(8), [&received](std::error_code ec, std::size_t) { received = ec; });
    ep->async_send_to(lb.to_send(8), *lb.self, [&sent](std::error_code ec, std::size_t) { sent = ec; });
    EXPECT_EQ(service.outstanding_operations(), 2u);
    EXPECT_EQ(ep->outstanding_operations(), 2u);
    ASSERT_TRUE(run_until(ioc, [&] { return sent && received; }, 10s));
    EXPECT_FALSE(*sent) << sent->message();
    EXPECT_FALSE(*received) << received->message();
    EXPECT_EQ(service.outstanding_operations(), 0u);
    EXPECT_EQ(ep->outstanding_operations(), 0u);

    ep->async_receive(lb.to_receive(8), [&abandoned](std::error_code ec, std::size_t) { abandoned = ec; });
    EXPECT_EQ(service.outstanding_operations(), 1u);
    ep.reset();  // cancels the receive; its native endpoint stays open until it ends
    ASSERT_TRUE(run_until(ioc, [&] { return abandoned.has_value(); }, 10s));
    EXPECT_EQ(*abandoned, ::asio::error::operation_aborted) << abandoned->message();
    EXPECT_EQ(service.outstanding_operations(), 0u);
}

TEST(AsioChecks, an_inherited_multi_receive_flag_is_refused_before_posting) {
    auto st = open_multi_recv_default_stack();
    if (!st) GTEST_SKIP() << "no tcp;ofi_rxm with multi-receive here: " << st.error().message();
    ASSERT_TRUE(st->ep.rx_op_flags().any(loom::op_flag::multi_recv)) << "the receive defaults keep the flag";
    ::asio::io_context ioc;
    loom::asio::endpoint ep(ioc, std::move(st->ep), st->cq, st->cq);
    auto& service = loom::asio::fabric_service::use(ioc);
    ASSERT_TRUE(service.register_cq(st->cq));
    service.start();
    std::array<std::byte, 64> in{};
    std::optional<std::error_code> got;
    ep.async_receive(::asio::buffer(in), [&got](std::error_code ec, std::size_t) { got = ec; });
    ASSERT_TRUE(run_until(ioc, [&] { return got.has_value(); }, 10s));
    EXPECT_EQ(*got, loom::make_error_code(loom::errc::not_supported));
    EXPECT_EQ(service.outstanding_operations(), 0u);
    EXPECT_EQ(st->cq.registry()->size(), 0u) << "nothing was registered for the provider to complete";
    EXPECT_FALSE(service.deregister_cq(st->cq));
}

TEST(AsioChecks, a_registration_of_another_domain_is_refused_before_submission) {
    auto a = std::make_unique<loopback>();
    auto b = std::make_unique<loopback>();
    ASSERT_TRUE(a->open("tcp") && b->open("tcp"));
    ::asio::io_context ioc;
    loom::asio::endpoint ep(ioc, std::move(a->st.ep), a->st.cq, a->st.cq);
    auto& service = loom::asio::fabric_service::use(ioc);
    ASSERT_TRUE(service.register_cq(a->st.cq));
    service.start();
    // b's registrations on a's endpoint: usable_with says no.
    const loom::asio::const_registered_buffer foreign{::asio::buffer(b->out.data(), 8), &b->out_mr};
    ASSERT_FALSE(b->out_mr.usable_with(ep.native()));
    std::optional<std::error_code> sent, received;
    ep.async_send_to(foreign, *a->self, [&sent](std::error_code ec, std::size_t) { sent = ec; });
    const loom::asio::mutable_registered_buffer foreign_in{::asio::buffer(b->in.data(), 8), &b->in_mr};
    ep.async_receive(foreign_in, [&received](std::error_code ec, std::size_t) { received = ec; });
    ASSERT_TRUE(run_until(ioc, [&] { return sent && received; }, 10s));
    EXPECT_EQ(*sent, loom::make_error_code(loom::errc::invalid_argument));
    EXPECT_EQ(*received, loom::make_error_code(loom::errc::invalid_argument));
    EXPECT_EQ(a->st.cq.registry()->size(), 0u);
    EXPECT_FALSE(service.deregister_cq(a->st.cq));
}

TEST(AsioChecks, progress_goes_on_after_a_handler_throws) {
    auto l = std::make_unique<loopback>();
    ASSERT_TRUE(l->open("tcp"));
    ::asio::io_context ioc;
    loom::asio::endpoint ep(ioc, std::move(l->st.ep), l->st.cq, l->st.cq);
    auto& service = loom::asio::fabric_service::use(ioc);
    ASSERT_TRUE(service.register_cq(l->st.cq));
    service.start();
    int finished = 0;
    // Tag 1 completes first and its handler throws; tag 2's receive is still to be progressed.
    ep.async_tagged_receive(l->to_receive(8), 1, 0,
                            [](std::error_code, std::size_t) { throw std::runtime_error("handler failed"); });
    std::array<std::byte, 8> second{};
    ep.async_tagged_receive(::asio::buffer(second), 2, 0,
                            [&finished](std::error_code ec, std::size_t n) { finished += !ec && n == 8 ? 1 : -100; });
    ep.async_tagged_send_to(l->to_send(8), *l->self, 1,
                            [&finished](std::error_code ec, std::size_t) { finished += ec ? -100 : 1; });
    bool thrown = false;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!thrown && std::chrono::steady_clock::now() < deadline) {
        try {
            ioc.restart();
            ioc.run_for(10ms);
        } catch (const std::runtime_error&) {
            thrown = true;
        }
    }
    ASSERT_TRUE(thrown) << "the handler's exception comes out of run()";
    ep.async_tagged_send_to(l->to_send(8), *l->self, 2,
                            [&finished](std::error_code ec, std::size_t) { finished += ec ? -100 : 1; });
    EXPECT_TRUE(run_until(ioc, [&] { return finished >= 3 || finished < 0; }, 10s));
    EXPECT_EQ(finished, 3) << "both sends and the second receive completed after the throw";
    EXPECT_EQ(service.outstanding_operations(), 0u);
    EXPECT_FALSE(service.deregister_cq(l->st.cq));
}

/// Runs a send to itself (alone, or with a receive) on a stack whose memory, the queue's
/// registry included, loses all access when freed; the handler that completes last closes the
/// endpoint, deregisters the queue and destroys the stack. The pass that ran it must touch none
/// of it. A lone send's handler runs where its completion is delivered; a pair's, after the
/// read that delivered both.
void end_the_queue_from_a_handler(const loom::cq_attr& attr, loom::asio::fabric_service::progress_kind progress,
                                  bool with_receive) {
    loom::test::guard_page_resource pool;
    const auto info = find_info("tcp", caps);
    ASSERT_TRUE(info) << info.error().message();
    auto made = open_stack_of(*info, 0, attr, &pool);
    ASSERT_TRUE(made) << made.error().message();
    auto* st = new (pool.allocate(sizeof(stack), alignof(stack))) stack(std::move(*made));
    const auto self = st->av.insert(st->ep.name().value()).value();
    ::asio::io_context ioc;
    std::optional<loom::asio::endpoint> ep(std::in_place, ioc, std::move(st->ep), st->cq, st->cq);
    auto& service = loom::asio::fabric_service::use(ioc);
    ASSERT_TRUE(service.register_cq(st->cq));
    ASSERT_EQ(service.progress_of(st->cq), progress);
    service.start();
    const int expected = with_receive ? 2 : 1;
    int finished = 0;
    bool ended = false;
    auto end_on_last = [&](std::error_code ec, std::size_t) {
        finished += ec ? -100 : 1;
        if (finished != expected) return;
        ep->close();
        ep.reset();
        EXPECT_FALSE(service.deregister_cq(st->cq));
        st->~stack();
        pool.deallocate(st, sizeof(stack), alignof(stack));
        ended = true;
    };
    std::array<std::byte, 8> out{}, in{};
    if (with_receive) ep->async_receive(::asio::buffer(in), end_on_last);
    ep->async_send_to(::asio::buffer(out), self, end_on_last);  // alone: an unexpected message
    EXPECT_TRUE(run_until(ioc, [&] { return ended || finished < 0; }, 10s));
    EXPECT_TRUE(ended);
    ioc.restart();
    ioc.run_for(20ms);  // passes after the end: nothing of the queue is read
    EXPECT_EQ(service.outstanding_operations(), 0u);
    EXPECT_GE(pool.freed(), 2u) << "the registry and the stack went back to the resource";
}

TEST(AsioChecks, a_handler_may_end_its_queue_polled_on_the_timer) {
    for (const bool with_receive : {false, true}) {
        SCOPED_TRACE(with_receive ? "a send and a receive" : "a send alone");
        end_the_queue_from_a_handler({.size = 64}, loom::asio::fabric_service::progress_kind::timer, with_receive);
    }
}

TEST(AsioChecks, a_handler_may_end_its_queue_polled_through_its_descriptor) {
    for (const bool with_receive : {false, true}) {
        SCOPED_TRACE(with_receive ? "a send and a receive" : "a send alone");
        end_the_queue_from_a_handler({.size = 64, .wait_obj = true},
                                     loom::asio::fabric_service::progress_kind::descriptor, with_receive);
    }
}

TEST(AsioChecks, a_queue_with_a_wait_descriptor_is_polled_on_the_timer_when_asked) {
    auto l = std::make_unique<loopback>();
    ASSERT_TRUE(l->open("tcp", {.size = 64, .wait_obj = true}));
    ASSERT_EQ(l->st.cq.wait_object_type(), loom::wait_object::fd) << "tcp gives a waitable queue an fd";
    ::asio::io_context ioc;
    loom::asio::endpoint ep(ioc, std::move(l->st.ep), l->st.cq, l->st.cq);
    auto& service = loom::asio::fabric_service::use(ioc);
    ASSERT_TRUE(service.register_cq(l->st.cq, {.use_fd_polling = false, .poll_interval = 50us}));
    EXPECT_EQ(service.progress_of(l->st.cq), loom::asio::fabric_service::progress_kind::timer);
    service.start();
    int finished = 0;
    auto count = [&finished](std::error_code ec, std::size_t) { finished += ec ? -100 : 1; };
    ep.async_receive(l->to_receive(8), count);
    ep.async_send_to(l->to_send(8), *l->self, count);
    EXPECT_TRUE(run_until(ioc, [&] { return finished >= 2 || finished < 0; }, 10s));
    EXPECT_EQ(finished, 2);
    EXPECT_FALSE(service.deregister_cq(l->st.cq));
}

TEST(AsioChecks, a_restart_before_the_io_context_runs_keeps_waiting_on_the_descriptor) {
    auto a = std::make_unique<loopback>();
    auto b = std::make_unique<loopback>();
    ASSERT_TRUE(a->open("tcp", {.size = 64, .wait_obj = true}) && b->open("tcp"));
    auto a_name = a->st.ep.name();
    ASSERT_TRUE(a_name);
    auto to_a = b->st.av.insert(*a_name);
    ASSERT_TRUE(to_a);
    ::asio::io_context ioc;
    loom::asio::endpoint ep(ioc, std::move(a->st.ep), a->st.cq, a->st.cq);
    auto& service = loom::asio::fabric_service::use(ioc);
    ASSERT_TRUE(service.register_cq(a->st.cq));
    ASSERT_EQ(service.progress_of(a->st.cq), loom::asio::fabric_service::progress_kind::descriptor);
    service.start();
    std::optional<std::error_code> got;
    ep.async_receive(a->to_receive(8), [&got](std::error_code ec, std::size_t) { got = ec; });
    ioc.run_for(20ms);  // idle: waiting on the queue's descriptor
    // stop() cancels that wait; start() comes before the io_context has run the cancellation.
    service.stop();
    service.start();
    // Another endpoint sends, progressed by its own thread: only the descriptor's wait can
    // bring the message to the receive.
    std::atomic<bool> sent{false};
    std::thread sender([&] {
        loom::request_context ctx;
        std::array<loom::completion_event, 4> events;
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while (!b->st.ep.send(std::span<const std::byte>{b->out}.first(8), *to_a, b->out_mr.descriptor(), &ctx))
            if (std::chrono::steady_clock::now() > deadline) return;
        while (!sent && std::chrono::steady_clock::now() < deadline) {
            auto n = b->st.cq.read(events);
            sent = n && *n > 0;
        }
    });
    const bool received = run_until(ioc, [&] { return got.has_value(); }, 10s);
    sender.join();
    ASSERT_TRUE(received) << "no wait was armed again";
    EXPECT_FALSE(*got) << got->message();
    EXPECT_TRUE(sent);
    EXPECT_FALSE(service.deregister_cq(a->st.cq));
}

TEST(AsioChecks, poll_once_counts_the_operations_it_completed) {
    auto l = std::make_unique<loopback>();
    ASSERT_TRUE(l->open("tcp"));
    ::asio::io_context ioc;
    loom::asio::endpoint ep(ioc, std::move(l->st.ep), l->st.cq, l->st.cq);
    auto& service = loom::asio::fabric_service::use(ioc);
    ASSERT_TRUE(service.register_cq(l->st.cq));  // not started: only poll_once reads
    int handled = 0;
    auto count = [&handled](std::error_code ec, std::size_t) { handled += ec ? -100 : 1; };
    ep.async_receive(l->to_receive(8), count);
    ep.async_send_to(l->to_send(8), *l->self, count);
    std::size_t delivered = 0;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (delivered < 2 && std::chrono::steady_clock::now() < deadline) delivered += service.poll_once();
    EXPECT_EQ(delivered, 2u);
    EXPECT_EQ(service.poll_once(), 0u) << "nothing more to deliver";
    ioc.restart();
    ioc.poll();  // the handlers, posted to the io_context this thread was not running
    EXPECT_EQ(handled, 2);
    EXPECT_FALSE(service.deregister_cq(l->st.cq));
}

/// Send-and-receive iterations to the endpoint itself, each started by the handlers of the one
/// before (as an Asio program or a coroutine chains its operations), until `limit` or stop.
struct loopback_chain {
    loom::asio::endpoint& ep;
    loopback& l;
    int limit;
    int iterations{0};
    int pending{0};
    bool stop{false};
    bool failed{false};

    struct handler {
        loopback_chain* c;
        void operator()(std::error_code ec, std::size_t) const { c->completed(ec); }
    };
    void start() {
        pending = 2;
        ep.async_tagged_receive(l.to_receive(8), 1, 0, handler{this});
        ep.async_tagged_send_to(l.to_send(8), *l.self, 1, handler{this});
    }
    void completed(std::error_code ec) {
        failed = failed || ec;
        if (--pending != 0) return;
        ++iterations;
        if (!failed && !stop && iterations < limit) start();
    }
    [[nodiscard]] auto finished() const -> bool { return pending == 0; }
};

/// A loopback on `provider` behind an Asio endpoint, its queue served by the io_context's
/// fabric service (started).
struct served_loopback {
    std::unique_ptr<loopback> l = std::make_unique<loopback>();
    ::asio::io_context ioc;
    std::optional<loom::asio::endpoint> ep;

    auto open(const std::string& provider, const loom::cq_attr& cq = {.size = 64}) -> bool {
        if (!l->open(provider, cq)) return false;
        ep.emplace(ioc, std::move(l->st.ep), l->st.cq, l->st.cq);
        if (!service().register_cq(l->st.cq)) return false;
        service().start();
        return true;
    }
    auto service() -> loom::asio::fabric_service& { return loom::asio::fabric_service::use(ioc); }
};

TEST(AsioChecks, a_polling_pass_reads_on_for_the_operations_its_handlers_start) {
    served_loopback s;
    if (!s.open("shm")) GTEST_SKIP() << "no shm here";
    auto& service = s.service();
    ASSERT_EQ(service.progress_of(s.l->st.cq), loom::asio::fabric_service::progress_kind::timer);
    constexpr int iterations = 256;
    loopback_chain chain{*s.ep, *s.l, iterations};
    chain.start();
    int turns = 0;
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!chain.finished() && std::chrono::steady_clock::now() < deadline) turns += s.ioc.run_one() != 0 ? 1 : 0;
    ASSERT_TRUE(chain.finished());
    EXPECT_FALSE(chain.failed);
    EXPECT_EQ(chain.iterations, iterations);
    // One io_context turn per pass, and a pass goes on while its handlers keep operations
    // outstanding: far fewer turns than iterations (one pass per completion would be >= 256).
    EXPECT_LE(turns, iterations / 4);
    EXPECT_EQ(service.outstanding_operations(), 0u);
    EXPECT_FALSE(service.deregister_cq(s.l->st.cq));
}

TEST(AsioChecks, a_chain_of_handlers_leaves_other_handlers_their_turn) {
    served_loopback s;
    if (!s.open("shm")) GTEST_SKIP() << "no shm here";
    auto& service = s.service();
    // Without a bound on a pass, the chain would run until its own limit before the posted
    // handler; with it, the handler runs after at most the reads of the pass under way and
    // the next (each iteration needs at least one read).
    constexpr int limit = 100'000;
    loopback_chain chain{*s.ep, *s.l, limit};
    int at_post = -1;
    chain.start();
    ::asio::post(s.ioc, [&] {
        at_post = chain.iterations;
        chain.stop = true;
    });
    ASSERT_TRUE(run_until(s.ioc, [&] { return chain.finished() && at_post >= 0; }, 30s));
    EXPECT_FALSE(chain.failed);
    EXPECT_LE(at_post, 2 * static_cast<int>(loom::asio::fabric_service::spin_reads));
    EXPECT_LT(chain.iterations, limit);
    EXPECT_EQ(service.outstanding_operations(), 0u);
    EXPECT_FALSE(service.deregister_cq(s.l->st.cq));
}

TEST(AsioChecks, sends_refused_as_busy_reach_the_provider_in_the_order_started) {
    served_loopback s;
    if (!s.open("shm")) GTEST_SKIP() << "no shm here";
    auto& ep = *s.ep;
    std::array<std::byte, 8> first{}, second{}, in0{}, in1{};
    first.fill(std::byte{0xa1});
    second.fill(std::byte{0xb2});
    int finished = 0;
    auto count = [&finished](std::error_code ec, std::size_t) { finished += ec ? -100 : 1; };
    ep.async_tagged_receive(::asio::buffer(in0), 7, count);
    ep.async_tagged_receive(::asio::buffer(in1), 7, count);
    {
        const busy_sends busy(ep.native().native(), 1);
        ep.async_tagged_send_to(::asio::buffer(first), *s.l->self, 7, count);   // refused: deferred
        ep.async_tagged_send_to(::asio::buffer(second), *s.l->self, 7, count);  // must not pass it
        EXPECT_EQ(busy_sends::calls(), 1) << "the second send went to the provider ahead of the first";
        EXPECT_EQ(s.l->st.cq.registry()->deferred_count(), 2u);
        ASSERT_TRUE(run_until(s.ioc, [&] { return finished >= 4 || finished < 0; }, 10s));
    }
    EXPECT_EQ(finished, 4);
    EXPECT_EQ(in0, first) << "the first receive got the second message";
    EXPECT_EQ(in1, second);
    EXPECT_FALSE(s.service().deregister_cq(s.l->st.cq));
}

TEST(AsioChecks, a_send_refused_as_busy_is_resubmitted_where_the_queue_is_polled_through_its_descriptor) {
    served_loopback s;
    ASSERT_TRUE(s.open("tcp", {.size = 64, .wait_obj = true}));
    ASSERT_EQ(s.service().progress_of(s.l->st.cq), loom::asio::fabric_service::progress_kind::descriptor);
    auto& ep = *s.ep;
    std::array<std::byte, 8> out{}, in{};
    int finished = 0;
    auto count = [&finished](std::error_code ec, std::size_t) { finished += ec ? -100 : 1; };
    ep.async_receive(::asio::buffer(in), count);  // from idle: the service waits on the descriptor
    {
        // Nothing will signal the descriptor: only a read of the queue resubmits the send.
        const busy_sends busy(ep.native().native(), 1);
        ep.async_send_to(::asio::buffer(out), *s.l->self, count);
        EXPECT_EQ(s.l->st.cq.registry()->deferred_count(), 1u);
        EXPECT_TRUE(run_until(s.ioc, [&] { return finished >= 2 || finished < 0; }, 10s));
    }
    EXPECT_EQ(finished, 2);
    EXPECT_FALSE(s.service().deregister_cq(s.l->st.cq));
}

TEST(AsioChecks, handlers_left_by_a_throwing_handler_run_without_waiting_for_the_next_read) {
    auto l = std::make_unique<loopback>();
    if (!l->open("shm")) GTEST_SKIP() << "no shm here";
    ::asio::io_context ioc;
    loom::asio::endpoint ep(ioc, std::move(l->st.ep), l->st.cq, l->st.cq);
    auto& service = loom::asio::fabric_service::use(ioc);
    ASSERT_TRUE(service.register_cq(l->st.cq, {.use_fd_polling = false, .poll_interval = std::chrono::hours(1)}));
    service.start();  // the timer's next read is an hour away: only poll_once reads
    std::array<std::byte, 8> out{}, in{};
    auto read_until_delivered = [&service](int want) {
        for (int got = 0, i = 0; got < want && i < 1000000; ++i) got += static_cast<int>(service.poll_once());
    };
    int warm = 0;  // a first exchange: shm refuses the first send to a peer while it connects
    ep.async_receive(::asio::buffer(in), [&warm](std::error_code, std::size_t) { ++warm; });
    ep.async_send_to(::asio::buffer(out), *l->self, [&warm](std::error_code, std::size_t) { ++warm; });
    ::asio::post(ioc, [&] { read_until_delivered(2); });
    ASSERT_TRUE(run_until(ioc, [&] { return warm == 2; }, 5s));
    int ran = 0;
    auto throwing = [&ran](std::error_code, std::size_t) {
        ++ran;
        throw std::runtime_error("handler failed");
    };
    ep.async_receive(::asio::buffer(in), throwing);
    ep.async_send_to(::asio::buffer(out), *l->self, throwing);
    // shm completes the send as it is posted and the receive in the read's progress: one read
    // returns both, and the first handler's exception ends the pass before the second runs.
    ::asio::post(ioc, [&] { read_until_delivered(1); });
    int thrown = 0;
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (ran < 2 && std::chrono::steady_clock::now() < deadline) {
        try {
            ioc.restart();
            ioc.run_for(10ms);
        } catch (const std::runtime_error&) {
            ++thrown;
        }
    }
    EXPECT_EQ(ran, 2) << "the second handler waited for the next read";
    EXPECT_EQ(thrown, 2) << "each exception leaves run()";
    EXPECT_EQ(service.outstanding_operations(), 0u);
    EXPECT_FALSE(service.deregister_cq(l->st.cq));
}

TEST(AsioChecks, a_blocking_send_waits_behind_sends_refused_as_busy) {
    served_loopback s;
    if (!s.open("shm")) GTEST_SKIP() << "no shm here";
    auto& ep = *s.ep;
    ep.set_default_peer(*s.l->self);
    std::array<std::byte, 8> first{}, second{}, in0{}, in1{};
    first.fill(std::byte{0xa1});
    second.fill(std::byte{0xb2});
    int finished = 0;
    auto count = [&finished](std::error_code ec, std::size_t) { finished += ec ? -100 : 1; };
    ep.async_receive(::asio::buffer(in0), count);
    ep.async_receive(::asio::buffer(in1), count);
    {
        const busy_sends busy(ep.native().native(), 1);
        ep.async_send(::asio::buffer(first), count);  // refused: deferred
        std::error_code ec;
        EXPECT_EQ(ep.send(::asio::buffer(second), ec), 8u);  // submits the deferred send first
        EXPECT_FALSE(ec) << ec.message();
        ASSERT_TRUE(run_until(s.ioc, [&] { return finished >= 3 || finished < 0; }, 10s));
    }
    EXPECT_EQ(finished, 3);
    EXPECT_EQ(in0, first) << "the first receive got the blocking send's message";
    EXPECT_EQ(in1, second);
    EXPECT_FALSE(s.service().deregister_cq(s.l->st.cq));
}

}  // namespace
