// Fabric senders against a loom-test-peer process over tcp, shm and tcp;ofi_rxm: messages,
// tagged messages out of order, RMA, cancellation, truncation, checks before submission,
// unhandled events, and when_all/then/sync_wait with a progress thread. (The atomic senders
// against a peer process: atomic_senders_test.cpp; the older atomic forms, which address a
// connected peer, run in spec_examples_test.cpp over sockets.)
#include "core_support.hpp"
#include "peer_process.hpp"
#include "sender_receiver.hpp"

#include <loom/execution.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

using namespace loom_test;
using namespace std::chrono_literals;
namespace ex = loom::execution;

namespace {

constexpr auto caps = loom::capability::msg | loom::capability::tagged | loom::capability::rma;

class senders : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        auto st = open_stack(GetParam(), caps);
        ASSERT_TRUE(st) << GetParam() << ": " << st.error().message();
        local_ = std::make_unique<stack>(std::move(*st));
        bufs_ = std::make_unique<local_buffers>(local_->domain);
        peer_ = std::make_unique<peer_process>(GetParam(), caps, *local_);
        ASSERT_TRUE(peer_->ok()) << peer_->error();
    }
    void TearDown() override {
        peer_.reset();
        bufs_.reset();
        local_.reset();
    }
    /// Polls the local queue until `done` (every event must have an owner).
    template <class Done>
    auto progress_until(Done done) -> bool {
        const auto deadline = std::chrono::steady_clock::now() + 30s;
        while (!done()) {
            auto r = ex::poll_completions(local_->cq);
            if (r.unhandled) {
                ADD_FAILURE() << "unhandled event: " << r.unhandled->error.message();
                return false;
            }
            if (std::chrono::steady_clock::now() > deadline) return false;
        }
        return true;
    }
    auto peer() const -> loom::fabric_addr { return peer_->address(); }
    auto cq() -> loom::completion_queue* { return &local_->cq; }

    std::unique_ptr<stack> local_;
    std::unique_ptr<local_buffers> bufs_;
    std::unique_ptr<peer_process> peer_;
};

TEST_P(senders, send_to_delivers_the_payload_to_the_peer) {
    constexpr std::size_t size = 3000;
    fill_pattern(bufs_->send(size), 5);
    ASSERT_EQ(peer_->run({.code = op::post_recv, .k = kind::msg, .slot = 0, .peer = -1, .size = size}).status, 0);
    recorded<> rec;
    auto op = ex::connect(loom::async(local_->ep).send_to(bufs_->send(size), bufs_->send_mr.descriptor(), peer(), cq()),
                          recording_receiver<>{&rec});
    ex::start(op);
    auto got = peer_->run({.code = op::wait_recv, .slot = 0, .size = size, .seed = 5});  // dispatches meanwhile
    EXPECT_EQ(got.status, 0) << got.text;
    EXPECT_EQ(got.value, 0u) << "first wrong byte at " << got.value - 1;
    ASSERT_TRUE(progress_until([&] { return rec.done(); }));
    EXPECT_EQ(rec.how, completion_kind::value);
    EXPECT_EQ(local_->cq.registry()->size(), 0u);
}

TEST_P(senders, recv_from_reports_the_message_length) {
    constexpr std::size_t size = 1500;
    recorded<std::size_t> rec;
    auto op = ex::connect(
        loom::async(local_->ep)
            .recv_from(bufs_->recv(8192), bufs_->recv_mr.descriptor(), loom::fabric_addrs::unspecified, cq()),
        recording_receiver<std::size_t>{&rec});
    ex::start(op);
    ASSERT_EQ(peer_->run({.code = op::send, .k = kind::msg, .peer = 0, .size = size, .seed = 9}).status, 0);
    ASSERT_TRUE(progress_until([&] { return rec.done(); }));
    ASSERT_EQ(rec.how, completion_kind::value) << rec.error.message();
    EXPECT_EQ(*rec.value, size);
    EXPECT_FALSE(check_pattern(bufs_->recv(size), 9));
}

