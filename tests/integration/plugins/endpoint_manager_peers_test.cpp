// The endpoint manager when its peer goes: killed (a receiver in a child process) or closed
// in order before this side (in process). LOOM_PEER_TIMEOUT_MS is short for this binary (ctest).
#include "manager_side.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace loom_test::manager;

/// A receiver in another process (manager_receiver_child.cpp: a receive endpoint and 1 MiB
/// registered for one-sided operations) that polls until killed; the parent's `tx` is
/// connected to it.
struct receiver_process {
    pid_t pid{-1};
    lp::send_endpoint_id out{};
    lp::remote_key_bytes key{};
    lp::handle_bytes address{};  ///< its receive endpoint's

    explicit receiver_process(side& tx) {
        int fds[2];
        if (::pipe(fds) != 0) return;
        const std::string fd = std::to_string(fds[1]);
        pid = ::fork();
        if (pid == 0) {
            ::close(fds[0]);
            ::execl(LOOM_TEST_MANAGER_RECEIVER, LOOM_TEST_MANAGER_RECEIVER, fd.c_str(), nullptr);
            ::_exit(127);
        }
        ::close(fds[1]);
        const bool got = ::read(fds[0], address.data(), address.size()) == static_cast<ssize_t>(address.size()) &&
                         ::read(fds[0], key.data(), key.size()) == static_cast<ssize_t>(key.size());
        ::close(fds[0]);
        if (!got) return;
        out = tx.m->open_send_endpoint(address, {.mode = lp::send_mode::zero_copy}).value();
        const auto deadline = std::chrono::steady_clock::now() + 20s;
        while (tx.count(lp::event_kind::connected) == 0 && std::chrono::steady_clock::now() < deadline) tx.m->poll();
    }
    void kill() const {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
    }
};

/// Polls `tx` until `n` events of kind `k` or 20 s.
auto poll_for(side& tx, lp::event_kind k, std::size_t n) -> bool {
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (tx.count(k) < n && std::chrono::steady_clock::now() < deadline) tx.m->poll();
    return tx.count(k) == n;
}

TEST(EndpointManagerPeers, AKilledReceiverFailsTheSendsWaitingOnIt) {
    // The receiver is another process, killed once connected; LOOM_PEER_TIMEOUT_MS is short for
    // this binary (ctest). (A receiver closed in the same process is no test: shm maps its
    // peers' regions, and an inject into one its owner unmapped faults inside the provider.)
    side tx;
    ASSERT_TRUE(tx.m);
    receiver_process peer(tx);
    ASSERT_EQ(tx.count(lp::event_kind::connected), 1U);
    peer.kill();
    std::vector<std::byte> big(1 << 20);
    const auto killed = std::chrono::steady_clock::now();
    ASSERT_TRUE(tx.m->send(peer.out, big, nullptr, {}));  // a rendezvous: waits for a clear-to-send that never comes
    ASSERT_TRUE(poll_for(tx, lp::event_kind::send_complete, 1));
    EXPECT_TRUE(tx.of(lp::event_kind::send_complete)[0].e.error);
    EXPECT_LE(tx.count(lp::event_kind::peer_lost), 1U);  // said once, where the monitor was the one to tell
    EXPECT_LT(std::chrono::steady_clock::now() - killed, 10s);
    EXPECT_TRUE(tx.m->close_send_endpoint(peer.out));
}

TEST(EndpointManagerPeers, AKilledTargetEndsTheOneSidedOperationsInFlightOnce) {
    // On shm such operations never complete: the manager ends them when the peer is lost.
    std::vector<std::byte> src(1 << 20), back(1 << 20);  // outlive the manager (the provider may hold them)
    side tx;
    ASSERT_TRUE(tx.m);
    receiver_process peer(tx);
    ASSERT_EQ(tx.count(lp::event_kind::connected), 1U);
    auto smh = tx.m->register_memory(src).value();
    auto bmh = tx.m->register_memory(back).value();
    peer.kill();
    const auto killed = std::chrono::steady_clock::now();
    int w = 0, r = 0;
    ASSERT_TRUE(tx.m->write(peer.out, src, smh, peer.key, 0, std::nullopt, &w, lp::write_completion::delivered));
    ASSERT_TRUE(tx.m->read(peer.out, back, bmh, peer.key, 0, &r));
    ASSERT_TRUE(poll_for(tx, lp::event_kind::write_complete, 1));
    ASSERT_TRUE(poll_for(tx, lp::event_kind::read_complete, 1));
    EXPECT_LT(std::chrono::steady_clock::now() - killed, 10s);
    EXPECT_TRUE(tx.of(lp::event_kind::write_complete)[0].e.error);
    EXPECT_TRUE(tx.of(lp::event_kind::read_complete)[0].e.error);
    EXPECT_EQ(tx.of(lp::event_kind::write_complete)[0].e.context, &w);
    EXPECT_EQ(tx.of(lp::event_kind::read_complete)[0].e.context, &r);
    for (int i = 0; i < 100; ++i) tx.m->poll();  // a late completion of the provider says nothing more
    EXPECT_EQ(tx.count(lp::event_kind::write_complete) + tx.count(lp::event_kind::read_complete), 2U);
    EXPECT_TRUE(tx.m->close_send_endpoint(peer.out));
    tx.m->deregister(smh);
    tx.m->deregister(bmh);
}

