// Every asynchronous operation of the Asio front end with every kind of completion token
// (callback, use_future, deferred, as_tuple of a callback, use_awaitable and as_tuple of
// use_awaitable in co_spawn), between this process and a loom-test-peer process: on tcp with
// the queue's wait descriptor, on shm (timer) and on tcp;ofi_rxm (manual progress) with both.
// Each case sends to the peer and receives from it (or writes and reads its exposed region);
// the peer checks the bytes it got, this side the bytes, the length, one handler call, and an
// untouched byte after the message.
#include "asio_peer_fixture.hpp"
#include "asio_tokens.hpp"

#include <loom/asio.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

using namespace loom_test;
namespace la = loom::asio;

namespace {

constexpr auto caps =
    loom::capability::msg | loom::capability::tagged | loom::capability::rma | loom::capability::directed_recv;
/// Receives are posted with this much room: every payload is shorter.
constexpr std::size_t room = 16384;

using matrix_case = std::tuple<asio_case, token>;

class token_matrix : public asio_peer_fixture<matrix_case> {
protected:
    token_matrix() : asio_peer_fixture(caps) {}
    [[nodiscard]] auto provider_case() const -> const asio_case& override { return std::get<0>(GetParam()); }
    void release_registrations() override { area_mr_ = {}; }
    void SetUp() override {
        asio_peer_fixture::SetUp();
        if (!HasFatalFailure()) ep_->set_default_peer(peer());
    }
    auto ex() -> ::asio::io_context::executor_type { return ioc_.get_executor(); }
    auto drive() -> token_driver { return {ioc_, std::get<1>(GetParam())}; }

    /// A payload of its own for each operation and token (its size and tag follow): seed_
    /// goes to the peer, seed_ + 1 comes from it. The receive area is cleared.
    void prepare_case(int op) {
        seed_ = static_cast<std::uint64_t>(op * 10 + static_cast<int>(std::get<1>(GetParam())));
        size_ = 700 + (seed_ * 131) % 9000;
        tag_ = 0x100000 + seed_;
        fill_pattern(bufs_->send(size_), seed_);
        std::ranges::fill(bufs_->recv(room + 1), std::byte{0});
    }
    auto sendable() -> la::const_registered_buffer {
        return {::asio::buffer(bufs_->send(size_).data(), size_), &bufs_->send_mr};
    }
    auto receivable() -> la::mutable_registered_buffer {
        return {::asio::buffer(bufs_->recv(room).data(), room), &bufs_->recv_mr};
    }

    /// Starts the receive and the send with this case's token; the peer sends its payload
    /// (tagged tag_ + 1 where k is tagged) and checks the one it receives (tagged tag_).
    template <class Receive, class Send>
    void exchange(int op, kind k, Receive receive, Send send) {
        prepare_case(op);
        peer_run({.code = op::post_recv, .k = k, .slot = 0, .peer = -1, .size = size_, .tag = tag_});
        token_driver d = drive();
        outcome& got = first_;
        outcome& sent = second_;
        d.start(receive, got);
        d.start(send, sent);
        ASSERT_TRUE(d.submitted()) << "a coroutine never submitted its operation";
        peer_run({.code = op::send, .k = k, .peer = 0, .size = size_, .seed = seed_ + 1, .tag = tag_ + 1});
        const auto at_peer = peer_run({.code = op::wait_recv, .slot = 0, .size = size_, .seed = seed_});
        EXPECT_EQ(at_peer.value, 0u) << "the peer's byte " << at_peer.value - 1 << " differs";
        EXPECT_EQ(at_peer.bytes, size_);
        if (k == kind::tagged) {
            EXPECT_EQ(at_peer.tag, tag_);
        }
        ASSERT_TRUE(d.finish()) << "received: " << got.done() << ", sent: " << sent.done();
        expect_moved(sent, size_, "send");
        expect_moved(got, size_, "receive");
        EXPECT_FALSE(check_pattern(bufs_->recv(size_), seed_ + 1)) << "received bytes differ";
        EXPECT_EQ(bufs_->recv(size_ + 1)[size_], std::byte{0}) << "a byte past the message changed";
    }

