// In-process loopback through the msg:: helpers (fi_sendmsg / fi_recvmsg / fi_tsendmsg /
// fi_trecvmsg): scattered IOVs byte-exact, inherited and replaced operation flags, and the
// heap path of the inline IOV vector against the provider's IOV limits.
#include "core_support.hpp"

#include <loom/msg.hpp>

#include <gtest/gtest.h>

#include <array>
#include <numeric>
#include <vector>

using namespace core_test;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t msg_tag = 0x4200;

/// Splits `buf` at the given sizes (which must add up to buf.size()).
auto split(std::span<std::byte> buf, std::initializer_list<std::size_t> sizes) -> loom::msg::iov_array {
    loom::msg::iov_array iov;
    std::size_t at = 0;
    for (auto n : sizes) {
        iov.push_back(::iovec{buf.data() + at, n});
        at += n;
    }
    return iov;
}

class core_msg : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        ASSERT_NO_FATAL_FAILURE(must_open_loop(GetParam(), {}, s_));
        const auto lim = s_.ep.iov_limits();
        if (lim.tx < 3 || lim.rx < 3)
            GTEST_SKIP() << GetParam() << " iov limits tx " << lim.tx << " rx " << lim.rx << " below 3";
    }
    loop_stack s_;
};

/// One scattered send/receive through sendmsg/recvmsg with defaults policy D.
template <loom::operation_defaults D>
void scattered_roundtrip(loop_stack& s, std::uint64_t seed, loom::op_flag send_flags, loom::op_flag recv_flags,
                         bool with_data) {
    std::array<std::byte, 64> out{}, in{};
    loom_test::fill_pattern(out, seed);
    loom::request_context rctx, sctx;
    loom_test::progress prog(s.cq);
    loom::msg::receive_message<loom::request_context*> rm{.iov = split(in, {5, 17, 42}), .context = &rctx};
    loom::msg::send_message<loom::request_context*> sm{
        .iov = split(out, {20, 1, 43}), .addr = s.self, .context = &sctx, .data = with_data ? 0xD00Du : 0u};
    ASSERT_EQ(rm.iov.size(), 3u);
    ASSERT_TRUE(rm.iov.is_inline());
    ASSERT_EQ(outcome(loom::msg::recvmsg<D>(s.ep, rm, recv_flags)), "ok");
    ASSERT_EQ(outcome(prog.retry([&] { return loom::msg::sendmsg<D>(s.ep, sm, send_flags); }, 2s)), "ok");
    auto ev = completed(prog, &rctx);
    EXPECT_EQ(ev.bytes_transferred, out.size());
    EXPECT_TRUE(ev.flags.has(loom::op_flag::recv));
    if (with_data) {
        EXPECT_TRUE(ev.flags.has(loom::op_flag::remote_cq_data)) << loom::to_string(ev.flags);
        EXPECT_EQ(ev.data, 0xD00Du);
    }
    (void)completed(prog, &sctx);
    EXPECT_EQ(in, out);
    EXPECT_FALSE(loom_test::check_pattern(in, seed).has_value());
}

TEST_P(core_msg, sendmsg_recvmsg_three_iovs_replace) {
    ASSERT_NO_FATAL_FAILURE(scattered_roundtrip<loom::operation_defaults::replace>(s_, 1, loom::op_flag::completion,
                                                                                   loom::op_flag::completion, false));
    // No flags at all: the queue is bound without selective completion, so completions still come.
    ASSERT_NO_FATAL_FAILURE(scattered_roundtrip<loom::operation_defaults::replace>(s_, 2, {}, {}, false));
}

TEST_P(core_msg, sendmsg_recvmsg_three_iovs_inherit) {
    ASSERT_NO_FATAL_FAILURE(scattered_roundtrip<loom::operation_defaults::inherit>(s_, 3, {}, {}, false));
    ASSERT_NO_FATAL_FAILURE(scattered_roundtrip<loom::operation_defaults::inherit_without_more>(
        s_, 4, loom::op_flag::completion, {}, false));
}

TEST_P(core_msg, sendmsg_with_remote_cq_data) {
    const auto dattr = s_.info.get_domain_attr();
    ASSERT_TRUE(dattr.has_value());
    if (dattr->cq_data_size == 0) GTEST_SKIP() << "no remote CQ data";
    ASSERT_NO_FATAL_FAILURE(scattered_roundtrip<loom::operation_defaults::replace>(
        s_, 5, loom::op_flag::remote_cq_data | loom::op_flag::completion, loom::op_flag::completion, true));
}