TEST(EndpointManagerPeers, ALostPeerFailsEveryConnectionToItAtOnce) {
    // Two send endpoints to one killed receiver: once the first one's write fails, the second
    // is lost too, though nothing of its own had waited yet (its clock would start only now).
    std::vector<std::byte> src(1 << 20);  // outlives the manager (the provider may hold it)
    side tx;
    ASSERT_TRUE(tx.m);
    receiver_process peer(tx);
    ASSERT_EQ(tx.count(lp::event_kind::connected), 1U);
    const auto second = tx.m->open_send_endpoint(peer.address, {.mode = lp::send_mode::zero_copy}).value();
    ASSERT_TRUE(poll_for(tx, lp::event_kind::connected, 2));
    auto smh = tx.m->register_memory(src).value();
    peer.kill();
    int w = 0;
    ASSERT_TRUE(tx.m->write(peer.out, src, smh, peer.key, 0, std::nullopt, &w, lp::write_completion::delivered));
    ASSERT_TRUE(poll_for(tx, lp::event_kind::write_complete, 1));
    EXPECT_TRUE(tx.of(lp::event_kind::write_complete)[0].e.error);
    auto late = tx.m->write(second, src, smh, peer.key, 0, std::nullopt, &w, lp::write_completion::delivered);
    ASSERT_FALSE(late) << "the second connection to the lost peer still took a write";
    EXPECT_EQ(late.error(), code(loom::errc::connection_aborted));
    EXPECT_TRUE(poll_for(tx, lp::event_kind::peer_lost, 2));  // each endpoint says so once
    EXPECT_TRUE(tx.m->close_send_endpoint(peer.out));
    EXPECT_TRUE(tx.m->close_send_endpoint(second));
    tx.m->deregister(smh);
}

TEST(EndpointManagerPeers, AReceiverThatClosesFirstTellsItsSender) {
    // The receiving manager goes first, in order: its sender hears so (peer_closed, shutdown)
    // instead of its monitor giving the peer up for its silence after the timeout (peer_lost),
    // refuses what comes after and closes without a goodbye to wait out.
    side rx, tx;
    lp::receive_endpoint_id in{};
    lp::send_endpoint_id out{};
    connect_sides(rx, tx, {}, {.mode = lp::send_mode::buffered}, in, out);
    rx.m.reset();
    ASSERT_TRUE(poll_for(tx, lp::event_kind::peer_closed, 1));
    const auto closed = tx.of(lp::event_kind::peer_closed)[0].e;
    EXPECT_EQ(closed.sender, out);
    EXPECT_EQ(closed.error, code(loom::errc::shutdown));
    EXPECT_EQ(tx.m->send(out, bytes("late")).error(), code(loom::errc::connection_aborted));
    EXPECT_TRUE(tx.m->close_send_endpoint(out));
    EXPECT_EQ(tx.count(lp::event_kind::peer_lost), 0U);
}

TEST(EndpointManagerPeers, ASenderThatClosesInOrderIsNotGivenUpByAnIdleReceiver) {
    // The sender closes while the receiving side does not poll for longer than the peer
    // timeout (its watchdog progresses the engine): the goodbye waits unread, and the sender's
    // close notice keeps the receiver's monitor from declaring the silent peer dead meanwhile.
    side rx, tx;
    lp::receive_endpoint_id in{};
    lp::send_endpoint_id out{};
    connect_sides(rx, tx, {}, {.mode = lp::send_mode::buffered}, in, out);
    ASSERT_TRUE(tx.m->send(out, bytes("last")));
    ASSERT_TRUE(tx.m->close_send_endpoint(out));
    std::this_thread::sleep_for(3s);  // LOOM_PEER_TIMEOUT_MS is 1.5 s for this binary
    ASSERT_TRUE(poll_for(rx, lp::event_kind::peer_closed, 1));
    EXPECT_EQ(rx.count(lp::event_kind::message), 1U);
    EXPECT_EQ(rx.count(lp::event_kind::peer_lost), 0U);
    EXPECT_EQ(rx.m->peers_declared_dead(), 0U);
}