    // What the handlers write to outlives them (a failed case leaves operations behind).
    outcome first_, second_;
    std::vector<std::byte> area_;
    loom::memory_region area_mr_;
    std::uint64_t seed_{0};
    std::size_t size_{0};
    std::uint64_t tag_{0};
};

TEST_P(token_matrix, async_send_and_async_receive) {
    exchange(
        1, kind::msg, [&](auto t) { return ep_->async_receive(receivable(), std::move(t)); },
        [&](auto t) { return ep_->async_send(sendable(), std::move(t)); });
}

TEST_P(token_matrix, async_send_to_and_async_receive_from) {
    exchange(
        2, kind::msg, [&](auto t) { return ep_->async_receive_from(receivable(), peer(), std::move(t)); },
        [&](auto t) { return ep_->async_send_to(sendable(), peer(), std::move(t)); });
}

TEST_P(token_matrix, async_tagged_send_and_async_tagged_receive) {
    exchange(
        3, kind::tagged, [&](auto t) { return ep_->async_tagged_receive(receivable(), tag_ + 1, std::move(t)); },
        [&](auto t) { return ep_->async_tagged_send(sendable(), tag_, std::move(t)); });
}

TEST_P(token_matrix, async_tagged_send_to_and_async_tagged_receive_from_with_ignored_bits) {
    // The receive's tag differs from the peer's message's in ignored bits only.
    exchange(
        4, kind::tagged,
        [&](auto t) {
            return ep_->async_tagged_receive_from(receivable(), peer(), (tag_ + 1) ^ 0x5a, 0xff, std::move(t));
        },
        [&](auto t) { return ep_->async_tagged_send_to(sendable(), peer(), tag_, std::move(t)); });
}

TEST_P(token_matrix, initiate_fabric_send_and_receive_on_a_borrowed_endpoint) {
    auto& native = ep_->native();
    exchange(
        5, kind::msg,
        [&](auto t) {
            return la::initiate_fabric_receive(ex(), native, local_->cq, receivable(), std::move(t), peer());
        },
        [&](auto t) { return la::initiate_fabric_send(ex(), native, local_->cq, sendable(), std::move(t), peer()); });
}

TEST_P(token_matrix, initiate_fabric_tagged_send_and_receive_on_a_borrowed_endpoint) {
    auto& native = ep_->native();
    exchange(
        6, kind::tagged,
        [&](auto t) {
            return la::initiate_fabric_tagged_receive(ex(), native, local_->cq, receivable(), tag_ + 1, 0,
                                                      std::move(t));
        },
        [&](auto t) {
            return la::initiate_fabric_tagged_send(ex(), native, local_->cq, sendable(), tag_, std::move(t), peer());
        });
}

TEST_P(token_matrix, async_write_to_and_async_read_from) {
    // The peer exposes a region holding the payload of seed_ + 1: this side reads its first
    // size_ bytes and writes its own payload at offset `room`, both at once.
    prepare_case(7);
    const auto exposed = peer_run({.code = op::expose, .size = 2 * room, .seed = seed_ + 1});
    const loom::remote_memory remote{exposed.value, exposed.tag, static_cast<std::size_t>(exposed.bytes)};
    area_.assign(2 * room + 1, std::byte{0});
    fill_pattern(std::span{area_}.first(size_), seed_);
    auto mr = loom::memory_region::register_memory(local_->domain, std::span{area_},
                                                   loom::mr_access_flags::read | loom::mr_access_flags::write);
    ASSERT_TRUE(mr) << mr.error().message();
    area_mr_ = std::move(*mr);
    token_driver d = drive();
    outcome& wrote = first_;
    outcome& read = second_;
    d.start(
        [&](auto t) {
            return ep_->async_write_to(::asio::buffer(area_.data(), size_), area_mr_, peer(),
                                       remote.subregion(room, size_).value(), std::move(t));
        },
        wrote);
    d.start(
        [&](auto t) {
            return ep_->async_read_from(::asio::buffer(area_.data() + room, size_), area_mr_, peer(),
                                        remote.subregion(0, size_).value(), std::move(t));
        },
        read);
    ASSERT_TRUE(d.submitted()) << "a coroutine never submitted its operation";
    ASSERT_TRUE(d.finish()) << "wrote: " << wrote.done() << ", read: " << read.done();
    expect_moved(wrote, size_, "write");
    expect_moved(read, size_, "read");
    EXPECT_FALSE(check_pattern(std::span{area_}.subspan(room, size_), seed_ + 1)) << "the bytes read differ";
    EXPECT_EQ(area_[room + size_], std::byte{0}) << "a byte past the read changed";
    EXPECT_EQ(peer_run({.code = op::verify, .size = size_, .seed = seed_, .tag = room}).value, 0u)
        << "the peer's region does not hold the bytes written";
}

auto matrix_name(const ::testing::TestParamInfo<matrix_case>& info) -> std::string {
    const ::testing::TestParamInfo<asio_case> provider{std::get<0>(info.param), info.index};
    return asio_case_name(provider) + "_" + token_name(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(providers, token_matrix,
                         ::testing::Combine(::testing::Values(asio_case{"tcp", true}, asio_case{"shm", false},
                                                              asio_case{"tcp;ofi_rxm", false},
                                                              asio_case{"tcp;ofi_rxm", true}),
                                            ::testing::ValuesIn(all_tokens)),
                         matrix_name);

}  // namespace
