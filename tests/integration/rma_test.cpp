// Two-process RMA: every read/write form against memory the peer exposed, byte-exact.
#include "peer_process.hpp"

#include <loom/rma.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cstring>

using namespace loom_test;
using namespace std::chrono_literals;

namespace {

constexpr auto rma_caps = loom::capability::msg | loom::capability::tagged | loom::capability::rma;
constexpr std::size_t region = 2u << 20;

auto name_of(const ::testing::TestParamInfo<std::string>& info) -> std::string {
    std::string s = info.param;
    for (auto& c : s)
        if (c == ';') c = '_';
    return s;
}

class rma_two_process : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        auto st = open_stack(GetParam(), rma_caps);
        ASSERT_TRUE(st) << GetParam() << ": " << st.error().message();
        local_ = std::make_unique<stack>(std::move(*st));
        auto mr = loom::memory_region::register_memory(local_->domain, std::span{buf_},
                                                       loom::mr_access_flags::read | loom::mr_access_flags::write);
        ASSERT_TRUE(mr) << mr.error().message();
        mr_ = std::move(*mr);
        peer_ = std::make_unique<peer_process>(GetParam(), rma_caps, *local_);
        ASSERT_TRUE(peer_->ok()) << peer_->error();
        auto r = peer_->run({.code = op::expose, .size = region, .seed = 3});
        ASSERT_EQ(r.status, 0) << r.text;
        remote_ = {r.value, r.tag, static_cast<std::size_t>(r.bytes)};
        ASSERT_EQ(remote_.length, region);
    }
    void TearDown() override {
        peer_.reset();
        mr_ = {};
        local_.reset();
    }
    auto complete(const loom::request_context& ctx) -> loom::result<loom::completion_event> {
        return peer_->local().wait_for(&ctx, 30s);
    }
    auto submit(auto&& fn) -> loom::void_result { return peer_->local().retry(fn, 30s); }

    std::unique_ptr<stack> local_;
    std::vector<std::byte> buf_ = std::vector<std::byte>(region);
    loom::memory_region mr_;
    std::unique_ptr<peer_process> peer_;
    loom::remote_memory remote_;
};

TEST_P(rma_two_process, write_to_lands_byte_exact_at_every_size) {
    std::size_t offset = 0;
    for (std::size_t size :
         {std::size_t{0}, std::size_t{1}, std::size_t{4096}, std::size_t{65536}, std::size_t{1} << 20}) {
        SCOPED_TRACE(size);
        const std::uint64_t seed = 40 + size;
        auto local = std::span{buf_}.first(size);
        fill_pattern(local, seed);
        auto target = remote_.subregion(offset, size);
        ASSERT_TRUE(target);
        loom::request_context ctx;
        auto ok = submit([&] { return loom::rma::write_to(local_->ep, local, mr_, peer_->address(), *target, &ctx); });
        ASSERT_TRUE(ok) << ok.error().message();
        auto ev = complete(ctx);
        ASSERT_TRUE(ev) << ev.error().message();
        ASSERT_FALSE(ev->has_error()) << ev->error.message() << " " << ev->error_text;
        auto v = peer_->run({.code = op::verify, .size = size, .seed = seed, .tag = offset});
        EXPECT_EQ(v.status, 0) << v.text;
        EXPECT_EQ(v.value, 0u) << "first wrong byte " << v.value - 1;
        offset += size;
    }
}

TEST_P(rma_two_process, read_to_fetches_byte_exact) {
    for (std::size_t size : {std::size_t{0}, std::size_t{1}, std::size_t{4096}, std::size_t{1} << 20}) {
        SCOPED_TRACE(size);
        // udp;ofi_rxd never completes a zero-byte read (docs/providers.md).
        if (size == 0 && GetParam() == "udp;ofi_rxd") continue;
        const std::size_t offset = 1000;
        auto local = std::span{buf_}.first(size);
        std::memset(local.data(), 0, local.size());
        auto source = remote_.subregion(offset, size);
        ASSERT_TRUE(source);
        loom::request_context ctx;
        auto ok = submit([&] { return loom::rma::read_to(local_->ep, local, mr_, peer_->address(), *source, &ctx); });
        ASSERT_TRUE(ok) << ok.error().message();
        auto ev = complete(ctx);
        ASSERT_TRUE(ev) << ev.error().message();
        ASSERT_FALSE(ev->has_error()) << ev->error.message() << " " << ev->error_text;
        for (std::size_t i = 0; i < size; ++i) ASSERT_EQ(local[i], pattern_byte(3, offset + i)) << "byte " << i;
    }
}