TEST_P(senders, tagged_receives_in_flight_complete_out_of_order_by_tag) {
    constexpr int n = 8;
    constexpr std::size_t slot = 512;
    std::array<recorded<std::size_t>, n> recs;
    using op_type = ex::connect_result_t<loom::message_senders::receive_sender, recording_receiver<std::size_t>>;
    std::vector<std::unique_ptr<std::optional<op_type>>> ops;
    auto messages = loom::async(local_->ep);
    for (int i = 0; i < n; ++i) {
        auto& o = ops.emplace_back(std::make_unique<std::optional<op_type>>());
        auto area = bufs_->recv(max_message).subspan(i * slot, slot);
        o->emplace(ex::detail::emplace_from{[&] {
            return ex::connect(messages.tagged_recv_from(area, bufs_->recv_mr.descriptor(),
                                                         loom::fabric_addrs::unspecified, 0x700 + i, 0, cq()),
                               recording_receiver<std::size_t>{&recs[i]});
        }});
        ex::start(**o);
    }
    EXPECT_EQ(local_->cq.registry()->size(), static_cast<std::size_t>(n));
    for (int i = n - 1; i >= 0; --i)  // the peer sends the last tag first
        ASSERT_EQ(peer_
                      ->run({.code = op::send,
                             .k = kind::tagged,
                             .peer = 0,
                             .size = 100u + i,
                             .seed = 40u + i,
                             .tag = 0x700u + i})
                      .status,
                  0);
    ASSERT_TRUE(
        progress_until([&] { return std::all_of(recs.begin(), recs.end(), [](auto& r) { return r.done(); }); }));
    for (int i = 0; i < n; ++i) {
        ASSERT_EQ(recs[i].how, completion_kind::value) << i;
        EXPECT_EQ(*recs[i].value, 100u + i);
        EXPECT_FALSE(check_pattern(bufs_->recv(max_message).subspan(i * slot, 100u + i), 40u + i)) << i;
    }
}

TEST_P(senders, a_stop_request_cancels_a_posted_receive) {
    recorded<std::size_t> rec;
    auto op = ex::connect(loom::async(local_->ep).tagged_recv(bufs_->recv(64), 0xdead, 0, cq()),
                          recording_receiver<std::size_t>{&rec});
    ex::start(op);
    EXPECT_EQ(local_->cq.registry()->size(), 1u);
    rec.stop.request_stop();
    ASSERT_TRUE(progress_until([&] { return rec.done(); }));
    EXPECT_EQ(rec.how, completion_kind::stopped) << rec.error.message();
    EXPECT_EQ(rec.calls, 1);
}

TEST_P(senders, a_message_longer_than_the_buffer_is_a_truncation_error) {
    recorded<std::size_t> rec;
    auto op = ex::connect(loom::async(local_->ep).recv(bufs_->recv(64), cq()), recording_receiver<std::size_t>{&rec});
    ex::start(op);
    ASSERT_EQ(peer_->run({.code = op::send, .k = kind::msg, .peer = 0, .size = 4096, .seed = 1}).status, 0);
    ASSERT_TRUE(progress_until([&] { return rec.done(); }));
    EXPECT_EQ(rec.how, completion_kind::error);
    EXPECT_EQ(rec.error, loom::make_error_code(loom::errc::truncated)) << rec.error.message();
}

TEST_P(senders, rma_read_from_and_write_to_move_the_bytes) {
    auto exposed = peer_->run({.code = op::expose, .size = 8192, .seed = 3});
    ASSERT_EQ(exposed.status, 0) << exposed.text;
    const loom::remote_memory remote{exposed.value, exposed.tag, static_cast<std::size_t>(exposed.bytes)};
    std::vector<std::byte> area(8192);
    auto mr = loom::memory_region::register_memory(local_->domain, std::span{area},
                                                   loom::mr_access_flags::read | loom::mr_access_flags::write);
    ASSERT_TRUE(mr) << mr.error().message();
    auto one_sided = loom::rma_async(local_->ep);

    recorded<std::size_t> read;
    auto r = ex::connect(one_sided.read_from(std::span{area}, *mr, peer(), remote, cq()),
                         recording_receiver<std::size_t>{&read});
    ex::start(r);
    ASSERT_TRUE(progress_until([&] { return read.done(); }));
    ASSERT_EQ(read.how, completion_kind::value) << read.error.message();
    EXPECT_EQ(*read.value, area.size());
    EXPECT_FALSE(check_pattern(area, 3));

    fill_pattern(std::span{area}.first(2048), 11);
    recorded<std::size_t> wrote;
    auto w = ex::connect(one_sided.write_to(std::span{area}.first(2048), *mr, peer(), remote, cq()),
                         recording_receiver<std::size_t>{&wrote});
    ex::start(w);
    ASSERT_TRUE(progress_until([&] { return wrote.done(); }));
    ASSERT_EQ(wrote.how, completion_kind::value) << wrote.error.message();
    EXPECT_EQ(peer_->run({.code = op::verify, .size = 2048, .seed = 11, .tag = 0}).value, 0u);

    // Longer than the remote region: refused before submission.
    std::vector<std::byte> big(remote.length + 1);
    auto big_mr = loom::memory_region::register_memory(local_->domain, std::span{big}, loom::mr_access_flags::read);
    ASSERT_TRUE(big_mr);
    recorded<std::size_t> refused;
    auto b = ex::connect(one_sided.read_from(std::span{big}, *big_mr, peer(), remote, cq()),
                         recording_receiver<std::size_t>{&refused});
    ex::start(b);
    EXPECT_EQ(refused.how, completion_kind::error);
    EXPECT_EQ(refused.error, loom::make_error_code(loom::errc::invalid_argument)) << refused.error.message();
    EXPECT_EQ(local_->cq.registry()->size(), 0u);
}

