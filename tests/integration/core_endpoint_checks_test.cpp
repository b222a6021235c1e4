// In-process checks of real, enabled endpoints: what loom checks before calling the provider
// (destinations, limits, gates, registrations, capabilities) and the binding rules.
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

// ================================================================ pre-submission checks
class core_checks : public ::testing::TestWithParam<std::string> {};

TEST_P(core_checks, rdm_operations_need_a_destination) {
    loop_stack s;
    ASSERT_NO_FATAL_FAILURE(must_open_loop(GetParam(), {}, s));
    ASSERT_EQ(s.ep.type(), loom::endpoint_types::rdm);
    ASSERT_TRUE(s.ep.enabled());
    std::array<std::byte, 8> data{};
    loom::request_context ctx;
    const auto none = loom::fabric_addrs::unspecified;
    EXPECT_EQ(outcome(s.ep.send(data, none, nullptr, &ctx)), "invalid_argument");
    EXPECT_EQ(outcome(s.ep.send(data, &ctx)), "invalid_argument");
    EXPECT_EQ(outcome(s.ep.senddata(data, 1, none, nullptr, &ctx)), "invalid_argument");
    EXPECT_EQ(outcome(s.ep.inject(data)), "invalid_argument");
    EXPECT_EQ(outcome(s.ep.injectdata(data, 1)), "invalid_argument");
    EXPECT_EQ(outcome(s.ep.tagged_send(data, any_tag, none, nullptr, &ctx)), "invalid_argument");
    EXPECT_EQ(outcome(s.ep.tagged_inject(data, any_tag)), "invalid_argument");
    ::iovec iov{data.data(), data.size()};
    EXPECT_EQ(outcome(s.ep.sendv({&iov, 1}, {}, none, &ctx)), "invalid_argument");
    loom::msg::send_message<loom::request_context*> m{.iov = {iov}, .addr = none, .context = &ctx};
    EXPECT_EQ(outcome(loom::msg::sendmsg(s.ep, m)), "invalid_argument");
    expect_quiet(s.cq);
}

TEST_P(core_checks, send_checks_hold_at_the_limits_after_close_and_after_a_move) {
    // The send checks take one compare for state, capability and length: every boundary and
    // state change must still be refused before the provider is called.
    loop_stack s;
    ASSERT_NO_FATAL_FAILURE(must_open_loop(GetParam(), {}, s));
    loom::request_context ctx;
    std::array<std::byte, 8> data{};
    const std::size_t max = s.ep.max_msg_size();
    ASSERT_GT(max, 0U);
    // max_msg_size passes, one byte more is refused, for both families; other families
    // (RMA, atomics) take the full checks.
    for (const auto family : {loom::capability::msg, loom::capability::tagged}) {
        EXPECT_EQ(s.ep.check_tx(family, max, s.self, &ctx), 0);
        if (max != std::numeric_limits<std::size_t>::max()) {
            EXPECT_EQ(s.ep.check_tx(family, max + 1, s.self, &ctx), FI_EINVAL);
        }
        EXPECT_EQ(s.ep.check_tx(family, 0, loom::fabric_addrs::unspecified, &ctx), FI_EINVAL);
    }
    EXPECT_EQ(s.ep.check_tx(loom::capability::rma, 8, s.self, &ctx), FI_EINVAL);  // no FI_RMA asked
    // A missing context is refused where the provider needs one.
    if (s.ep.context_required()) {
        EXPECT_EQ(outcome(s.ep.send(data, s.self, nullptr, nullptr)), "invalid_argument");
        EXPECT_EQ(outcome(s.ep.tagged_send(data, any_tag, s.self, nullptr, nullptr)), "invalid_argument");
    }
    // A good send still goes (and completes).
    loom::request_context rctx;
    std::array<std::byte, 8> in{};
    loom_test::progress prog(s.cq);
    ASSERT_EQ(outcome(s.ep.tagged_recv(in, any_tag, 0, &rctx)), "ok");
    ASSERT_EQ(outcome(prog.retry([&] { return s.ep.tagged_send(data, any_tag, s.self, nullptr, &ctx); }, 2s)), "ok");
    (void)completed(prog, &ctx);
    (void)completed(prog, &rctx);
    // A moved-from endpoint refuses (bad_state) instead of handing the provider a null handle.
    loom::endpoint moved = std::move(s.ep);
    EXPECT_EQ(s.ep.check_tx(loom::capability::tagged, 8, s.self, &ctx), FI_EOPBADSTATE);
    EXPECT_EQ(outcome(s.ep.send(data, s.self, nullptr, &ctx)), "bad_state");
    EXPECT_EQ(outcome(s.ep.tagged_send(data, any_tag, s.self, nullptr, &ctx)), "bad_state");
    EXPECT_EQ(outcome(s.ep.tagged_inject(data, any_tag, s.self)), "bad_state");
    EXPECT_EQ(outcome(s.ep.tagged_recv(in, any_tag, 0, &rctx)), "bad_state");
    // The endpoint it moved to sends; once closed it refuses too.
    ASSERT_EQ(outcome(moved.tagged_recv(in, any_tag, 0, &rctx)), "ok");
    ASSERT_EQ(outcome(prog.retry([&] { return moved.tagged_send(data, any_tag, s.self, nullptr, &ctx); }, 2s)), "ok");
    (void)completed(prog, &ctx);
    (void)completed(prog, &rctx);
    ASSERT_EQ(outcome(moved.close()), "ok");
    EXPECT_EQ(outcome(moved.send(data, s.self, nullptr, &ctx)), "bad_state");
    EXPECT_EQ(outcome(moved.tagged_send(data, any_tag, s.self, nullptr, &ctx)), "bad_state");
}

