// The sender sections of the API description, as written there (std::println aside): over a
// loopback RDM endpoint, where what needs a connected endpoint reports its refusal through the
// sender's error channel, and over a connected MSG pair (sockets), where those move data.
#include "core_connection_support.hpp"
#include "core_support.hpp"

#include <loom/execution.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

namespace {

using core_test::loop_options;
using core_test::loop_stack;

/// Names the channel a sender completed on.
struct channel_receiver {
    using receiver_concept = loom::execution::receiver_t;
    std::string* how;
    template <class... Vs>
    void set_value(Vs&&...) && noexcept {
        *how = "value";
    }
    void set_error(std::error_code ec) && noexcept { *how = "error:" + core_test::outcome(ec); }
    void set_error(std::exception_ptr) && noexcept { *how = "exception"; }
    void set_stopped() && noexcept { *how = "stopped"; }
};

/// Drives `s` to completion through poll_completions; which channel it completed on.
template <class S>
auto run(S&& s, loom::completion_queue& cq) -> std::string {
    using receiver = channel_receiver;
    std::string how;
    auto op = loom::execution::connect(static_cast<S&&>(s), receiver{&how});
    loom::execution::start(op);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (how.empty() && std::chrono::steady_clock::now() < deadline) {
        auto r = loom::execution::poll_completions(cq);
        if (r.unhandled) return "unhandled";
    }
    return how.empty() ? "timeout" : how;
}

void process(std::array<std::byte, 4096>& b) { b[0] = std::byte{1}; }

/// The spec's P2300 example as written there, on `ep` and `cq`; `check` runs its senders
/// (pipeline, both, send_then_recv, with_error) and sees what `both` and `send_then_recv`
/// receive into (buf2).
template <class Check>
void p2300_example(loom::endpoint& ep, loom::completion_queue& cq, Check check) {
    using namespace loom;

    // Create sender factories for operations
    auto msg_ops = loom::async(ep);      // For messaging
    auto rma_ops = loom::rma_async(ep);  // For RMA

    // Create senders for async operations
    std::array<std::byte, 4096> buffer{};
    auto send_op = msg_ops.send(buffer, &cq);
    auto recv_op = msg_ops.recv(buffer, &cq);

    // Compose with P2300 algorithms
    auto pipeline = send_op | loom::execution::then([] { std::printf("sent!\n"); });

    // Parallel operations with when_all
    std::array<std::byte, 4096> buf1{}, buf2{};
    auto both = loom::execution::when_all(msg_ops.send(buf1, &cq), msg_ops.recv(buf2, &cq));

    // Chain operations with let_value
    auto send_then_recv = msg_ops.send(buf1, &cq) | loom::execution::let_value([&] { return msg_ops.recv(buf2, &cq); });

    // Error handling
    auto with_error = msg_ops.send(buffer, &cq) | loom::execution::upon_error([](std::error_code ec) {
                          std::fprintf(stderr, "Error: %s\n", ec.message().c_str());
                          return -1;
                      });

    check(pipeline, both, send_then_recv, with_error, buf2);
}

TEST(SpecExamples, p2300_integration) {
    loop_stack s;
    ASSERT_NO_FATAL_FAILURE(core_test::must_open_loop("tcp", loop_options{}, s));
    auto& cq = s.cq;
    // An RDM endpoint has no connected destination: the sends are refused before submission.
    p2300_example(s.ep, cq, [&](auto& pipeline, auto&, auto& send_then_recv, auto& with_error, auto&) {
        EXPECT_EQ(run(pipeline, cq), "error:invalid_argument");
        EXPECT_EQ(run(send_then_recv, cq), "error:invalid_argument");
        EXPECT_EQ(run(with_error, cq), "value");
    });
}

/// The far side of a connected pair: receives `messages` messages of up to 4096 bytes, answering
/// those whose index is in `answer` with 4096 bytes of `reply`, on its own thread.
class answering_peer {
public:
    answering_peer(core_test::connection& far, int messages, std::vector<int> answer, std::byte reply)
        : thread_([this, &far, messages, answer = std::move(answer), reply] {
              std::array<std::byte, 4096> in{}, out{};
              out.fill(reply);
              for (int i = 0; i < messages; ++i) {
                  loom::request_context rctx, sctx;
                  if (!far.ep.recv(std::span{in}, &rctx) || !core_test::completes(far.cq, &rctx)) return;
                  received_.fetch_add(1);
                  if (std::ranges::find(answer, i) == answer.end()) continue;
                  if (!far.ep.send(std::span<const std::byte>{out}, &sctx) || !core_test::completes(far.cq, &sctx))
                      return;
              }
          }) {}
    answering_peer(const answering_peer&) = delete;
    auto operator=(const answering_peer&) -> answering_peer& = delete;
    ~answering_peer() {
        if (thread_.joinable()) thread_.join();
    }
    /// Waits for the thread; how many messages it received.
    auto finish() -> int {
        thread_.join();
        thread_ = std::thread{};
        return received_.load();
    }

private:
    std::atomic<int> received_{0};
    std::thread thread_;
};

TEST(SpecExamples, p2300_integration_over_a_connected_endpoint) {
    core_test::connected_pair pair;
    ASSERT_EQ(pair.open("sockets", loom::capability::msg), "");
    auto& cq = pair.client.cq;
    // pipeline, both, send_then_recv and with_error each send one message; both and
    // send_then_recv each receive one.
    answering_peer peer(pair.server, 4, {1, 2}, std::byte{0x77});
    std::array<std::byte, 4096> reply{};
    reply.fill(std::byte{0x77});
    p2300_example(pair.client.ep, cq,
                  [&](auto& pipeline, auto& both, auto& send_then_recv, auto& with_error, auto& buf2) {
                      ::testing::internal::CaptureStdout();
                      EXPECT_EQ(run(pipeline, cq), "value");
                      EXPECT_EQ(::testing::internal::GetCapturedStdout(), "sent!\n");
                      EXPECT_EQ(run(both, cq), "value");
                      EXPECT_EQ(buf2, reply);
                      buf2.fill(std::byte{0});
                      EXPECT_EQ(run(send_then_recv, cq), "value");
                      EXPECT_EQ(buf2, reply);
                      EXPECT_EQ(run(with_error, cq), "value");
                  });
    EXPECT_EQ(peer.finish(), 4);
}

TEST(SpecExamples, messaging_senders_with_peers_and_descriptors) {
    loop_stack s;
    ASSERT_NO_FATAL_FAILURE(core_test::must_open_loop("tcp", loop_options{}, s));
    auto& cq = s.cq;
    std::array<std::byte, 256> out{}, in{};
    out.fill(std::byte{0x5a});
    auto local_mr = loom::memory_region::register_memory(s.domain, std::span{out},
                                                         loom::mr_access_flags::send | loom::mr_access_flags::recv)
                        .value();
    const loom::fabric_addr peer = s.self;
    const loom::fabric_addr source = loom::fabric_addrs::unspecified;
    std::span<std::byte> buffer{out};

    auto messages = loom::async(s.ep);
    auto send = messages.send_to(buffer, local_mr.descriptor(), peer, &cq);
    auto recv = messages.recv_from(buffer, local_mr.descriptor(), source, &cq);
    auto tagged_send = messages.tagged_send_to(buffer, local_mr.descriptor(), peer, 42, &cq);
    auto tagged_recv = messages.tagged_recv_from(buffer, local_mr.descriptor(), source, 42, 0, &cq);

    // The tagged pair over the loopback endpoint: receive into `in` what `out` holds.
    auto in_mr = loom::memory_region::register_memory(s.domain, std::span{in}, loom::mr_access_flags::recv).value();
    auto into_in = messages.tagged_recv_from(std::span{in}, in_mr.descriptor(), source, 42, 0, &cq);
    EXPECT_EQ(run(loom::execution::when_all(into_in, tagged_send), cq), "value");
    EXPECT_EQ(in, out);
}

/// The spec's example of the original RMA sender forms as written there, on `ep` and `cq`
/// with the target at `remote` (`key`); `check` runs its senders (read_op, write_op, rmw,
/// atomic_op).
template <class Check>
void original_rma_forms(loom::endpoint& ep, loom::completion_queue& cq, std::array<std::byte, 4096>& buffer,
                        std::uint64_t remote, std::uint64_t key, const loom::memory_region& result_mr, Check check) {
    std::span<std::byte> local_buffer{buffer};
    const std::uint64_t remote_addr = remote, addr = remote;

    auto rma_ops = loom::rma_async(ep);

    // RMA read sender
    auto read_op = rma_ops.read(local_buffer, remote_addr, key, &cq);

    // RMA write sender
    auto write_op = rma_ops.write(local_buffer, remote_addr, key, &cq);

    // Read-modify-write pattern
    auto rmw = rma_ops.read(buffer, addr, key, &cq) | loom::execution::then([&](std::size_t bytes) {
                   // Modify buffer
                   process(buffer);
                   return buffer;
               }) |
               loom::execution::let_value([&](auto& buf) { return rma_ops.write(buf, addr, key, &cq); });

    // Atomic operations
    auto atomic_op = rma_ops.fetch_add<std::uint64_t>(addr, 1, key, result_mr, &cq) |
                     loom::execution::then([](std::uint64_t old_val) { return old_val + 1; });

    check(read_op, write_op, rmw, atomic_op);
}

TEST(SpecExamples, rma_senders) {
    loop_stack s;
    loop_options o;
    o.caps = loom::capability::msg | loom::capability::rma;
    ASSERT_NO_FATAL_FAILURE(core_test::must_open_loop("tcp", o, s));
    auto& cq = s.cq;
    std::array<std::byte, 4096> target{}, buffer{};
    target.fill(std::byte{7});
    auto target_mr =
        loom::memory_region::register_memory(s.domain, std::span{target},
                                             loom::mr_access_flags::remote_read | loom::mr_access_flags::remote_write)
            .value();
    auto local_mr = loom::memory_region::register_memory(s.domain, std::span{buffer},
                                                         loom::mr_access_flags::read | loom::mr_access_flags::write)
                        .value();
    const auto remote = loom::remote_memory::from_mr(target_mr).value();
    const loom::fabric_addr peer = s.self;

    auto operations = loom::rma_async(s.ep);
    auto read = operations.read_from(buffer, local_mr, peer, remote, &cq);
    auto write = operations.write_to(buffer, local_mr, peer, remote, &cq);
    EXPECT_EQ(run(read, cq), "value");
    EXPECT_EQ(buffer, target);
    buffer.fill(std::byte{9});
    EXPECT_EQ(run(write, cq), "value");
    EXPECT_EQ(buffer, target);

    // The original forms: no peer, no descriptor (refused on this RDM endpoint).
    auto result_mr = std::move(local_mr);
    original_rma_forms(s.ep, cq, buffer, remote.addr, remote.key, result_mr,
                       [&](auto& read_op, auto&, auto& rmw, auto& atomic_op) {
                           EXPECT_EQ(run(read_op, cq), "error:invalid_argument");
                           EXPECT_EQ(run(rmw, cq), "error:invalid_argument");
                           // tcp has no atomics (and this RDM endpoint no connected peer).
                           EXPECT_EQ(run(atomic_op, cq), "error:invalid_argument");
                       });
}

TEST(SpecExamples, rma_senders_original_forms_over_a_connected_endpoint) {
    core_test::connected_pair pair;
    ASSERT_EQ(pair.open("sockets", loom::capability::msg | loom::capability::rma | loom::capability::atomic |
                                       loom::capability::remote_read | loom::capability::remote_write),
              "");
    auto& cq = pair.client.cq;
    alignas(8) std::array<std::byte, 4096> target{};
    target.fill(std::byte{7});
    auto target_mr =
        loom::memory_region::register_memory(pair.server.dom, std::span{target},
                                             loom::mr_access_flags::remote_read | loom::mr_access_flags::remote_write)
            .value();
    const auto remote = loom::remote_memory::from_mr(target_mr).value();
    std::array<std::byte, 4096> buffer{};
    alignas(8) std::array<std::byte, 8> fetched{};
    auto result_mr = loom::memory_region::register_memory(pair.client.dom, std::span{fetched},
                                                          loom::mr_access_flags::read | loom::mr_access_flags::write)
                         .value();
    auto word = [](std::span<const std::byte> b) {
        std::uint64_t v = 0;
        std::memcpy(&v, b.data(), sizeof v);
        return v;
    };
    original_rma_forms(pair.client.ep, cq, buffer, remote.addr, remote.key, result_mr,
                       [&](auto& read_op, auto& write_op, auto& rmw, auto& atomic_op) {
                           EXPECT_EQ(run(read_op, cq), "value");
                           EXPECT_EQ(buffer, target);
                           buffer.fill(std::byte{9});
                           EXPECT_EQ(run(write_op, cq), "value");
                           EXPECT_EQ(target[4095], std::byte{9});
                           EXPECT_EQ(run(rmw, cq), "value");
                           EXPECT_EQ(target[0], std::byte{1}) << "process() marks the first byte, written back";
                           EXPECT_EQ(target[1], std::byte{9});
                           // fetch_add at addr: the first eight bytes of the target, as a counter.
                           const std::uint64_t before = word(target);
                           EXPECT_EQ(run(atomic_op, cq), "value");
                           EXPECT_EQ(word(fetched), before);
                           EXPECT_EQ(word(target), before + 1);
                       });
    // The older compare-and-swap form beside them: the counter becomes 7, the value before
    // comes back.
    const std::uint64_t before = word(target);
    auto cas_op =
        loom::rma_async(pair.client.ep).compare_swap<std::uint64_t>(remote.addr, before, 7, remote.key, result_mr, &cq);
    EXPECT_EQ(run(cas_op, cq), "value");
    EXPECT_EQ(word(fetched), before);
    EXPECT_EQ(word(target), 7u);
}

TEST(SpecExamples, borrowed_atomic_senders) {
    loop_stack s;
    loop_options o;
    o.caps = loom::capability::msg | loom::capability::atomic;
    const auto err = core_test::open_loop("shm", o, s);
    if (!err.empty()) GTEST_SKIP() << "shm without atomics here: " << err;
    auto& cq = s.cq;
    alignas(8) std::array<std::uint64_t, 4> cells{100, 0, 0, 0};
    auto cells_mr =
        loom::memory_region::register_memory(s.domain, std::as_writable_bytes(std::span{cells}),
                                             loom::mr_access_flags::remote_read | loom::mr_access_flags::remote_write |
                                                 loom::mr_access_flags::read | loom::mr_access_flags::write)
            .value();
    const auto remote = loom::remote_memory::from_mr(cells_mr).value().subregion(0, 8).value();
    const loom::fabric_addr peer = s.self;
    // The example's objects: registered operands and result (one registration, offsets apart).
    alignas(8) std::array<std::uint64_t, 4> locals{5, 0, 105, 1};
    auto locals_mr = loom::memory_region::register_memory(s.domain, std::as_writable_bytes(std::span{locals}),
                                                          loom::mr_access_flags::read | loom::mr_access_flags::write)
                         .value();
    const std::uint64_t& operand = locals[0];
    std::uint64_t& result = locals[1];
    const std::uint64_t& expected = locals[2];
    const std::uint64_t& replacement = locals[3];
    auto& operand_mr = locals_mr;
    auto& result_mr = locals_mr;
    auto& expected_mr = locals_mr;
    auto& replacement_mr = locals_mr;

    auto operations = loom::rma_async(s.ep);
    auto add = operations.fetch_add_to(operand, &operand_mr, result, &result_mr, peer, remote, &cq);
    auto cas = operations.compare_swap_to(expected, &expected_mr, replacement, &replacement_mr, result, &result_mr,
                                          peer, remote, &cq);
    EXPECT_EQ(run(add, cq), "value");
    EXPECT_EQ(result, 100u);
    EXPECT_EQ(run(cas, cq), "value");
    EXPECT_EQ(result, 105u);
    EXPECT_EQ(cells[0], 1u);
}

TEST(SpecExamples, scheduler_and_backend_detection) {
    loop_stack s;
    ASSERT_NO_FATAL_FAILURE(core_test::must_open_loop("tcp", loop_options{}, s));
    auto some_sender = loom::execution::just(5);
    auto ep_done = s.ep.close();  // the queue moves below; nothing may stay bound to it
    ASSERT_TRUE(ep_done);
    auto cq = std::move(s.cq);

    // Create a scheduler from a completion queue
    auto cq_ptr = std::make_shared<loom::completion_queue>(std::move(cq));
    loom::scheduler sched{cq_ptr};

    // Run work inline when started
    auto work = loom::execution::schedule(sched) | loom::execution::then([] { return 42; });

    // starts_on uses the same inline scheduling behavior
    auto on_cq = loom::execution::starts_on(sched, some_sender);

    EXPECT_EQ(std::get<0>(*loom::execution::sync_wait(std::move(work))), 42);
    EXPECT_EQ(std::get<0>(*loom::execution::sync_wait(std::move(on_cq))), 5);

    if constexpr (loom::execution::has_execution_backend) {
        std::printf("Using: %s\n", loom::execution::execution_backend_name);
    }
    auto sender1 = loom::execution::just(1);
    auto sender2 = loom::execution::just(2);
    if constexpr (loom::execution::features::has_when_all) {
        auto both = loom::execution::when_all(sender1, sender2);
    }
    auto v = loom::execution::sync_wait(loom::execution::when_all(sender1, sender2));  // what `both` completes with
    EXPECT_EQ(std::get<1>(*v), 2);
}

}  // namespace