TEST_P(core_msg, tagged_sendmsg_recvmsg_three_iovs) {
    for (int round = 0; round < 2; ++round) {
        std::array<std::byte, 64> out{}, in{};
        const std::uint64_t seed = 10 + round;
        loom_test::fill_pattern(out, seed);
        loom::request_context rctx, sctx;
        loom_test::progress prog(s_.cq);
        // Receive any tag 0x42?? (low byte ignored); send 0x42 | round.
        loom::msg::tagged_receive_message<loom::request_context*> rm{
            .iov = split(in, {30, 30, 4}), .tag = msg_tag, .ignore = 0xFF, .context = &rctx};
        loom::msg::tagged_send_message<loom::request_context*> sm{
            .iov = split(out, {1, 62, 1}), .addr = s_.self, .tag = msg_tag | (0x10u + round), .context = &sctx};
        if (round == 0) {
            ASSERT_EQ(outcome(loom::msg::tagged_recvmsg<loom::operation_defaults::replace>(s_.ep, rm,
                                                                                           loom::op_flag::completion)),
                      "ok");
            ASSERT_EQ(outcome(prog.retry(
                          [&] {
                              return loom::msg::tagged_sendmsg<loom::operation_defaults::replace>(
                                  s_.ep, sm, loom::op_flag::completion);
                          },
                          2s)),
                      "ok");
        } else {
            ASSERT_EQ(outcome(loom::msg::tagged_recvmsg<loom::operation_defaults::inherit>(s_.ep, rm)), "ok");
            ASSERT_EQ(outcome(prog.retry(
                          [&] { return loom::msg::tagged_sendmsg<loom::operation_defaults::inherit>(s_.ep, sm); }, 2s)),
                      "ok");
        }
        auto ev = completed(prog, &rctx);
        EXPECT_EQ(ev.bytes_transferred, out.size());
        EXPECT_EQ(ev.tag, msg_tag | (0x10u + round));
        EXPECT_TRUE(ev.flags.has(loom::op_flag::tagged)) << loom::to_string(ev.flags);
        (void)completed(prog, &sctx);
        EXPECT_EQ(in, out) << "round " << round;
    }
}

TEST_P(core_msg, seventeen_iovs_follow_the_provider_limits) {
    constexpr std::size_t n = 17;
    std::array<std::byte, 4 * n> out{}, in{};
    loom_test::fill_pattern(out, 17);
    loom::request_context rctx, sctx, trctx, tsctx;
    loom_test::progress prog(s_.cq);
    loom::msg::send_message<loom::request_context*> sm{.addr = s_.self, .context = &sctx};
    loom::msg::receive_message<loom::request_context*> rm{.context = &rctx};
    for (std::size_t i = 0; i < n; ++i) {
        sm.iov.push_back(::iovec{out.data() + 4 * i, 4});
        rm.iov.push_back(::iovec{in.data() + 4 * i, 4});
    }
    ASSERT_EQ(sm.iov.size(), n);
    ASSERT_FALSE(sm.iov.is_inline()) << "17 entries should live on the heap";
    ASSERT_FALSE(rm.iov.is_inline());
    // The copy keeps every entry (heap path of the copy constructor).
    const auto sm_copy = sm;
    ASSERT_EQ(sm_copy.iov.size(), n);
    EXPECT_EQ(sm_copy.iov[16].iov_base, sm.iov[16].iov_base);

    const auto lim = s_.ep.iov_limits();
    quirk(GetParam(), "iov limits tx " + std::to_string(lim.tx) + " rx " + std::to_string(lim.rx));
    loom::msg::tagged_send_message<loom::request_context*> tsm{
        .iov = sm.iov, .addr = s_.self, .tag = msg_tag, .context = &tsctx};
    loom::msg::tagged_receive_message<loom::request_context*> trm{.iov = rm.iov, .tag = msg_tag, .context = &trctx};
    if (n > lim.rx) {
        EXPECT_EQ(outcome(loom::msg::recvmsg(s_.ep, rm)), "invalid_argument");
        EXPECT_EQ(outcome(loom::msg::tagged_recvmsg(s_.ep, trm)), "invalid_argument");
    }
    if (n > lim.tx) {
        EXPECT_EQ(outcome(loom::msg::sendmsg(s_.ep, sm)), "invalid_argument");
        EXPECT_EQ(outcome(loom::msg::tagged_sendmsg(s_.ep, tsm)), "invalid_argument");
        EXPECT_FALSE(next_event(s_.cq, 20ms).has_value()) << "a rejected operation completed";
    }
    if (n <= lim.rx && n <= lim.tx) {
        ASSERT_EQ(outcome(loom::msg::recvmsg(s_.ep, rm)), "ok");
        ASSERT_EQ(outcome(prog.retry([&] { return loom::msg::sendmsg(s_.ep, sm); }, 2s)), "ok");
        auto ev = completed(prog, &rctx);
        EXPECT_EQ(ev.bytes_transferred, out.size());
        (void)completed(prog, &sctx);
        EXPECT_EQ(in, out);
    } else if (n <= lim.rx) {
        // Receive side accepts 17 entries: fill it from a single-buffer send.
        ASSERT_EQ(outcome(loom::msg::recvmsg(s_.ep, rm)), "ok");
        ASSERT_EQ(outcome(prog.retry([&] { return s_.ep.send(out, s_.self, nullptr, &sctx); }, 2s)), "ok");
        auto ev = completed(prog, &rctx);
        EXPECT_EQ(ev.bytes_transferred, out.size());
        (void)completed(prog, &sctx);
        EXPECT_EQ(in, out);
    }
}

TEST_P(core_msg, mismatched_descriptor_count_is_rejected) {
    std::array<std::byte, 12> buf{};
    loom::request_context ctx;
    loom::msg::send_message<loom::request_context*> sm{
        .iov = split(buf, {4, 4, 4}), .desc = {nullptr, nullptr}, .addr = s_.self, .context = &ctx};
    EXPECT_EQ(outcome(loom::msg::sendmsg(s_.ep, sm)), "invalid_argument");
    loom::msg::receive_message<loom::request_context*> rm{
        .iov = split(buf, {4, 4, 4}), .desc = {nullptr}, .context = &ctx};
    EXPECT_EQ(outcome(loom::msg::recvmsg(s_.ep, rm)), "invalid_argument");
    EXPECT_FALSE(next_event(s_.cq, 20ms).has_value());
}

INSTANTIATE_TEST_SUITE_P(providers, core_msg, ::testing::ValuesIn(providers()), param_name);

}  // namespace