/// Sends `data` to `to` from `from` with every gated send (send, senddata, tagged_send,
/// tagged_senddata) and receives each at `at` with the gated receives; all must complete with the
/// bytes sent.
template <class Dest>
void round_trip_through_gates(loom::endpoint& from, Dest to, loom::endpoint& at, loom_test::progress& prog) {
    for (int kind = 0; kind < 4; ++kind) {
        SCOPED_TRACE(kind);
        const bool tagged = kind >= 2, with_data = kind % 2 == 1;
        std::array<std::byte, 16> out{}, in{};
        loom_test::fill_pattern(out, static_cast<std::uint8_t>(kind + 1));
        loom::request_context sctx, rctx;
        ASSERT_EQ(outcome(tagged ? at.tagged_recv(in, any_tag, 0, &rctx) : at.recv(in, &rctx)), "ok");
        auto send = [&] {
            if (tagged)
                return with_data ? from.tagged_senddata(out, any_tag, 7, to, nullptr, &sctx)
                                 : from.tagged_send(out, any_tag, to, nullptr, &sctx);
            return with_data ? from.senddata(out, 7, to, nullptr, &sctx) : from.send(out, to, nullptr, &sctx);
        };
        ASSERT_EQ(outcome(prog.retry(send, 2s)), "ok");
        (void)completed(prog, &sctx);
        const auto ev = completed(prog, &rctx);
        EXPECT_EQ(ev.bytes_transferred, out.size());
        EXPECT_EQ(in, out);
    }
}

