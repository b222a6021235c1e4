// What the sender front end promises beyond moving data, over in-process loopbacks: a receive
// on an endpoint whose receive defaults carry FI_MULTI_RECV is refused before posting, and
// poll_completions counts what it delivered.
#include "harness.hpp"
#include "sender_receiver.hpp"

#include <loom/execution.hpp>

#include <gtest/gtest.h>

#include <array>
#include <chrono>

using namespace loom_test;
namespace ex = loom::execution;

namespace {

TEST(SenderChecks, a_receive_inheriting_multi_receive_is_refused_before_posting) {
    auto st = open_multi_recv_default_stack();
    if (!st) GTEST_SKIP() << "no tcp;ofi_rxm with multi-receive here: " << st.error().message();
    auto& ep = st->ep;
    auto& cq = st->cq;
    ASSERT_TRUE(ep.rx_op_flags().any(loom::op_flag::multi_recv)) << "the receive defaults keep the flag";
    std::array<std::byte, 64> in{};
    recorded<std::size_t> rec;
    auto op = ex::connect(loom::async(ep).recv_from(in, nullptr, loom::fabric_addrs::unspecified, &cq),
                          recording_receiver<std::size_t>{&rec});
    ex::start(op);
    ASSERT_EQ(rec.how.load(), completion_kind::error) << "refused at start, before any poll";
    EXPECT_EQ(rec.error, loom::make_error_code(loom::errc::not_supported));
    EXPECT_EQ(cq.registry()->size(), 0u) << "nothing was registered for the provider to complete";
}

TEST(SenderChecks, poll_completions_counts_what_it_delivered) {
    auto st = open_stack("tcp", loom::capability::msg | loom::capability::tagged);
    ASSERT_TRUE(st) << st.error().message();
    const auto self = st->av.insert(st->ep.name().value()).value();
    std::array<std::byte, 8> out{}, in{};
    out.fill(std::byte{0x42});
    auto messages = loom::async(st->ep);
    recorded<std::size_t> received;
    recorded<> sent;
    auto r = ex::connect(messages.recv_from(in, nullptr, loom::fabric_addrs::unspecified, &st->cq),
                         recording_receiver<std::size_t>{&received});
    auto s = ex::connect(messages.send_to(out, nullptr, self, &st->cq), recording_receiver<>{&sent});
    ex::start(r);
    ex::start(s);
    std::size_t delivered = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (delivered < 2 && std::chrono::steady_clock::now() < deadline) {
        auto p = ex::poll_completions(st->cq);
        ASSERT_FALSE(p.unhandled);
        delivered += p.completed;
    }
    EXPECT_EQ(delivered, 2u);
    EXPECT_EQ(ex::poll_completions(st->cq).completed, 0u) << "nothing more to deliver";
    ASSERT_EQ(received.how.load(), completion_kind::value);
    EXPECT_EQ(*received.value, 8u);
    EXPECT_EQ(sent.how.load(), completion_kind::value);
    EXPECT_EQ(in, out);
}

}  // namespace
