// The atomic senders (fetch_add_to, compare_swap_to) against a loom-test-peer process, on the
// providers here with atomics (tcp;ofi_rxm, shm, sockets): each previous value a sender
// delivers proves what the operation before it did to the peer's word; two fetch-adds in
// flight at once under when_all; refusals before submission.
#include "core_support.hpp"
#include "peer_process.hpp"
#include "sender_receiver.hpp"

#include <loom/execution.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cstring>

using namespace loom_test;
using namespace std::chrono_literals;
namespace ex = loom::execution;

namespace {

constexpr auto caps = loom::capability::msg | loom::capability::tagged | loom::capability::atomic;

class atomic_senders : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        auto st = open_stack(GetParam(), caps);
        ASSERT_TRUE(st) << GetParam() << ": " << st.error().message();
        local_ = std::make_unique<stack>(std::move(*st));
        auto mr = loom::memory_region::register_memory(local_->domain, std::as_writable_bytes(std::span{cells_}),
                                                       loom::mr_access_flags::read | loom::mr_access_flags::write);
        ASSERT_TRUE(mr) << mr.error().message();
        mr_ = std::move(*mr);
        peer_ = std::make_unique<peer_process>(GetParam(), caps, *local_);
        ASSERT_TRUE(peer_->ok()) << peer_->error();
        // The peer's word starts as the first 8 bytes of pattern 5.
        auto r = peer_->run({.code = op::expose, .size = 4096, .seed = 5});
        ASSERT_EQ(r.status, 0) << r.text;
        const loom::remote_memory region{r.value, r.tag, static_cast<std::size_t>(r.bytes)};
        word_ = region.subregion(0, sizeof(std::uint64_t)).value();
        std::array<std::byte, sizeof(std::uint64_t)> first{};
        fill_pattern(first, 5);
        std::memcpy(&initial_, first.data(), sizeof initial_);
    }
    void TearDown() override {
        peer_.reset();
        mr_ = {};
        local_.reset();
    }
    /// Connects and starts `s`, polls until it completes; what it completed with.
    template <class S>
    auto run(S&& s) -> std::optional<std::uint64_t> {
        recorded<std::uint64_t> rec;
        auto op = ex::connect(static_cast<S&&>(s), recording_receiver<std::uint64_t>{&rec});
        ex::start(op);
        const auto deadline = std::chrono::steady_clock::now() + 20s;
        while (!rec.done() && std::chrono::steady_clock::now() < deadline) {
            auto p = ex::poll_completions(local_->cq);
            if (p.unhandled) ADD_FAILURE() << "unhandled event: " << p.unhandled->error.message();
        }
        EXPECT_TRUE(rec.done()) << "the sender never completed";
        EXPECT_EQ(rec.calls.load(), rec.done() ? 1 : 0);
        EXPECT_EQ(rec.how.load(), completion_kind::value) << rec.error.message();
        return rec.value;
    }
    auto atomics() { return loom::rma_async(local_->ep); }
    /// Adds `operand` to the peer's word (or `at`), the previous value into `result`.
    auto add(const std::uint64_t& operand, std::uint64_t& result, const loom::remote_memory& at) {
        return atomics().fetch_add_to(operand, &mr_, result, &mr_, peer(), at, &local_->cq);
    }
    auto add(const std::uint64_t& operand, std::uint64_t& result) { return add(operand, result, word_); }
    auto peer() const -> loom::fabric_addr { return peer_->address(); }

    std::unique_ptr<stack> local_;
    std::unique_ptr<peer_process> peer_;
    /// operand, result, expected, replacement, a second operand and result.
    alignas(8) std::array<std::uint64_t, 6> cells_{};
    loom::memory_region mr_;
    loom::remote_memory word_{};
    std::uint64_t initial_{0};
};

TEST_P(atomic_senders, fetch_add_to_delivers_each_previous_value) {
    auto& [operand, result, expected, replacement, operand2, result2] = cells_;
    operand = 5;
    EXPECT_EQ(run(add(operand, result)), initial_);
    EXPECT_EQ(result, initial_) << "the result cell does not hold what the sender delivered";
    operand = 7;
    EXPECT_EQ(run(add(operand, result)), initial_ + 5);
    operand = 0;
    EXPECT_EQ(run(add(operand, result)), initial_ + 12);
}

TEST_P(atomic_senders, compare_swap_to_replaces_only_the_expected_value) {
    auto& [operand, result, expected, replacement, operand2, result2] = cells_;
    expected = initial_;
    replacement = 0xfeedface12345678u;
    auto swap = [&] {
        return atomics().compare_swap_to(expected, &mr_, replacement, &mr_, result, &mr_, peer(), word_, &local_->cq);
    };
    EXPECT_EQ(run(swap()), initial_) << "the first swap did not see the initial value";
    // Now expected (the initial value) no longer matches: the word keeps the replacement.
    replacement = 1;
    EXPECT_EQ(run(swap()), 0xfeedface12345678u);
    expected = 0xfeedface12345678u;
    EXPECT_EQ(run(swap()), 0xfeedface12345678u);
    operand = 0;
    EXPECT_EQ(run(add(operand, result)), 1u);
}

TEST_P(atomic_senders, two_fetch_adds_in_flight_under_when_all) {
    auto& [operand, result, expected, replacement, operand2, result2] = cells_;
    operand = 3;
    operand2 = 40;
    auto both = ex::when_all(add(operand, result), add(operand2, result2)) |
                ex::then([](std::uint64_t a, std::uint64_t b) { return std::min(a, b) + 1000 * std::max(a, b); });
    const auto packed = run(std::move(both));
    ASSERT_TRUE(packed);
    // One of them saw the initial value, the other the initial value plus the first's operand.
    const bool three_first = result == initial_ && result2 == initial_ + 3;
    const bool forty_first = result2 == initial_ && result == initial_ + 40;
    EXPECT_TRUE(three_first || forty_first) << "previous values " << result << " and " << result2;
    EXPECT_EQ(*packed, std::min(result, result2) + 1000 * std::max(result, result2));
    operand = 0;
    EXPECT_EQ(run(add(operand, result)), initial_ + 43);
}

TEST_P(atomic_senders, refusals_come_before_submission) {
    auto& [operand, result, expected, replacement, operand2, result2] = cells_;
    auto expect_refused = [&](std::uint64_t& into, const loom::remote_memory& at, const char* what) {
        recorded<std::uint64_t> rec;
        auto op = ex::connect(add(operand, into, at), recording_receiver<std::uint64_t>{&rec});
        ex::start(op);
        EXPECT_EQ(rec.how.load(), completion_kind::error) << what << ": not refused at start";
        EXPECT_EQ(rec.error, loom::make_error_code(loom::errc::invalid_argument))
            << what << ": " << rec.error.message();
        EXPECT_EQ(local_->cq.registry()->size(), 0u) << what;
    };
    expect_refused(result, loom::remote_memory{word_.addr, word_.key, 4}, "a remote range shorter than the value");
    std::uint64_t unregistered = 0;
    expect_refused(unregistered, word_, "a result outside its registration");
    // Nothing reached the peer's word.
    EXPECT_EQ(run(add(operand, result)), initial_);
}

INSTANTIATE_TEST_SUITE_P(providers, atomic_senders, ::testing::Values("tcp;ofi_rxm", "shm", "sockets"),
                         core_test::param_name);

}  // namespace