TEST_P(core_checks, sends_to_an_inserted_peer_and_receives_go_through_gates_that_follow_the_endpoint) {
    // Sends to a peer_addr (what av.insert returns) and receives without a source filter make no
    // check of their own: the endpoint's gates decide state, capability, context and length once,
    // at enable and close. Where the provider needs no check per operation the gate is the
    // endpoint itself; in every other state the operation must still be refused, and the gates
    // must follow the endpoint through a move.
    loop_stack s;
    ASSERT_NO_FATAL_FAILURE(must_open_loop(GetParam(), {}, s));
    ASSERT_TRUE(s.peer.has_value());
    const loom::peer_addr peer = *s.peer;
    EXPECT_EQ(peer, s.self);
    const bool unlimited = s.ep.max_msg_size() == std::numeric_limits<std::size_t>::max();
    EXPECT_EQ(s.ep.direct_sends(), unlimited && !s.ep.context_required());
    EXPECT_EQ(s.ep.direct_receives(), !s.ep.context_required());
    // What this machine's providers report: nothing to check per operation, but for sends on
    // sockets, whose max_msg_size is 2^64 - 4097 (the checking gate then carries the sends).
    EXPECT_TRUE(s.ep.direct_receives());
    EXPECT_EQ(s.ep.receive_gate(loom::capability::tagged), s.ep.native());
    EXPECT_EQ(s.ep.direct_sends(), GetParam() != "sockets");
    loom_test::progress prog(s.cq);
    ASSERT_NO_FATAL_FAILURE(round_trip_through_gates(s.ep, peer, s.ep, prog));
    // Moved from: every gated send and receive is bad_state, nothing reaches the provider.
    std::array<std::byte, 8> data{}, in{};
    loom::request_context ctx;
    loom::endpoint moved = std::move(s.ep);
    EXPECT_FALSE(s.ep.direct_sends());
    EXPECT_FALSE(s.ep.direct_receives());
    EXPECT_EQ(outcome(s.ep.send(data, peer, nullptr, &ctx)), "bad_state");
    EXPECT_EQ(outcome(s.ep.senddata(data, 1, peer, nullptr, &ctx)), "bad_state");
    EXPECT_EQ(outcome(s.ep.tagged_send(data, any_tag, peer, nullptr, &ctx)), "bad_state");
    EXPECT_EQ(outcome(s.ep.tagged_senddata(data, any_tag, 1, peer, nullptr, &ctx)), "bad_state");
    EXPECT_EQ(outcome(loom::send(s.ep, data, peer, nullptr, &ctx)), "bad_state");
    EXPECT_EQ(outcome(loom::tagged_send(s.ep, data, any_tag, peer, nullptr, &ctx)), "bad_state");
    EXPECT_EQ(outcome(s.ep.recv(in, &ctx)), "bad_state");
    EXPECT_EQ(outcome(s.ep.tagged_recv(in, any_tag, 0, &ctx)), "bad_state");
    // The endpoint it moved to has the gates.
    EXPECT_EQ(moved.direct_sends(), unlimited && !moved.context_required());
    ASSERT_NO_FATAL_FAILURE(round_trip_through_gates(moved, peer, moved, prog));
    // Closed: bad_state again.
    ASSERT_EQ(outcome(moved.close()), "ok");
    EXPECT_FALSE(moved.direct_sends());
    EXPECT_EQ(outcome(moved.send(data, peer, nullptr, &ctx)), "bad_state");
    EXPECT_EQ(outcome(moved.tagged_senddata(data, any_tag, 1, peer, nullptr, &ctx)), "bad_state");
    EXPECT_EQ(outcome(moved.tagged_recv(in, any_tag, 0, &ctx)), "bad_state");
    expect_quiet(s.cq);
}