TEST_P(rma_two_process, vectored_write_and_read_across_segments) {
    // 3 local pieces (300 + 1000 + 700 bytes) onto 2 remote segments (1200 + 800 bytes).
    const auto limits = local_->ep.iov_limits();
    if (limits.tx < 3 || limits.rma < 2) GTEST_SKIP() << "iov limits " << limits.tx << "/" << limits.rma;
    auto src = std::span{buf_}.first(2000);
    fill_pattern(src, 77);
    const ::iovec iov[3] = {{buf_.data(), 300}, {buf_.data() + 300, 1000}, {buf_.data() + 1300, 700}};
    void* desc[3] = {mr_.descriptor(), mr_.descriptor(), mr_.descriptor()};
    const loom::remote_memory segs[2] = {remote_.subregion(4096, 1200).value(),
                                         remote_.subregion(4096 + 1200, 800).value()};
    loom::request_context ctx;
    auto ok = submit([&] { return loom::rma::writev_to(local_->ep, iov, desc, peer_->address(), segs, &ctx); });
    ASSERT_TRUE(ok) << ok.error().message();
    auto ev = complete(ctx);
    ASSERT_TRUE(ev && !ev->has_error());
    auto v = peer_->run({.code = op::verify, .size = 2000, .seed = 77, .tag = 4096});
    EXPECT_EQ(v.value, 0u) << "first wrong byte " << v.value - 1;

    // Read the same 2000 bytes back into the second half of the buffer, split differently.
    std::byte* back = buf_.data() + (1u << 20);
    std::memset(back, 0, 2000);
    const ::iovec riov[2] = {{back, 1500}, {back + 1500, 500}};
    void* rdesc[2] = {mr_.descriptor(), mr_.descriptor()};
    loom::request_context rctx;
    ok = submit([&] { return loom::rma::readv_to(local_->ep, riov, rdesc, peer_->address(), segs, &rctx); });
    ASSERT_TRUE(ok) << ok.error().message();
    ev = complete(rctx);
    ASSERT_TRUE(ev && !ev->has_error());
    EXPECT_FALSE(check_pattern({back, 2000}, 77).has_value());
}

TEST_P(rma_two_process, explicit_flags_and_write_only_rejections) {
    auto local = std::span{buf_}.first(512);
    fill_pattern(local, 9);
    loom::request_context ctx;
    auto ok = submit([&] {
        return loom::rma::write_to<loom::operation_defaults::inherit>(local_->ep, local, mr_, peer_->address(), remote_,
                                                                      loom::op_flag::completion, &ctx);
    });
    ASSERT_TRUE(ok) << ok.error().message();
    auto ev = complete(ctx);
    ASSERT_TRUE(ev && !ev->has_error());
    EXPECT_EQ(peer_->run({.code = op::verify, .size = 512, .seed = 9, .tag = 0}).value, 0u);
    // Reads refuse write-only flags before the provider.
    for (auto f : {loom::op_flag::inject, loom::op_flag::transmit_complete, loom::op_flag::delivery_complete,
                   loom::op_flag::remote_cq_data}) {
        auto bad = loom::rma::read_to(local_->ep, std::span{buf_}.first(8), mr_, peer_->address(), remote_, f, &ctx);
        ASSERT_FALSE(bad);
        EXPECT_EQ(bad.error(), loom::errc::invalid_argument) << loom::to_string(f);
    }
    // Out-of-range remote, local outside the registration, no peer on RDM.
    auto tail = remote_.offset_by(region - 4).value();
    EXPECT_EQ(loom::rma::write_to(local_->ep, local, mr_, peer_->address(), tail, &ctx).error(),
              loom::errc::invalid_argument);
    std::array<std::byte, 8> unregistered{};
    EXPECT_EQ(loom::rma::write_to(local_->ep, std::span{unregistered}, mr_, peer_->address(), remote_, &ctx).error(),
              loom::errc::invalid_argument);
    EXPECT_EQ(loom::rma::write(local_->ep, local, mr_, remote_, &ctx).error(), loom::errc::invalid_argument);
    // Vectored: unequal totals, no remote segment.
    const ::iovec iov{buf_.data(), 100};
    void* d = mr_.descriptor();
    const loom::remote_memory seg = remote_.subregion(0, 99).value();
    EXPECT_EQ(loom::rma::writev_to(local_->ep, {&iov, 1}, {&d, 1}, peer_->address(), {&seg, 1}, &ctx).error(),
              loom::errc::invalid_argument);
    EXPECT_EQ(loom::rma::writev_to(local_->ep, {&iov, 1}, {&d, 1}, peer_->address(), {}, &ctx).error(),
              loom::errc::invalid_argument);
}