TEST_P(senders, a_registration_of_another_domain_is_refused_before_submission) {
    auto other = open_stack(GetParam(), caps);
    ASSERT_TRUE(other);
    std::vector<std::byte> area(256);
    auto foreign = loom::memory_region::register_memory(other->domain, std::span{area}, loom::mr_access_flags::read);
    ASSERT_TRUE(foreign);
    recorded<std::size_t> rec;
    auto op = ex::connect(loom::rma_async(local_->ep).write_to(std::span{area}, *foreign, peer(), {0, 0, 256}, cq()),
                          recording_receiver<std::size_t>{&rec});
    ex::start(op);
    EXPECT_EQ(rec.how, completion_kind::error);
    EXPECT_EQ(rec.error, loom::make_error_code(loom::errc::invalid_argument));
}

TEST_P(senders, a_core_operation_comes_back_as_the_unhandled_event) {
    ASSERT_EQ(peer_->run({.code = op::post_recv, .k = kind::msg, .slot = 0, .peer = -1, .size = 64}).status, 0);
    loom::request_context core_ctx;
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    for (;;) {  // the first send to a peer may find the connection not ready yet
        auto sent = local_->ep.send(bufs_->send(64), peer(), bufs_->send_mr.descriptor(), &core_ctx);
        if (sent) break;
        ASSERT_TRUE(loom::is_again(sent.error())) << sent.error().message();
        ASSERT_FALSE(ex::poll_completions(local_->cq).unhandled);
        ASSERT_LT(std::chrono::steady_clock::now(), deadline);
    }
    std::optional<loom::completion_event> unhandled;
    while (!unhandled && std::chrono::steady_clock::now() < deadline)
        unhandled = ex::poll_completions(local_->cq).unhandled;
    ASSERT_TRUE(unhandled);
    EXPECT_EQ(unhandled->context, &core_ctx);
}

TEST_P(senders, when_all_then_and_sync_wait_with_a_progress_thread) {
    constexpr std::size_t size = 256;  // eager on every provider: the peer's send completes alone
    ASSERT_EQ(
        peer_->run({.code = op::post_recv, .k = kind::tagged, .slot = 0, .peer = -1, .size = size, .tag = 1}).status,
        0);
    ASSERT_EQ(peer_->run({.code = op::send, .k = kind::tagged, .peer = 0, .size = size, .seed = 8, .tag = 2}).status,
              0);
    fill_pattern(bufs_->send(size), 6);
    std::atomic<bool> stop{false};
    std::atomic<int> unhandled{0};
    std::thread progress([&] {
        while (!stop.load(std::memory_order_acquire))
            if (ex::poll_completions(local_->cq).unhandled) unhandled.fetch_add(1);
    });
    auto messages = loom::async(local_->ep);
    auto both = ex::when_all(messages.tagged_send_to(bufs_->send(size), bufs_->send_mr.descriptor(), peer(), 1, cq()),
                             messages.tagged_recv_from(bufs_->recv(size), bufs_->recv_mr.descriptor(),
                                                       loom::fabric_addrs::unspecified, 2, 0, cq())) |
                ex::then([](std::size_t received) { return received * 2; });
    auto result = ex::sync_wait(std::move(both));
    stop.store(true, std::memory_order_release);
    progress.join();
    ASSERT_TRUE(result);
    EXPECT_EQ(std::get<0>(*result), 2 * size);
    EXPECT_EQ(unhandled.load(), 0);
    EXPECT_FALSE(check_pattern(bufs_->recv(size), 8));
    auto got = peer_->run({.code = op::wait_recv, .slot = 0, .size = size, .seed = 6});
    EXPECT_EQ(got.value, 0u);
}