TEST_P(core_checks, a_provider_that_needs_checks_gets_them_from_the_gate) {
    // None of this machine's providers needs an operation context, and only sockets limits
    // message sizes; an endpoint adopted with attributes that say so (FI_CONTEXT2 mode,
    // max_msg_size 16) must get the checks from its gates: oversized sends and missing contexts
    // refused, everything else forwarded to the provider. The gates live in the endpoint and
    // must lead to the copy a move made, not to the object it was moved from.
    loop_stack s;
    ASSERT_NO_FATAL_FAILURE(must_open_loop(GetParam(), {}, s));
    ::fi_info* attrs = ::fi_dupinfo(s.info.native());
    ASSERT_NE(attrs, nullptr);
    attrs->ep_attr->max_msg_size = 16;
    attrs->mode |= FI_CONTEXT2;
    ::fid_ep* native = nullptr;
    ASSERT_EQ(::fi_endpoint(s.domain.native(), const_cast<::fi_info*>(s.info.native()), &native, nullptr), 0);
    std::optional<loom::endpoint> first{loom::endpoint::adopt_native(native, *attrs, s.domain)};
    ::fi_freeinfo(attrs);
    ASSERT_EQ(outcome(first->bind_cq(s.cq, loom::cq_bind::transmit | loom::cq_bind::recv)), "ok");
    auto av2 = loom::address_vector::create(s.domain);
    ASSERT_TRUE(av2.has_value());
    ASSERT_EQ(outcome(first->bind_av(*av2)), "ok");
    ASSERT_EQ(outcome(first->enable()), "ok");
    loom::endpoint ep = std::move(*first);
    first.reset();
    EXPECT_TRUE(ep.context_required());
    EXPECT_EQ(ep.max_msg_size(), 16U);
    EXPECT_FALSE(ep.direct_sends());
    EXPECT_FALSE(ep.direct_receives());
    const auto* gate = reinterpret_cast<const std::byte*>(ep.receive_gate(loom::capability::tagged));
    const auto* self = reinterpret_cast<const std::byte*>(&ep);
    EXPECT_TRUE(gate >= self && gate < self + sizeof(loom::endpoint)) << "the gate stayed with the moved-from object";

    auto to_loop = av2->insert(*s.ep.name());  // from ep to the loop's endpoint
    ASSERT_TRUE(to_loop.has_value());
    auto me = ep.name();
    ASSERT_TRUE(me.has_value());
    auto to_ep = s.av.insert(*me);  // from the loop's endpoint to ep
    ASSERT_TRUE(to_ep.has_value());

    std::array<std::byte, 17> big{};
    std::array<std::byte, 16> in{};
    loom::request_context ctx;
    const auto fits = std::span<const std::byte>{big}.first(16);
    EXPECT_EQ(outcome(ep.send(big, *to_loop, nullptr, &ctx)), "invalid_argument");
    EXPECT_EQ(outcome(ep.senddata(big, 1, *to_loop, nullptr, &ctx)), "invalid_argument");
    EXPECT_EQ(outcome(ep.tagged_send(big, any_tag, *to_loop, nullptr, &ctx)), "invalid_argument");
    EXPECT_EQ(outcome(ep.tagged_senddata(big, any_tag, 1, *to_loop, nullptr, &ctx)), "invalid_argument");
    EXPECT_EQ(outcome(ep.send(fits, *to_loop, nullptr, nullptr)), "invalid_argument");
    EXPECT_EQ(outcome(ep.tagged_send(fits, any_tag, *to_loop, nullptr, nullptr)), "invalid_argument");
    EXPECT_EQ(outcome(ep.recv(in, nullptr)), "invalid_argument");
    EXPECT_EQ(outcome(ep.tagged_recv(in, any_tag, 0, nullptr)), "invalid_argument");
    expect_quiet(s.cq);
    // What passes the checks reaches the provider, both ways.
    loom_test::progress prog(s.cq);
    ASSERT_NO_FATAL_FAILURE(round_trip_through_gates(ep, *to_loop, s.ep, prog));
    ASSERT_NO_FATAL_FAILURE(round_trip_through_gates(s.ep, *to_ep, ep, prog));
    ASSERT_EQ(outcome(ep.close()), "ok");
    EXPECT_EQ(outcome(ep.send(fits, *to_loop, nullptr, &ctx)), "bad_state");
    EXPECT_EQ(outcome(ep.tagged_recv(in, any_tag, 0, &ctx)), "bad_state");
}

TEST_P(core_checks, inject_above_inject_size_is_rejected) {
    std::vector<std::byte> rbuf;
    loom::request_context rctx, rctx2;
    loop_stack s;
    ASSERT_NO_FATAL_FAILURE(must_open_loop(GetParam(), {}, s));
    const auto limit = s.ep.inject_size();
    ASSERT_GT(limit, 0u) << "provider reports no inject support";
    std::vector<std::byte> data(limit + 1);
    loom_test::fill_pattern(data, 5);
    EXPECT_EQ(outcome(s.ep.inject(data, s.self)), "invalid_argument");
    EXPECT_EQ(outcome(s.ep.injectdata(data, 7, s.self)), "invalid_argument");
    EXPECT_EQ(outcome(s.ep.tagged_inject(data, any_tag, s.self)), "invalid_argument");
    EXPECT_EQ(outcome(s.ep.tagged_injectdata(data, any_tag, 7, s.self)), "invalid_argument");
    expect_quiet(s.cq);

    // Exactly inject_size() bytes go through and arrive intact.
    loom_test::progress prog(s.cq);
    rbuf.resize(limit + 1);
    ASSERT_EQ(outcome(s.ep.recv(rbuf, loom::fabric_addrs::unspecified, nullptr, &rctx)), "ok");
    const std::span<const std::byte> fits{data.data(), limit};
    ASSERT_EQ(outcome(prog.retry([&] { return s.ep.inject(fits, s.self); }, 2s)), "ok");
    auto ev = completed(prog, &rctx);
    EXPECT_EQ(ev.bytes_transferred, limit);
    EXPECT_FALSE(loom_test::check_pattern(std::span{rbuf}.first(limit), 5).has_value());
    ASSERT_EQ(outcome(s.ep.tagged_recv(rbuf, any_tag, 0, &rctx2)), "ok");
    ASSERT_EQ(outcome(prog.retry([&] { return s.ep.tagged_inject(fits, any_tag, s.self); }, 2s)), "ok");
    auto tev = completed(prog, &rctx2);
    EXPECT_EQ(tev.bytes_transferred, limit);
    EXPECT_EQ(tev.tag, any_tag);
}

