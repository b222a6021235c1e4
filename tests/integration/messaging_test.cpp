// Two-process messaging over every provider on this machine: msg and tagged ping-pong with
// byte-exact payloads, tag matching, directed receive, truncation, multi-receive, inject.
#include "peer_process.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include <string>
#include <tuple>

using namespace loom_test;
using namespace std::chrono_literals;

namespace {

constexpr auto base_caps = loom::capability::msg | loom::capability::tagged;

auto safe_name(std::string s) -> std::string {
    for (auto& c : s)
        if (c == ';' || c == '-') c = '_';
    return s;
}

/// Sizes a provider is tested at; 0 stands for "the endpoint's inject size".
auto sizes_for(const std::string& provider) -> std::vector<std::size_t> {
    if (provider == "sockets") return {0, 1, SIZE_MAX};  // slow on 2 cores: small sizes only
    return {0, 1, SIZE_MAX, 64u << 10, 1u << 20, 4u << 20};
}

struct session {
    stack local;
    std::unique_ptr<local_buffers> bufs;
    std::unique_ptr<peer_process> peer;
};

/// Opens the local side and starts the peer; skips the test when the provider is absent.
auto start(const std::string& provider, loom::capability caps, session& s) -> bool {
    auto st = open_stack(provider, caps);
    if (!st) {
        ADD_FAILURE() << "provider " << provider << " unavailable: " << st.error().message();
        return false;
    }
    s.local = std::move(*st);
    s.bufs = std::make_unique<local_buffers>(s.local.domain);
    s.peer = std::make_unique<peer_process>(provider, caps, s.local);
    if (!s.peer->ok()) {
        ADD_FAILURE() << "peer: " << s.peer->error();
        return false;
    }
    return true;
}

void expect_ok(const reply& r, const char* what) { EXPECT_EQ(r.status, 0) << what << ": " << r.text; }

// ---------------------------------------------------------------- ping-pong
class pingpong : public ::testing::TestWithParam<std::tuple<std::string, kind, std::size_t>> {};

TEST_P(pingpong, byte_exact_round_trip) {
    const auto& [provider, k, requested] = GetParam();
    session s;
    if (!start(provider, base_caps, s)) return;
    const std::size_t size = requested == SIZE_MAX ? s.local.ep.inject_size() : requested;
    ASSERT_LE(size, max_message);
    const std::uint64_t tag = 0xABCD0000u + size;
    const std::uint64_t seed = size * 3 + 1;

    // test -> peer
    expect_ok(s.peer->run({.code = op::post_recv, .k = k, .slot = 0, .peer = -1, .size = size, .tag = tag}), "post");
    auto sent = send_and_wait(s.local, s.peer->local(), *s.bufs, k, size, seed, tag, s.peer->address());
    ASSERT_TRUE(sent) << sent.error().message();
    ASSERT_FALSE(sent->has_error()) << sent->error.message() << " " << sent->error_text;
    auto got = s.peer->run({.code = op::wait_recv, .slot = 0, .size = size, .seed = seed});
    expect_ok(got, "peer receive");
    EXPECT_EQ(got.bytes, size);
    EXPECT_EQ(got.value, 0u) << "first wrong byte at " << got.value - 1;
    if (k == kind::tagged) {
        EXPECT_EQ(got.tag, tag);
    }

    // peer -> test
    loom::request_context rctx;
    auto rbuf = s.bufs->recv(size);
    std::memset(rbuf.data(), 0xEE, rbuf.size());
    auto posted = k == kind::tagged
                      ? s.local.ep.tagged_recv(rbuf, s.bufs->recv_mr, tag, 0, loom::fabric_addrs::unspecified, &rctx)
                      : s.local.ep.recv(rbuf, s.bufs->recv_mr, loom::fabric_addrs::unspecified, &rctx);
    ASSERT_TRUE(posted) << posted.error().message();
    expect_ok(s.peer->run({.code = op::send, .k = k, .peer = 0, .size = size, .seed = seed + 1, .tag = tag}),
              "peer send");
    auto ev = s.peer->local().wait_for(&rctx, 30s);
    ASSERT_TRUE(ev) << ev.error().message();
    ASSERT_FALSE(ev->has_error()) << ev->error.message() << " " << ev->error_text;
    EXPECT_EQ(ev->bytes_transferred, size);
    if (k == kind::tagged) {
        EXPECT_EQ(ev->tag, tag);
    }
    EXPECT_TRUE(ev->flags.has(loom::op_flag::recv));
    auto bad = check_pattern(rbuf, seed + 1);
    EXPECT_FALSE(bad.has_value()) << "first wrong byte at " << bad.value_or(0);
}

auto pingpong_cases() {
    std::vector<std::tuple<std::string, kind, std::size_t>> cases;
    for (std::string p : {"tcp;ofi_rxm", "tcp", "shm", "udp;ofi_rxd", "sockets"})
        for (auto k : {kind::msg, kind::tagged})
            for (auto size : sizes_for(p)) cases.emplace_back(p, k, size);
    return cases;
}

INSTANTIATE_TEST_SUITE_P(providers, pingpong, ::testing::ValuesIn(pingpong_cases()), [](const auto& info) {
    const auto& p = std::get<0>(info.param);
    const auto k = std::get<1>(info.param);
    const auto size = std::get<2>(info.param);
    return safe_name(p) + (k == kind::tagged ? "_tagged_" : "_msg_") +
           (size == SIZE_MAX ? std::string("inject_size") : std::to_string(size) + "B");
});

// ---------------------------------------------------------------- per-provider behaviour
class provider_behaviour : public ::testing::TestWithParam<std::string> {};

TEST_P(provider_behaviour, tag_matching_honours_ignore_mask) {
    session s;
    if (!start(GetParam(), base_caps, s)) return;
    // slot 0 takes any tag 0x12??, slot 1 exactly 0x3400.
    expect_ok(s.peer->run({.code = op::post_recv,
                           .k = kind::tagged,
                           .slot = 0,
                           .peer = -1,
                           .size = 256,
                           .tag = 0x1200,
                           .ignore = 0xFF}),
              "post 0");
    expect_ok(
        s.peer->run({.code = op::post_recv, .k = kind::tagged, .slot = 1, .peer = -1, .size = 256, .tag = 0x3400}),
        "post 1");
    ASSERT_TRUE(send_and_wait(s.local, s.peer->local(), *s.bufs, kind::tagged, 100, 7, 0x3400, s.peer->address()));
    ASSERT_TRUE(send_and_wait(s.local, s.peer->local(), *s.bufs, kind::tagged, 200, 9, 0x12AB, s.peer->address()));
    auto r0 = s.peer->run({.code = op::wait_recv, .slot = 0, .size = 200, .seed = 9});
    expect_ok(r0, "slot 0");
    EXPECT_EQ(r0.tag, 0x12ABu);
    EXPECT_EQ(r0.value, 0u);
    auto r1 = s.peer->run({.code = op::wait_recv, .slot = 1, .size = 100, .seed = 7});
    expect_ok(r1, "slot 1");
    EXPECT_EQ(r1.tag, 0x3400u);
    EXPECT_EQ(r1.value, 0u);
}

TEST_P(provider_behaviour, directed_receive_matches_only_its_source) {
    const auto caps = base_caps | loom::capability::directed_recv;
    auto probe = find_info(GetParam(), caps);
    if (!probe) GTEST_SKIP() << GetParam() << " does not offer directed receive";
    session s;
    if (!start(GetParam(), caps, s)) return;
    auto second = open_stack(GetParam(), caps);
    ASSERT_TRUE(second) << second.error().message();
    local_buffers b2(second->domain, 4096);
    auto second_name = second->ep.name();
    ASSERT_TRUE(second_name);
    const auto idx = s.peer->add_peer(*second_name);
    ASSERT_GE(idx, 1);
    auto peer_in_second = second->av.insert(s.peer->native_address());
    ASSERT_TRUE(peer_in_second);
    constexpr std::uint64_t tag = 0x77;
    // slot 0 accepts only the second endpoint, slot 1 anyone; the main endpoint sends first.
    expect_ok(s.peer->run({.code = op::post_recv, .k = kind::tagged, .slot = 0, .peer = idx, .size = 64, .tag = tag}),
              "post 0");
    expect_ok(s.peer->run({.code = op::post_recv, .k = kind::tagged, .slot = 1, .peer = -1, .size = 64, .tag = tag}),
              "post 1");
    ASSERT_TRUE(send_and_wait(s.local, s.peer->local(), *s.bufs, kind::tagged, 64, 11, tag, s.peer->address()));
    progress second_prog(second->cq);
    ASSERT_TRUE(send_and_wait(*second, second_prog, b2, kind::tagged, 64, 12, tag, *peer_in_second));
    auto r1 = s.peer->run({.code = op::wait_recv, .slot = 1, .size = 64, .seed = 11});
    expect_ok(r1, "undirected slot");
    EXPECT_EQ(r1.value, 0u) << "the undirected receive got the wrong message";
    auto r0 = s.peer->run({.code = op::wait_recv, .slot = 0, .size = 64, .seed = 12});
    expect_ok(r0, "directed slot");
    EXPECT_EQ(r0.value, 0u) << "the directed receive got the wrong message";
}

TEST_P(provider_behaviour, multi_receive_buffer_takes_several_messages) {
    const auto caps = base_caps | loom::capability::multi_recv;
    if (!find_info(GetParam(), caps)) GTEST_SKIP() << GetParam() << " does not offer multi-receive";
    session s;
    if (!start(GetParam(), caps, s)) return;
    // 3 x 1000 bytes into a 3000-byte buffer with 1000 bytes minimum free space: the third
    // message leaves less than the minimum, so the buffer is released (op_flag::multi_recv).
    expect_ok(s.peer->run({.code = op::multi_recv, .slot = 0, .size = 3000, .ignore = 1000}), "post multi");
    for (std::uint64_t k = 0; k < 3; ++k)
        ASSERT_TRUE(send_and_wait(s.local, s.peer->local(), *s.bufs, kind::msg, 1000, 100 + k, 0, s.peer->address()));
    auto r = s.peer->run({.code = op::wait_multi, .slot = 0, .size = 3, .seed = 100});
    expect_ok(r, "multi receive");
    EXPECT_EQ(r.tag, 3u) << "messages seen";
    EXPECT_EQ(r.bytes, 3000u);
    EXPECT_EQ(r.flags, 1u) << "buffer release flag not seen";
    EXPECT_EQ(r.value, 0u) << "message " << r.value - 1 << " has wrong bytes";
}

TEST_P(provider_behaviour, truncation_is_a_completion_error_with_lengths) {
    // What libfabric 2.1's providers report when a 1024-byte message meets a 512-byte receive.
    // loom passes the provider's entry through unchanged; these expectations pin that down so a
    // provider or library change shows up here (see docs/providers.md).
    struct expectation {
        int status;
        std::uint64_t overflow;
    };
    const std::string p = GetParam();
    const expectation want = p == "udp;ofi_rxd"           ? expectation{0, 0}  // truncates silently
                             : (p == "tcp" || p == "shm") ? expectation{static_cast<int>(loom::errc::truncated), 0}
                                                          : expectation{static_cast<int>(loom::errc::truncated), 512};
    session s;
    if (!start(p, base_caps, s)) return;
    expect_ok(s.peer->run({.code = op::post_recv, .k = kind::msg, .slot = 0, .peer = -1, .size = 512}), "post");
    auto sent = send_and_wait(s.local, s.peer->local(), *s.bufs, kind::msg, 1024, 5, 0, s.peer->address());
    ASSERT_TRUE(sent) << sent.error().message();
    auto r = s.peer->run({.code = op::wait_recv, .slot = 0, .size = 512, .seed = 5});
    EXPECT_EQ(r.status, want.status) << r.text;
    EXPECT_EQ(r.overflow, want.overflow);
    if (want.status == 0) {
        EXPECT_EQ(r.bytes, 512u);
        EXPECT_EQ(r.value, 0u) << "the first 512 bytes must be the message's first 512";
    }
}

TEST_P(provider_behaviour, inject_delivers_at_inject_size) {
    session s;
    if (!start(GetParam(), base_caps, s)) return;
    const auto size = s.local.ep.inject_size();
    ASSERT_GT(size, 0u);
    for (auto k : {kind::msg, kind::tagged}) {
        expect_ok(s.peer->run({.code = op::post_recv, .k = k, .slot = 0, .peer = -1, .size = size, .tag = 77}), "post");
        auto buf = s.bufs->send(size);
        fill_pattern(buf, 42);
        auto ok = s.peer->local().retry(
            [&] {
                return k == kind::tagged ? s.local.ep.tagged_inject(buf, 77, s.peer->address())
                                         : s.local.ep.inject(buf, s.peer->address());
            },
            30s);
        ASSERT_TRUE(ok) << ok.error().message();
        std::memset(buf.data(), 0, buf.size());  // the buffer is ours again on return
        auto r = s.peer->run({.code = op::wait_recv, .slot = 0, .size = size, .seed = 42});
        expect_ok(r, "inject receive");
        EXPECT_EQ(r.value, 0u);
        // One byte more than the inject size is refused before reaching the provider.
        auto over = s.local.ep.inject(s.bufs->send(size + 1), s.peer->address());
        ASSERT_FALSE(over);
        EXPECT_EQ(over.error(), loom::errc::invalid_argument);
    }
}

INSTANTIATE_TEST_SUITE_P(providers, provider_behaviour,
                         ::testing::Values("tcp;ofi_rxm", "tcp", "shm", "udp;ofi_rxd", "sockets"),
                         [](const auto& info) { return safe_name(info.param); });

}  // namespace
