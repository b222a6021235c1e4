// Every RMA form moves exactly its local span's bytes when the remote region it names is
// larger: plain, explicit flags, inherited flags, vectored and deferred, writes and reads, on
// every provider here with RMA (loopback). The bytes around the target stay as they were, and
// the next operation still completes (with the whole region in the IOV, tcp hung there).
#include <loom/loom.hpp>

#include <gtest/gtest.h>

#include "core_support.hpp"

#include <array>
#include <functional>
#include <vector>

using namespace std::chrono_literals;
using core_test::outcome;

namespace {

constexpr std::size_t region = 64 * 1024, piece = 4 * 1024, at = 8 * 1024;
constexpr auto all_access = loom::mr_access_flags::send | loom::mr_access_flags::recv | loom::mr_access_flags::read |
                            loom::mr_access_flags::write | loom::mr_access_flags::remote_read |
                            loom::mr_access_flags::remote_write;

class RmaForms : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        core_test::loop_options o;
        o.caps = loom::capability::msg | loom::capability::tagged | loom::capability::rma;
        o.counter = true;  // deferred work completes through it
        o.counter_flags = loom::counter_bind::read | loom::counter_bind::write;
        const auto err = core_test::open_loop(GetParam(), o, s_);
        if (!err.empty()) GTEST_SKIP() << GetParam() << ": " << err;
        target_.assign(region, std::byte{0xee});
        local_.assign(3 * piece, std::byte{0x11});
        for (std::size_t i = 0; i < piece; ++i) local_[piece + i] = static_cast<std::byte>(i * 7 + 3);
        auto t = loom::memory_region::register_memory(s_.domain, std::span{target_}, all_access);
        ASSERT_TRUE(t) << outcome(t.error());
        target_mr_ = std::move(*t);
        auto l = loom::memory_region::register_memory(s_.domain, std::span{local_}, all_access);
        ASSERT_TRUE(l) << outcome(l.error());
        local_mr_ = std::move(*l);
        auto r = loom::remote_memory::from_mr(target_mr_);
        ASSERT_TRUE(r);
        whole_ = *r;
    }

    /// The 4 KiB in the middle of the local buffer.
    auto piece_span() -> std::span<std::byte> { return std::span{local_}.subspan(piece, piece); }
    /// The remote region from `at` to its end: much larger than the piece.
    auto larger() const -> loom::remote_memory { return whole_.offset_by(at).value(); }

    /// Submits (retrying while busy) and waits for the completion of `ctx`.
    void complete(const std::function<loom::void_result()>& submit, loom::request_context& ctx, const char* form) {
        loom_test::progress prog(s_.cq);
        ASSERT_EQ(outcome(prog.retry(submit, 2s)), "ok") << form;
        const auto ev = prog.wait_for(&ctx, 5s);
        ASSERT_TRUE(ev) << form << ": no completion";
        EXPECT_FALSE(ev->has_error()) << form << ": " << outcome(ev->error);
    }
    /// The target holds the piece at `at` and 0xee everywhere else; then it is reset.
    void expect_written(const char* form) {
        for (std::size_t i = 0; i < region; ++i) {
            const bool inside = i >= at && i < at + piece;
            const auto want = inside ? local_[piece + (i - at)] : std::byte{0xee};
            ASSERT_EQ(target_[i], want) << form << ": byte " << i;
        }
        std::ranges::fill(target_, std::byte{0xee});
    }
    /// The local piece holds target[at, at + piece), the rest of the local buffer is untouched;
    /// then the piece is reset.
    void expect_read(const char* form) {
        for (std::size_t i = 0; i < local_.size(); ++i) {
            const bool inside = i >= piece && i < 2 * piece;
            const auto want = inside ? target_[at + (i - piece)] : std::byte{0x11};
            ASSERT_EQ(local_[i], want) << form << ": local byte " << i;
        }
        std::ranges::fill(piece_span(), std::byte{0});
    }

    core_test::loop_stack s_;
    std::vector<std::byte> target_, local_;
    loom::memory_region target_mr_, local_mr_;
    loom::remote_memory whole_{};
};

}  // namespace