TEST_P(core_checks, iov_counts_above_the_limits_are_rejected) {
    loop_stack s;
    ASSERT_NO_FATAL_FAILURE(must_open_loop(GetParam(), {}, s));
    const auto lim = s.ep.iov_limits();
    ASSERT_GT(lim.tx, 0u);
    ASSERT_GT(lim.rx, 0u);
    if (lim.tx > 4096 || lim.rx > 4096) GTEST_SKIP() << "iov limits too large to exceed cheaply";
    std::array<std::byte, 4> cell{};
    const std::vector<::iovec> tx(lim.tx + 1, ::iovec{cell.data(), 1});
    const std::vector<::iovec> rx(lim.rx + 1, ::iovec{cell.data(), 1});
    loom::request_context ctx;
    EXPECT_EQ(outcome(s.ep.sendv(tx, {}, s.self, &ctx)), "invalid_argument");
    EXPECT_EQ(outcome(s.ep.tagged_sendv(tx, {}, any_tag, s.self, &ctx)), "invalid_argument");
    EXPECT_EQ(outcome(s.ep.recvv(rx, {}, loom::fabric_addrs::unspecified, &ctx)), "invalid_argument");
    EXPECT_EQ(outcome(s.ep.tagged_recvv(rx, {}, any_tag, 0, loom::fabric_addrs::unspecified, &ctx)),
              "invalid_argument");
    // A descriptor array whose length differs from the IOV's.
    const std::vector<void*> desc(1, nullptr);
    const std::span<const ::iovec> two{tx.data(), std::min<std::size_t>(2, lim.tx)};
    if (two.size() == 2) {
        EXPECT_EQ(outcome(s.ep.sendv(two, desc, s.self, &ctx)), "invalid_argument");
    }
    expect_quiet(s.cq);
}

TEST_P(core_checks, registered_spans_must_lie_inside_the_registration) {
    alignas(64) std::array<std::byte, 128> area{};
    alignas(64) std::array<std::byte, 128> other_area{};
    alignas(64) std::array<std::byte, 64> rbuf{};
    loom::request_context ctx, rctx, sctx;
    loop_stack s;
    ASSERT_NO_FATAL_FAILURE(must_open_loop(GetParam(), {}, s));
    const auto access = loom::mr_access_flags::send | loom::mr_access_flags::recv;
    const std::span<std::byte> registered{area.data() + 8, 64};
    auto mr = loom::memory_region::register_memory(s.domain, registered, access);
    ASSERT_TRUE(mr) << outcome(mr.error());
    auto rmr = loom::memory_region::register_memory(s.domain, std::span<std::byte>{rbuf}, access);
    ASSERT_TRUE(rmr) << outcome(rmr.error());
    ASSERT_TRUE(mr->usable_with(s.ep));

    const std::span<const std::byte> past_end{area.data() + 9, 64};  // one byte past the end
    const std::span<const std::byte> before{area.data() + 7, 8};     // starts before it
    const std::span<std::byte> past_end_rx{area.data() + 9, 64};
    EXPECT_EQ(outcome(s.ep.send(past_end, *mr, s.self, &ctx)), "invalid_argument");
    EXPECT_EQ(outcome(s.ep.send(before, *mr, s.self, &ctx)), "invalid_argument");
    EXPECT_EQ(outcome(s.ep.tagged_send(past_end, *mr, any_tag, s.self, &ctx)), "invalid_argument");
    EXPECT_EQ(outcome(s.ep.recv(past_end_rx, *mr, loom::fabric_addrs::unspecified, &ctx)), "invalid_argument");
    EXPECT_EQ(outcome(s.ep.tagged_recv(past_end_rx, *mr, any_tag, 0, loom::fabric_addrs::unspecified, &ctx)),
              "invalid_argument");

    // A registration of another domain is never usable with this endpoint.
    auto dom2 = loom::domain::create(s.fabric, s.info);
    ASSERT_TRUE(dom2) << outcome(dom2.error());
    {
        auto foreign = loom::memory_region::register_memory(*dom2, std::span<std::byte>{other_area}, access);
        ASSERT_TRUE(foreign) << outcome(foreign.error());
        EXPECT_FALSE(foreign->usable_with(s.ep));
        EXPECT_EQ(outcome(s.ep.send(std::span<const std::byte>{other_area}.first(16), *foreign, s.self, &ctx)),
                  "invalid_argument");
        EXPECT_EQ(outcome(s.ep.recv(std::span{other_area}, *foreign, loom::fabric_addrs::unspecified, &ctx)),
                  "invalid_argument");
    }
    expect_quiet(s.cq);
    EXPECT_EQ(outcome(dom2->close()), "ok");

    // The whole registration (first to last byte) is accepted and delivered.
    loom_test::progress prog(s.cq);
    loom_test::fill_pattern(registered, 9);
    ASSERT_EQ(outcome(s.ep.recv(std::span{rbuf}, *rmr, loom::fabric_addrs::unspecified, &rctx)), "ok");
    ASSERT_EQ(outcome(prog.retry([&] { return s.ep.send(registered, *mr, s.self, &sctx); }, 2s)), "ok");
    auto ev = completed(prog, &rctx);
    EXPECT_EQ(ev.bytes_transferred, 64u);
    EXPECT_FALSE(loom_test::check_pattern(rbuf, 9).has_value());
    (void)completed(prog, &sctx);
}