TEST_P(rma_two_process, write_data_reaches_the_target_completion_queue) {
    auto local = std::span{buf_}.first(256);
    fill_pattern(local, 21);
    loom::request_context ctx;
    auto ok = submit([&] {
        return loom::rma::write_data_to(local_->ep, local, mr_, peer_->address(), remote_, 0xDEADBEEFull, &ctx);
    });
    ASSERT_TRUE(ok) << ok.error().message();
    auto ev = complete(ctx);
    ASSERT_TRUE(ev && !ev->has_error());
    auto r = peer_->run({.code = op::wait_data});
    ASSERT_EQ(r.status, 0) << r.text;
    EXPECT_EQ(r.value, 0xDEADBEEFull);
    EXPECT_EQ(r.flags, 1u) << "remote_cq_data flag";
    EXPECT_EQ(peer_->run({.code = op::verify, .size = 256, .seed = 21, .tag = 0}).value, 0u);
}

TEST_P(rma_two_process, reads_and_writes_to_an_inserted_peer_go_through_the_rma_gate) {
    // To a peer_addr the one-buffer forms check only their arguments inline (local range in the
    // registration, remote range) and leave state, capability, context and size to the
    // endpoint's RMA gate: it must pass what is valid, refuse a moved-from endpoint,
    // and refuse what the inline checks catch with the same codes as the full checks.
    ASSERT_TRUE(peer_->peer().has_value());
    const loom::peer_addr peer = *peer_->peer();
    EXPECT_EQ(local_->ep.send_gate(loom::capability::rma), local_->ep.native()) << "no check needed on this provider";
    auto local = std::span{buf_}.first(4096);
    fill_pattern(local, 61);
    loom::request_context ctx;
    ASSERT_TRUE(submit([&] { return loom::rma::write_to(local_->ep, local, mr_, peer, remote_, &ctx); }));
    ASSERT_TRUE(complete(ctx));
    EXPECT_EQ(peer_->run({.code = op::verify, .size = 4096, .seed = 61, .tag = 0}).value, 0u);
    ASSERT_TRUE(submit([&] { return loom::rma::write_data_to(local_->ep, local, mr_, peer, remote_, 5, &ctx); }));
    ASSERT_TRUE(complete(ctx));
    EXPECT_EQ(peer_->run({.code = op::wait_data}).value, 5u);
    auto back = std::span{buf_}.subspan(8192, 4096);
    ASSERT_TRUE(submit([&] { return loom::rma::read_to(local_->ep, back, mr_, peer, remote_, &ctx); }));
    ASSERT_TRUE(complete(ctx));
    EXPECT_FALSE(check_pattern(back, 61).has_value());
    // Arguments: remote too short, local outside the registration.
    const auto tail = remote_.offset_by(region - 4).value();
    EXPECT_EQ(loom::rma::write_to(local_->ep, local, mr_, peer, tail, &ctx).error(), loom::errc::invalid_argument);
    std::array<std::byte, 8> unregistered{};
    EXPECT_EQ(loom::rma::read_to(local_->ep, std::span{unregistered}, mr_, peer, remote_, &ctx).error(),
              loom::errc::invalid_argument);
    // State: a moved-from endpoint refuses; moved back, it writes again.
    loom::endpoint moved = std::move(local_->ep);
    EXPECT_EQ(loom::rma::write_to(local_->ep, local, mr_, peer, remote_, &ctx).error(), loom::errc::bad_state);
    EXPECT_EQ(loom::rma::read_to(local_->ep, back, mr_, peer, remote_, &ctx).error(), loom::errc::bad_state);
    EXPECT_EQ(loom::rma::write_data_to(local_->ep, local, mr_, peer, remote_, 1, &ctx).error(), loom::errc::bad_state);
    local_->ep = std::move(moved);
    ASSERT_TRUE(submit([&] { return loom::rma::write_to(local_->ep, local, mr_, peer, remote_, &ctx); }));
    ASSERT_TRUE(complete(ctx));
}

INSTANTIATE_TEST_SUITE_P(providers, rma_two_process, ::testing::Values("tcp;ofi_rxm", "tcp", "shm", "udp;ofi_rxd"),
                         name_of);

}  // namespace