TEST(EndpointManagerPeers, AReceiverClosedDuringARendezvousKeepsItsBuffersForTheLateWrites) {
    // The receiving side grants a large message a clear-to-send and closes before the writes
    // land: the peer's provider may still write them into the connection's buffers, which must
    // not be freed under it (ASan, or the unmapped pages, would say so). Several timings.
    for (int delay_ms : {0, 2, 5, 10, 20, 40}) {
        side rx, tx;
        lp::receive_endpoint_id in{};
        lp::send_endpoint_id out{};
        connect_sides(rx, tx, {.buffer_size = std::size_t{4} << 20, .buffer_count = 2},
                      {.mode = lp::send_mode::zero_copy}, in, out);
        std::vector<std::byte> big(std::size_t{4} << 20, std::byte{7});
        auto mh = tx.m->register_memory(big).value();
        ASSERT_TRUE(tx.m->send(out, big, mh, {}));
        for (int i = 0; i < 3; ++i) rx.m->poll();  // the request to send is in: a clear-to-send goes out
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
        ASSERT_TRUE(rx.m->close_receive_endpoint(in));
        ASSERT_TRUE(poll_for(tx, lp::event_kind::send_complete, 1));
        std::this_thread::sleep_for(50ms);  // the receiving engine's watchdog takes what still arrives
        EXPECT_TRUE(tx.m->close_send_endpoint(out));
        tx.m->deregister(mh);
    }
}

TEST(EndpointManagerPeers, APostedBufferComesBackFromACloseOnlyOnceNoWriteCanLandInIt) {
    // Posted mode: a large message is being written into the caller's own buffer when the
    // receive endpoint closes. The buffer comes back (canceled) to a caller that reuses it at
    // once: nothing the peer sent may land in it afterwards. The event's arrival marks the
    // buffer; the mark must survive everything the peer still does. Several timings.
    constexpr std::size_t size = std::size_t{16} << 20;
    constexpr auto mark = std::byte{0x55};
    for (int delay_ms : {0, 1, 2, 5}) {
        SCOPED_TRACE(delay_ms);
        side rx, tx;
        ASSERT_TRUE(rx.m && tx.m);
        std::vector<std::byte> target(size);
        auto target_mh = rx.m->register_memory(target).value();
        auto in = rx.m->open_receive_endpoint({.mode = lp::receive_mode::posted, .buffer_count = 1}).value();
        int buffer_ctx = 0;
        ASSERT_TRUE(rx.m->post_receive(in, target, target_mh, &buffer_ctx));
        auto out = tx.m->open_send_endpoint(rx.m->address_of(in).value(), {.mode = lp::send_mode::zero_copy}).value();
        ASSERT_TRUE(poll_until(rx, tx, [&] { return tx.count(lp::event_kind::connected) == 1; }));
        std::vector<std::byte> big(size, std::byte{7});
        auto mh = tx.m->register_memory(big).value();
        ASSERT_TRUE(tx.m->send(out, big, mh, {}));
        for (int i = 0; i < 3; ++i) rx.m->poll();  // the request to send is in: a clear-to-send goes out
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
        ASSERT_TRUE(rx.m->close_receive_endpoint(in));
        auto returned = [&] {
            for (const auto& e : rx.of(lp::event_kind::error))
                if (e.e.buffer_context == &buffer_ctx) return true;
            return false;
        };
        ASSERT_TRUE(poll_until(rx, tx, returned));
        std::ranges::fill(target, mark);  // the caller's next use of its buffer
        EXPECT_EQ(rx.of(lp::event_kind::error).back().e.error, code(loom::errc::canceled));
        ASSERT_TRUE(poll_until(rx, tx, [&] { return tx.count(lp::event_kind::send_complete) == 1; }));
        const auto settle = std::chrono::steady_clock::now() + 100ms;  // whatever is still on its way arrives
        while (std::chrono::steady_clock::now() < settle) {
            rx.m->poll();
            tx.m->poll();
        }
        EXPECT_TRUE(tx.m->close_send_endpoint(out));
        for (int i = 0; i < 10; ++i) rx.m->poll();
        EXPECT_EQ(std::ranges::count(target, mark), static_cast<std::ptrdiff_t>(size)) << "a write landed late";
        tx.m->deregister(mh);
        rx.m->deregister(target_mh);
    }
}

}  // namespace