TEST_P(RmaForms, writes_move_only_the_local_span_into_a_larger_region) {
    loom::request_context ctx;
    const std::span<const std::byte> out = piece_span();
    auto& ep = s_.ep;
    const auto peer = s_.self;
    ASSERT_NO_FATAL_FAILURE(
        complete([&] { return loom::rma::write_to(ep, out, local_mr_, peer, larger(), &ctx); }, ctx, "plain"));
    ASSERT_NO_FATAL_FAILURE(expect_written("plain"));
    ASSERT_NO_FATAL_FAILURE(complete(
        [&] { return loom::rma::write_to(ep, out, local_mr_, peer, larger(), loom::op_flag::completion, &ctx); }, ctx,
        "flags"));
    ASSERT_NO_FATAL_FAILURE(expect_written("flags"));
    ASSERT_NO_FATAL_FAILURE(complete(
        [&] {
            return loom::rma::write_to<loom::operation_defaults::inherit>(ep, out, local_mr_, peer, larger(),
                                                                          loom::op_flag::completion, &ctx);
        },
        ctx, "inherit"));
    ASSERT_NO_FATAL_FAILURE(expect_written("inherit"));
    // Vectored: totals must be equal — the exact range moves, the larger one is refused.
    const ::iovec iov{const_cast<std::byte*>(out.data()), out.size()};
    void* desc = local_mr_.descriptor();
    const auto exact = larger().subregion(0, piece).value();
    ASSERT_NO_FATAL_FAILURE(complete(
        [&] { return loom::rma::writev_to(ep, {&iov, 1}, {&desc, 1}, peer, {&exact, 1}, &ctx); }, ctx, "vectored"));
    ASSERT_NO_FATAL_FAILURE(expect_written("vectored"));
    const auto big = larger();
    EXPECT_EQ(outcome(loom::rma::writev_to(ep, {&iov, 1}, {&desc, 1}, peer, {&big, 1}, &ctx)), "invalid_argument");
    // Deferred (triggered) work: the same rule; providers without triggered operations say so.
    auto trig = loom::counter::create(s_.domain);
    ASSERT_TRUE(trig);
    auto deferred =
        loom::trigger::deferred_work::create_write(s_.domain, ep, {&*trig, 1}, &s_.cntr, out, desc, peer, exact);
    if (!deferred) {
        EXPECT_EQ(outcome(deferred.error()), "not_supported");
    } else {
        EXPECT_EQ(outcome(loom::trigger::deferred_work::create_write(s_.domain, ep, {&*trig, 1}, &s_.cntr, out, desc,
                                                                     peer, big)),
                  "invalid_argument")
            << "deferred RMA needs equal totals";
        const auto before = s_.cntr.read();
        ASSERT_EQ(outcome(trig->add(1)), "ok");
        ASSERT_EQ(outcome(s_.cntr.wait(before + 1, 5000ms)), "ok");
        deferred->mark_completed();
        ASSERT_NO_FATAL_FAILURE(expect_written("deferred"));
    }
    // And the endpoint still works afterwards.
    ASSERT_NO_FATAL_FAILURE(
        complete([&] { return loom::rma::write_to(ep, out, local_mr_, peer, larger(), &ctx); }, ctx, "after"));
    ASSERT_NO_FATAL_FAILURE(expect_written("after"));
}

TEST_P(RmaForms, reads_fill_only_the_local_span_from_a_larger_region) {
    for (std::size_t i = 0; i < region; ++i) target_[i] = static_cast<std::byte>(i * 13 + 5);
    loom::request_context ctx;
    const std::span<std::byte> in = piece_span();
    std::ranges::fill(in, std::byte{0});
    auto& ep = s_.ep;
    const auto peer = s_.self;
    ASSERT_NO_FATAL_FAILURE(
        complete([&] { return loom::rma::read_to(ep, in, local_mr_, peer, larger(), &ctx); }, ctx, "plain"));
    ASSERT_NO_FATAL_FAILURE(expect_read("plain"));
    ASSERT_NO_FATAL_FAILURE(
        complete([&] { return loom::rma::read_to(ep, in, local_mr_, peer, larger(), loom::op_flag::completion, &ctx); },
                 ctx, "flags"));
    ASSERT_NO_FATAL_FAILURE(expect_read("flags"));
    ASSERT_NO_FATAL_FAILURE(complete(
        [&] {
            return loom::rma::read_to<loom::operation_defaults::inherit>(ep, in, local_mr_, peer, larger(),
                                                                         loom::op_flag::completion, &ctx);
        },
        ctx, "inherit"));
    ASSERT_NO_FATAL_FAILURE(expect_read("inherit"));
    const ::iovec iov{in.data(), in.size()};
    void* desc = local_mr_.descriptor();
    const auto exact = larger().subregion(0, piece).value();
    ASSERT_NO_FATAL_FAILURE(complete(
        [&] { return loom::rma::readv_to(ep, {&iov, 1}, {&desc, 1}, peer, {&exact, 1}, &ctx); }, ctx, "vectored"));
    ASSERT_NO_FATAL_FAILURE(expect_read("vectored"));
    const auto big = larger();
    EXPECT_EQ(outcome(loom::rma::readv_to(ep, {&iov, 1}, {&desc, 1}, peer, {&big, 1}, &ctx)), "invalid_argument");
    auto trig = loom::counter::create(s_.domain);
    ASSERT_TRUE(trig);
    auto deferred =
        loom::trigger::deferred_work::create_read(s_.domain, ep, {&*trig, 1}, &s_.cntr, in, desc, peer, exact);
    if (!deferred) {
        EXPECT_EQ(outcome(deferred.error()), "not_supported");
    } else {
        EXPECT_EQ(outcome(loom::trigger::deferred_work::create_read(s_.domain, ep, {&*trig, 1}, &s_.cntr, in, desc,
                                                                    peer, big)),
                  "invalid_argument")
            << "deferred RMA needs equal totals";
        const auto before = s_.cntr.read();
        ASSERT_EQ(outcome(trig->add(1)), "ok");
        ASSERT_EQ(outcome(s_.cntr.wait(before + 1, 5000ms)), "ok");
        deferred->mark_completed();
        ASSERT_NO_FATAL_FAILURE(expect_read("deferred"));
    }
}

INSTANTIATE_TEST_SUITE_P(Providers, RmaForms, ::testing::Values("tcp", "tcp;ofi_rxm", "sockets", "shm", "udp;ofi_rxd"),
                         [](const auto& p) {
                             std::string n = p.param;
                             for (auto& c : n)
                                 if (c == ';') c = '_';
                             return n;
                         });