TEST_P(senders, a_context_only_queue_is_refused_for_receives) {
    auto other = open_stack(GetParam(), caps);
    ASSERT_TRUE(other);
    auto ctx_cq = loom::completion_queue::create(other->domain, {.format = loom::cq_format::context});
    ASSERT_TRUE(ctx_cq);
    recorded<std::size_t> rec;
    auto op =
        ex::connect(loom::async(other->ep).recv(bufs_->recv(64), &*ctx_cq), recording_receiver<std::size_t>{&rec});
    ex::start(op);
    EXPECT_EQ(rec.how, completion_kind::error);
    EXPECT_EQ(rec.error, loom::make_error_code(loom::errc::invalid_argument));
    recorded<std::size_t> none;
    auto op2 =
        ex::connect(loom::async(other->ep).recv(bufs_->recv(64), nullptr), recording_receiver<std::size_t>{&none});
    ex::start(op2);
    EXPECT_EQ(none.how, completion_kind::error);
}

// A domain whose threading model makes the application serialize every call (domain,
// completion) has a registry without a lock; operations complete through it as through any.
TEST_P(senders, a_serialized_domain_registers_without_a_lock_and_completes_the_same) {
    EXPECT_FALSE(local_->cq.registry()->serialized()) << "the fixture's domain is thread-safe";
    auto st = open_stack(GetParam(), caps, 0, {.size = 64}, loom::threading_mode::domain);
    if (!st) GTEST_SKIP() << GetParam() << " offers no FI_THREAD_DOMAIN domain: " << st.error().message();
    // A provider may answer with a model that asks less of the application (tcp;ofi_rxm stays
    // thread-safe): the registry follows the model the domain was opened with.
    const auto model = st->info.get_domain_attr()->threading;
    EXPECT_EQ(st->cq.registry()->serialized(), loom::serializes_queue_access(model)) << loom::to_string(model);
    if (GetParam() == "shm") {
        EXPECT_TRUE(st->cq.registry()->serialized()) << "shm honours FI_THREAD_DOMAIN";
    }
    local_buffers b(st->domain);
    auto self = st->av.insert(st->ep.name().value());
    ASSERT_TRUE(self) << self.error().message();
    constexpr std::size_t size = 700;
    auto messages = loom::async(st->ep);
    for (std::uint64_t round = 1; round <= 3; ++round) {  // a registration is reused after delivery
        fill_pattern(b.send(size), round);
        recorded<std::size_t> got;
        recorded<> sent;
        auto r = ex::connect(messages.tagged_recv_from(b.recv(size), b.recv_mr.descriptor(),
                                                       loom::fabric_addrs::unspecified, round, 0, &st->cq),
                             recording_receiver<std::size_t>{&got});
        auto w = ex::connect(messages.tagged_send_to(b.send(size), b.send_mr.descriptor(), *self, round, &st->cq),
                             recording_receiver<>{&sent});
        ex::start(r);
        ex::start(w);
        // Registered, or deferred where the provider was busy (shm's first send to a peer).
        EXPECT_EQ(st->cq.registry()->size() + st->cq.registry()->deferred_count(), 2u);
        const auto deadline = std::chrono::steady_clock::now() + 30s;
        while (!(got.done() && sent.done()) && std::chrono::steady_clock::now() < deadline)
            ASSERT_FALSE(ex::poll_completions(st->cq).unhandled);
        ASSERT_EQ(got.how, completion_kind::value) << got.error.message();
        ASSERT_EQ(sent.how, completion_kind::value) << sent.error.message();
        EXPECT_EQ(*got.value, size);
        EXPECT_FALSE(check_pattern(b.recv(size), round));
        EXPECT_EQ(st->cq.registry()->size(), 0u);
    }
}

INSTANTIATE_TEST_SUITE_P(providers, senders, ::testing::Values("tcp", "shm", "tcp;ofi_rxm"), core_test::param_name);

}  // namespace