TEST_P(core_checks, tagged_operations_need_the_tagged_capability) {
    loop_stack s;
    ASSERT_NO_FATAL_FAILURE(must_open_loop(GetParam(), {.caps = loom::capability::msg}, s));
    if (s.ep.capabilities().any(loom::capability::tagged))
        GTEST_SKIP() << GetParam() << " grants tagged without being asked: " << loom::to_string(s.ep.capabilities());
    std::array<std::byte, 8> data{};
    std::array<std::byte, 8> buf{};
    loom::request_context ctx;
    ::iovec iov{buf.data(), buf.size()};
    EXPECT_EQ(outcome(s.ep.tagged_send(data, any_tag, s.self, nullptr, &ctx)), "invalid_argument");
    EXPECT_EQ(outcome(s.ep.tagged_senddata(data, any_tag, 1, s.self, nullptr, &ctx)), "invalid_argument");
    EXPECT_EQ(outcome(s.ep.tagged_inject(data, any_tag, s.self)), "invalid_argument");
    EXPECT_EQ(outcome(s.ep.tagged_sendv({&iov, 1}, {}, any_tag, s.self, &ctx)), "invalid_argument");
    EXPECT_EQ(outcome(s.ep.tagged_recv(buf, any_tag, 0, &ctx)), "invalid_argument");
    EXPECT_EQ(outcome(s.ep.tagged_recvv({&iov, 1}, {}, any_tag, 0, loom::fabric_addrs::unspecified, &ctx)),
              "invalid_argument");
    loom::msg::tagged_send_message<loom::request_context*> tm{
        .iov = {iov}, .addr = s.self, .tag = any_tag, .context = &ctx};
    EXPECT_EQ(outcome(loom::msg::tagged_sendmsg(s.ep, tm)), "invalid_argument");
    loom::msg::tagged_receive_message<loom::request_context*> trm{.iov = {iov}, .tag = any_tag, .context = &ctx};
    EXPECT_EQ(outcome(loom::msg::tagged_recvmsg(s.ep, trm)), "invalid_argument");
    expect_quiet(s.cq);
}

