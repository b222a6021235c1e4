// In-process checks of real, enabled endpoints: cancel of posted receives, MSG endpoints without
// an AV, endpoint options and quirks. The pre-submission checks and binding rules are in
// core_endpoint_checks_test.cpp.
#include "core_support.hpp"

#include <loom/msg.hpp>

#include <gtest/gtest.h>

#include <rdma/fi_endpoint.h>

#include <array>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

using namespace core_test;
using namespace std::chrono_literals;

namespace {

// ================================================================ 1. cancel
class core_cancel : public ::testing::TestWithParam<std::string> {};

TEST_P(core_cancel, posted_recv_reports_canceled) {
    std::array<std::byte, 64> buf{};
    std::array<std::byte, 64> second{};
    loom::request_context ctx, rctx, sctx;
    loop_stack s;
    ASSERT_NO_FATAL_FAILURE(must_open_loop(GetParam(), {}, s));
    ASSERT_EQ(outcome(s.ep.recv(buf, loom::fabric_addrs::unspecified, nullptr, &ctx)), "ok");
    ASSERT_EQ(outcome(s.ep.cancel(&ctx)), "ok");
    auto ev = next_event(s.cq, 3s);
    ASSERT_TRUE(ev.has_value()) << "no completion for the canceled receive";
    EXPECT_EQ(ev->context, static_cast<void*>(&ctx));
    EXPECT_EQ(ev->request(), &ctx);
    ASSERT_TRUE(ev->has_error());
    EXPECT_EQ(outcome(ev->error), "canceled") << ev->error_text;
    EXPECT_EQ(ev->error, loom::make_error_code(loom::errc::canceled));
    expect_quiet(s.cq);  // exactly one completion for the canceled receive

    // The canceled buffer no longer matches: a new message lands in the next receive.
    loom_test::progress prog(s.cq);
    ASSERT_EQ(outcome(s.ep.recv(second, loom::fabric_addrs::unspecified, nullptr, &rctx)), "ok");
    std::array<std::byte, 16> payload{};
    loom_test::fill_pattern(payload, 3);
    ASSERT_EQ(outcome(prog.retry([&] { return s.ep.send(payload, s.self, nullptr, &sctx); }, 2s)), "ok");
    auto got = completed(prog, &rctx);
    EXPECT_EQ(got.bytes_transferred, payload.size());
    EXPECT_FALSE(loom_test::check_pattern(std::span{second}.first(payload.size()), 3).has_value());
    EXPECT_EQ(buf, (std::array<std::byte, 64>{})) << "the canceled buffer was written";
    (void)completed(prog, &sctx);
}

TEST_P(core_cancel, posted_tagged_recv_reports_canceled) {
    std::array<std::byte, 64> buf{};
    loom::request_context ctx;
    loop_stack s;
    ASSERT_NO_FATAL_FAILURE(must_open_loop(GetParam(), {}, s));
    ASSERT_EQ(outcome(s.ep.tagged_recv(buf, any_tag, 0, &ctx)), "ok");
    ASSERT_EQ(outcome(s.ep.cancel(&ctx)), "ok");
    auto ev = next_event(s.cq, 3s);
    ASSERT_TRUE(ev.has_value()) << "no completion for the canceled receive";
    EXPECT_EQ(ev->context, static_cast<void*>(&ctx));
    ASSERT_TRUE(ev->has_error());
    EXPECT_EQ(outcome(ev->error), "canceled") << ev->error_text;
    expect_quiet(s.cq);
}

TEST_P(core_cancel, null_context_is_invalid_argument) {
    loop_stack s;
    ASSERT_NO_FATAL_FAILURE(must_open_loop(GetParam(), {}, s));
    EXPECT_EQ(outcome(s.ep.cancel(nullptr)), "invalid_argument");
    EXPECT_EQ(outcome(s.ep.cancel(loom::context_ptr<void>{})), "invalid_argument");
    loom::endpoint closed;
    loom::request_context ctx;
    EXPECT_EQ(outcome(closed.cancel(&ctx)), "bad_state");
}

INSTANTIATE_TEST_SUITE_P(providers, core_cancel, ::testing::ValuesIn(providers()), param_name);

// bind_av on a connected (msg) endpoint.
class core_msg_endpoint : public ::testing::TestWithParam<std::string> {};

TEST_P(core_msg_endpoint, bind_av_is_invalid_for_msg_endpoints) {
    auto info = loom::query_fabric(
        {.capabilities = loom::capability::msg, .ep_type = loom::endpoint_types::msg, .provider = GetParam()});
    if (!info) GTEST_SKIP() << GetParam() << " offers no msg endpoint: " << outcome(info.error());
    ASSERT_EQ(info->ep_type(), loom::endpoint_types::msg);
    auto fab = loom::fabric::create(*info);
    ASSERT_TRUE(fab) << outcome(fab.error());
    auto dom = loom::domain::create(*fab, *info);
    ASSERT_TRUE(dom) << outcome(dom.error());
    auto av = loom::address_vector::create(*dom);
    if (!av) GTEST_SKIP() << GetParam() << " msg domain opens no AV: " << outcome(av.error());
    auto ep = loom::endpoint::create(*dom, *info);
    ASSERT_TRUE(ep) << outcome(ep.error());
    EXPECT_EQ(ep->type(), loom::endpoint_types::msg);
    EXPECT_EQ(outcome(ep->bind_av(*av)), "invalid_argument");
    std::array<std::byte, 4> data{};
    loom::request_context ctx;
    EXPECT_EQ(outcome(ep->send(data, &ctx)), "bad_state");  // not enabled (not connected)
    EXPECT_EQ(outcome(ep->close()), "ok");
    EXPECT_EQ(outcome(av->close()), "ok");
    EXPECT_EQ(outcome(dom->close()), "ok");
    EXPECT_EQ(outcome(fab->close()), "ok");
}

INSTANTIATE_TEST_SUITE_P(providers, core_msg_endpoint, ::testing::Values("tcp", "sockets"), param_name);

// ================================================================ 7. endpoint options
class core_options : public ::testing::TestWithParam<std::string> {};

TEST_P(core_options, min_multi_recv_set_before_enable_reads_back) {
    loop_stack s;
    ASSERT_NO_FATAL_FAILURE(must_open_loop(GetParam(), {}, s));
    std::size_t v = 0;
    std::size_t len = sizeof v;
    auto got = loom::get_endpoint_option(s.ep, loom::ep_opt::level_endpoint, loom::ep_opt::min_multi_recv, &v, &len);
    quirk(GetParam(),
          "get min_multi_recv -> " + outcome(got) + " value " + std::to_string(v) + " len " + std::to_string(len));
    if (got) {
        EXPECT_EQ(len, sizeof(std::size_t));  // (udp;ofi_rxd reports a default of 0)
    } else {
        EXPECT_TRUE(got.error() == loom::make_error_code(loom::errc::protocol_option_unavailable) ||
                    got.error() == loom::make_error_code(loom::errc::not_supported) ||
                    got.error() == loom::make_error_code(loom::errc::not_implemented))
            << outcome(got);
    }

    // A value set before enable reads back.
    auto fresh = loom::endpoint::create(s.domain, s.info);
    ASSERT_TRUE(fresh) << outcome(fresh.error());
    const auto set = fresh->set_min_multi_recv(3000);
    quirk(GetParam(), "set min_multi_recv(3000) before enable -> " + outcome(set));
    // (Read back only once enabled: shm's fi_getopt dereferences its shared receive context,
    // which exists only after fi_enable, and crashes on a fresh endpoint.)
    ASSERT_EQ(outcome(fresh->bind_cq(s.cq, loom::cq_bind::transmit | loom::cq_bind::recv)), "ok");
    ASSERT_EQ(outcome(fresh->bind_av(s.av)), "ok");
    ASSERT_EQ(outcome(fresh->enable()), "ok");
    if (set && got) {
        std::size_t back = 0;
        std::size_t blen = sizeof back;
        ASSERT_EQ(outcome(loom::get_endpoint_option(*fresh, loom::ep_opt::level_endpoint, loom::ep_opt::min_multi_recv,
                                                    &back, &blen)),
                  "ok");
        EXPECT_EQ(back, 3000u);
    }
}

TEST_P(core_options, wrong_lengths_and_unknown_identifiers_are_refused) {
    loop_stack s;
    ASSERT_NO_FATAL_FAILURE(must_open_loop(GetParam(), {}, s));
    // Wrong lengths, null values and unknown levels never reach the provider.
    const std::size_t value = 4096;
    EXPECT_EQ(outcome(loom::set_endpoint_option(s.ep, loom::ep_opt::level_endpoint, loom::ep_opt::min_multi_recv,
                                                &value, sizeof value - 1)),
              "invalid_argument");
    EXPECT_EQ(outcome(loom::set_endpoint_option(s.ep, loom::ep_opt::level_endpoint, loom::ep_opt::min_multi_recv,
                                                &value, sizeof value + 1)),
              "invalid_argument");
    EXPECT_EQ(outcome(loom::set_endpoint_option(s.ep, loom::ep_opt::level_endpoint, loom::ep_opt::min_multi_recv,
                                                nullptr, sizeof value)),
              "invalid_argument");
    EXPECT_EQ(outcome(loom::set_endpoint_option(s.ep, static_cast<loom::ep_opt::level>(7), loom::ep_opt::min_multi_recv,
                                                &value, sizeof value)),
              "invalid_argument");
    EXPECT_EQ(outcome(loom::set_endpoint_option(s.ep, loom::ep_opt::level_endpoint,
                                                static_cast<loom::ep_opt::option>(9999), &value, sizeof value)),
              "invalid_argument");
    std::size_t small = 0;
    std::size_t small_len = sizeof small - 1;
    EXPECT_EQ(outcome(loom::get_endpoint_option(s.ep, loom::ep_opt::level_endpoint, loom::ep_opt::min_multi_recv,
                                                &small, &small_len)),
              "invalid_argument");
    EXPECT_EQ(outcome(loom::get_endpoint_option(s.ep, loom::ep_opt::level_endpoint, loom::ep_opt::min_multi_recv,
                                                &small, nullptr)),
              "invalid_argument");

    // Native identifiers are forwarded: a bogus one is an error from the provider, not a crash.
    std::array<std::byte, 64> raw{};
    std::size_t raw_len = raw.size();
    auto bogus = loom::get_native_endpoint_option(s.ep, FI_OPT_ENDPOINT, 0x7777, raw.data(), &raw_len);
    quirk(GetParam(), "get_native_endpoint_option(FI_OPT_ENDPOINT, 0x7777) -> " + outcome(bogus));
    EXPECT_FALSE(bogus.has_value());
    raw_len = raw.size();
    auto bogus_level = loom::get_native_endpoint_option(s.ep, 0x4242, 0, raw.data(), &raw_len);
    quirk(GetParam(), "get_native_endpoint_option(level 0x4242) -> " + outcome(bogus_level));
    EXPECT_FALSE(bogus_level.has_value());
    int one = 1;
    auto bogus_set = loom::set_native_endpoint_option(s.ep, FI_OPT_ENDPOINT, 0x7777, &one, sizeof one);
    quirk(GetParam(), "set_native_endpoint_option(FI_OPT_ENDPOINT, 0x7777) -> " + outcome(bogus_set));
    EXPECT_FALSE(bogus_set.has_value());

    loom::endpoint closed;
    std::size_t v = 0;
    std::size_t len = sizeof v;
    EXPECT_EQ(outcome(loom::get_native_endpoint_option(closed, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &v, &len)),
              "bad_state");
}

INSTANTIATE_TEST_SUITE_P(providers, core_options, ::testing::ValuesIn(providers()), param_name);

/// The quirks an endpoint reports are those quirks_for() predicts from its info (the plugin
/// runtime decides on them before opening anything); rxm refuses self-insertion.
TEST(core_quirks, endpoint_quirks_match_the_prediction_from_info) {
    for (const auto& p : providers()) {
        loop_stack s;
        if (p == "tcp;ofi_rxm" || p == "tcp" || p == "shm") {
            ASSERT_NO_FATAL_FAILURE(must_open_loop(p, {}, s));
        } else if (!open_loop(p, {}, s).empty()) {
            continue;
        }
        const auto predicted = loom::endpoint::quirks_for(s.info);
        const auto& q = s.ep.quirks();
        EXPECT_EQ(q.getopt_needs_enable, predicted.getopt_needs_enable) << p;
        EXPECT_EQ(q.broken_fetch_atomics, predicted.broken_fetch_atomics) << p;
        EXPECT_EQ(q.broken_atomic_inject, predicted.broken_atomic_inject) << p;
        EXPECT_EQ(q.broken_self_insert, predicted.broken_self_insert) << p;
        EXPECT_EQ(q.broken_self_insert, p.ends_with("ofi_rxm")) << p;
        EXPECT_EQ(q.getopt_needs_enable, p == "shm") << p;
    }
}

}  // namespace