TEST_P(core_checks, directed_receive_needs_the_directed_recv_capability) {
    loop_stack s;
    ASSERT_NO_FATAL_FAILURE(must_open_loop(GetParam(), {}, s));
    if (s.ep.capabilities().any(loom::capability::directed_recv))
        GTEST_SKIP() << GetParam() << " grants directed_recv without being asked";
    std::array<std::byte, 8> buf{};
    loom::request_context ctx;
    ::iovec iov{buf.data(), buf.size()};
    EXPECT_EQ(outcome(s.ep.recv(buf, s.self, nullptr, &ctx)), "invalid_argument");
    EXPECT_EQ(outcome(s.ep.recvv({&iov, 1}, {}, s.self, &ctx)), "invalid_argument");
    EXPECT_EQ(outcome(s.ep.tagged_recv(buf, any_tag, 0, s.self, nullptr, &ctx)), "invalid_argument");
    loom::msg::receive_message<loom::request_context*> rm{.iov = {iov}, .addr = s.self, .context = &ctx};
    EXPECT_EQ(outcome(loom::msg::recvmsg(s.ep, rm)), "invalid_argument");
    expect_quiet(s.cq);
}

TEST_P(core_checks, binding_rules) {
    loop_stack s;
    ASSERT_NO_FATAL_FAILURE(must_open_loop(GetParam(), {}, s));
    // Objects of a second domain of the same fabric.
    auto dom2 = loom::domain::create(s.fabric, s.info);
    ASSERT_TRUE(dom2) << outcome(dom2.error());
    {
        auto cq2 = loom::completion_queue::create(*dom2, {.size = 16});
        ASSERT_TRUE(cq2) << outcome(cq2.error());
        auto av2 = loom::address_vector::create(*dom2);
        ASSERT_TRUE(av2) << outcome(av2.error());
        auto cntr2 = loom::counter::create(*dom2);
        ASSERT_TRUE(cntr2) << outcome(cntr2.error());
        auto cntr = loom::counter::create(s.domain);
        ASSERT_TRUE(cntr) << outcome(cntr.error());

        auto fresh = loom::endpoint::create(s.domain, s.info);
        ASSERT_TRUE(fresh) << outcome(fresh.error());
        EXPECT_FALSE(fresh->enabled());
        EXPECT_EQ(outcome(fresh->bind_cq(s.cq, loom::cq_bind{})), "invalid_argument");
        EXPECT_EQ(outcome(fresh->bind_cq(s.cq, loom::cq_bind::selective_completion)), "invalid_argument");
        EXPECT_EQ(outcome(fresh->bind_cq(*cq2, loom::cq_bind::transmit | loom::cq_bind::recv)), "invalid_argument");
        EXPECT_EQ(outcome(fresh->bind_av(*av2)), "invalid_argument");
        EXPECT_EQ(outcome(fresh->bind_counter(*cntr2, loom::counter_bind::send)), "invalid_argument");
        EXPECT_EQ(outcome(fresh->bind_counter(*cntr, loom::counter_bind{})), "invalid_argument");
        // Sends before enable are refused as bad_state.
        std::array<std::byte, 4> data{};
        loom::request_context ctx;
        EXPECT_EQ(outcome(fresh->send(data, s.self, nullptr, &ctx)), "bad_state");

        // An RDM endpoint cannot be enabled without an address vector.
        ASSERT_EQ(outcome(fresh->bind_cq(s.cq, loom::cq_bind::transmit | loom::cq_bind::recv)), "ok");
        EXPECT_EQ(outcome(fresh->enable()), "no_address_vector");
        EXPECT_FALSE(fresh->enabled());
        ASSERT_EQ(outcome(fresh->bind_av(s.av)), "ok");
        EXPECT_EQ(outcome(fresh->enable()), "ok");
        EXPECT_TRUE(fresh->enabled());

        // Every bind after enable is bad_state.
        EXPECT_EQ(outcome(s.ep.bind_cq(s.cq, loom::cq_bind::transmit)), "bad_state");
        EXPECT_EQ(outcome(s.ep.bind_av(s.av)), "bad_state");
        EXPECT_EQ(outcome(s.ep.bind_counter(*cntr, loom::counter_bind::send)), "bad_state");
        EXPECT_EQ(outcome(fresh->bind_counter(*cntr, loom::counter_bind::recv)), "bad_state");
        EXPECT_EQ(outcome(fresh->close()), "ok");
    }
    EXPECT_EQ(outcome(dom2->close()), "ok");
}

INSTANTIATE_TEST_SUITE_P(providers, core_checks, ::testing::ValuesIn(providers()), param_name);

}  // namespace
