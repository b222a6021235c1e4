// A peer on another host for real: each process in its own network namespace, the two joined
// by a veth pair. Transfers cross the link byte-exact; the link is taken down in the middle of
// large transfers both ways, and every outstanding request of both processes fails within
// LOOM_PEER_TIMEOUT_MS (neither process died, so only the liveness exchange can tell); the
// link is brought back and new connections carry data again. A slow link kept full both ways
// for longer than the timeout gives up neither live peer, and a peer killed behind it fails
// the survivor's requests without harm to the survivor.
#include "harness_support.hpp"
#include "netns.hpp"

#include <optional>

namespace nccl_harness {
namespace {

using loom::test::netns_pair;

constexpr long link_timeout_ms = 1500;  // LOOM_PEER_TIMEOUT_MS in both processes
constexpr int large_count = 4;
constexpr std::size_t large_size = std::size_t{32} << 20;
constexpr int never_sent = 2;  // receives whose tags no send carries: outstanding for sure

class nccl_across_hosts : public ::testing::TestWithParam<param> {};

/// One process's pipes: to and from its peer (listen handles), to and from the test.
struct side_pipes {
    int from_peer{-1}, to_peer{-1}, from_test{-1}, to_test{-1};
};

auto seed_of(int side, std::size_t n, int round) -> std::uint64_t {
    return (static_cast<std::uint64_t>(side) * 1000) + n + (static_cast<std::uint64_t>(round) * 7);
}

/// Both ways at a few sizes, byte-exact.
void exchange(api& a, const two_way& w, int side, int round) {
    for (const std::size_t n : {std::size_t{8}, std::size_t{65536}, std::size_t{4} << 20}) {
        std::vector<std::byte> out(n), in(n);
        fill(out.data(), n, seed_of(side, n, round));
        void* d = in.data();
        std::size_t sz = n;
        int tag = round;
        void* r = post_recv(a, w.from, 1, &d, &sz, &tag, nullptr);
        void* s = post_send(a, w.to, out.data(), n, round, nullptr);
        CHECK(wait(a, s, nullptr) == 0, "send of %zu bytes", n);
        int got = 0;
        CHECK(wait(a, r, &got) == 0 && got == static_cast<int>(n), "receive of %zu bytes: %d", n, got);
        const long bad = first_bad(in.data(), n, seed_of(1 - side, n, round));
        CHECK(bad == -1, "%zu bytes across the link differ at %ld", n, bad);
    }
}

struct outstanding {
    void* req{nullptr};
    int index{0};  ///< into the large buffers; -1 for a receive nothing matches
    bool receive{false};
    int code{-1};  ///< test()'s code once done
    clk::time_point at{};
};

/// Posts the large transfers both ways and the never-matched receives.
auto post_large(api& a, const two_way& w, int side, std::vector<std::vector<std::byte>>& outs,
                std::vector<std::vector<std::byte>>& ins, std::vector<std::byte>& spare) -> std::vector<outstanding> {
    std::vector<outstanding> reqs;
    for (int i = 0; i < large_count; ++i) {
        auto& in = ins[static_cast<std::size_t>(i)];
        auto& out = outs[static_cast<std::size_t>(i)];
        fill(out.data(), out.size(), seed_of(side, out.size(), 100 + i));
        void* d = in.data();
        std::size_t sz = in.size();
        int tag = 100 + i;
        reqs.push_back({post_recv(a, w.from, 1, &d, &sz, &tag, nullptr), i, true});
        reqs.push_back({post_send(a, w.to, out.data(), out.size(), 100 + i, nullptr), i, false});
    }
    for (int i = 0; i < never_sent; ++i) {
        void* d = spare.data();
        std::size_t sz = spare.size();
        int tag = 900 + i;
        reqs.push_back({post_recv(a, w.from, 1, &d, &sz, &tag, nullptr), -1, true});
    }
    return reqs;
}

/// Tests every request until each is done, recording when and how.
void drive(api& a, std::vector<outstanding>& reqs) {
    const auto deadline = clk::now() + std::chrono::seconds(60);
    std::size_t left = reqs.size();
    while (left > 0) {
        for (auto& r : reqs) {
            if (r.req == nullptr) continue;
            int done = 0;
            const int rc = a.test(r.req, &done, nullptr);
            if (rc == 0 && done == 0) continue;
            r.code = rc;
            r.at = clk::now();
            r.req = nullptr;
            --left;
        }
        CHECK(clk::now() < deadline, "%zu requests never ended after the link went down", left);
    }
}

/// What a process does: connect across the link, exchange, wait out the link's loss with
/// large transfers outstanding, then connect again once the test brings the link back.
void one_side(api& a, int side, const side_pipes& p) {
    const bool first = side == 0;
    auto w = connect_both_ways(a, p.to_peer, p.from_peer, first);
    exchange(a, w, side, 1);

    std::vector<std::vector<std::byte>> outs(large_count, std::vector<std::byte>(large_size));
    std::vector<std::vector<std::byte>> ins(large_count, std::vector<std::byte>(large_size));
    std::vector<std::byte> spare(4096);
    auto reqs = post_large(a, w, side, outs, ins, spare);
    signal_peer(p.to_test);  // posted: the test takes the link down shortly
    drive(a, reqs);
    clk::rep down_ticks = 0;
    read_all(p.from_test, &down_ticks, sizeof down_ticks);
    const clk::time_point down{clk::duration(down_ticks)};

    int failed = 0;
    long slowest = 0;
    for (const auto& r : reqs) {
        if (r.code == 0) {  // finished before the loss took effect: must be whole
            CHECK(r.index >= 0, "a receive no send matches succeeded");
            if (r.receive) {
                const auto& in = ins[static_cast<std::size_t>(r.index)];
                CHECK(first_bad(in.data(), in.size(), seed_of(1 - side, in.size(), 100 + r.index)) == -1,
                      "large receive %d completed with other bytes", r.index);
            }
            continue;
        }
        CHECK(r.code == system_error, "a request ended with %d, expected ncclSystemError", r.code);
        CHECK(r.at >= down, "a request failed before the link went down");
        ++failed;
        slowest = std::max<long>(
            slowest, static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(r.at - down).count()));
    }
    std::fprintf(stderr, "side %d: %d of %zu requests failed, the last %ld ms after the link went down\n", side, failed,
                 reqs.size(), slowest);
    CHECK(failed >= never_sent, "only %d requests failed", failed);
    // The timeout, one 100 ms check, and scheduling on a loaded 2-core machine.
    CHECK(slowest <= link_timeout_ms + 1000, "requests failed %ld ms after the loss (timeout %ld ms)", slowest,
          link_timeout_ms);
    CHECK(a.close_send(w.to) == 0 && a.close_recv(w.from) == 0 && a.close_listen(w.listen) == 0,
          "close after the loss");

    signal_peer(p.to_test);   // closed
    await_peer(p.from_test);  // the link is back
    auto again = connect_both_ways(a, p.to_peer, p.from_peer, first, false);
    exchange(a, again, side, 2);
    CHECK(a.close_send(again.to) == 0 && a.close_recv(again.from) == 0 && a.close_listen(again.listen) == 0, "close");
}

/// Waits up to `limit` for one byte on `fd` (false on timeout or a closed pipe).
auto await_child(int fd, std::chrono::milliseconds limit) -> bool {
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(limit.count())) != 1) return false;
    char c = 0;
    return ::read(fd, &c, 1) == 1;
}

TEST_P(nccl_across_hosts, link_loss_fails_every_outstanding_request_and_new_connections_work_after) {
    auto ns = netns_pair::create();
    if (!ns) GTEST_SKIP() << "cannot make network namespaces here (needs root and iproute2)";
    int peer[2][2], down[2][2], up[2][2];  // peer[i]: to side i; down: test → side; up: side → test
    for (int i = 0; i < 2; ++i) ASSERT_TRUE(::pipe(peer[i]) == 0 && ::pipe(down[i]) == 0 && ::pipe(up[i]) == 0);
    pid_t pids[2];
    for (int side = 0; side < 2; ++side) {
        pids[side] = ::fork();
        ASSERT_GE(pids[side], 0);
        if (pids[side] != 0) continue;
        // Only its own ends stay open: a peer's death then reads as a closed pipe.
        const int other = 1 - side;
        for (const int fd :
             {peer[side][1], peer[other][0], down[other][0], up[other][1], down[0][1], down[1][1], up[0][0], up[1][0]})
            ::close(fd);
        CHECK(ns->enter(side), "entering namespace %s", ns->name(side).c_str());
        ::setenv("LOOM_PROVIDER", GetParam().provider.c_str(), 1);
        ::setenv("LOOM_IFACE", netns_pair::interface, 1);
        ::setenv("LOOM_PEER_TIMEOUT_MS", std::to_string(link_timeout_ms).c_str(), 1);
        api a = load(GetParam().version);
        one_side(a, side, {peer[side][0], peer[1 - side][1], down[side][0], up[side][1]});
        std::fflush(nullptr);
        ::_exit(0);
    }
    for (int i = 0; i < 2; ++i)
        for (int fd : {peer[i][0], peer[i][1], down[i][0], up[i][1]}) ::close(fd);
    const auto limit = std::chrono::seconds(60);
    bool ok = await_child(up[0][0], limit) && await_child(up[1][0], limit);
    if (ok) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the transfers under way
        // Taken before the command: the provider may fail requests the moment the link goes.
        const clk::rep at = clk::now().time_since_epoch().count();
        EXPECT_TRUE(ns->set_link(false));
        for (auto& d : down) ok = ::write(d[1], &at, sizeof at) == sizeof at && ok;
        ok = ok && await_child(up[0][0], limit) && await_child(up[1][0], limit);
        EXPECT_TRUE(ns->set_link(true));
        const char c = 'u';
        for (auto& d : down) ok = ::write(d[1], &c, 1) == 1 && ok;
    }
    EXPECT_TRUE(ok) << "a process did not reach the next step";
    for (auto& d : down) ::close(d[1]);
    for (auto& u : up) ::close(u[0]);
    for (const pid_t pid : pids) {
        int st = 0;
        const auto deadline = clk::now() + limit;
        while (::waitpid(pid, &st, WNOHANG) == 0) {
            if (clk::now() > deadline) {
                ::kill(pid, SIGKILL);
                ::waitpid(pid, &st, 0);
                ADD_FAILURE() << "process " << pid << " hung";
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        EXPECT_TRUE(exited_ok(st)) << "process " << pid << " status " << st;
    }
}

// ---------------------------------------------------------------- a slow link full of data
constexpr long busy_timeout_ms = 1000;                    // LOOM_PEER_TIMEOUT_MS in both processes
constexpr std::size_t busy_size = std::size_t{32} << 20;  // each way: about 2.7 s at 100 Mbit/s
constexpr long death_after_ms = 1000;                     // into the transfers, when side 1 dies

/// How side 1 ends a busy exchange.
enum class busy_end {
    finish,  ///< both sides complete
    killed,  ///< side 1 is killed (SIGKILL) with its transfers under way
    leaves   ///< side 1 only sends, and closes and exits once its send completes
};

/// Sends and receives busy_size at once and waits for both: the link stays full for seconds,
/// longer than the peer timeout.
void busy_side(api& a, int side, int to_peer, int from_peer, busy_end end) {
    auto w = connect_both_ways(a, to_peer, from_peer, side == 0);
    std::vector<std::byte> out(busy_size), in(busy_size);
    fill(out.data(), out.size(), seed_of(side, busy_size, 3));
    void* d = in.data();
    std::size_t sz = in.size();
    int tag = 3;
    const auto t0 = clk::now();
    void* r = post_recv(a, w.from, 1, &d, &sz, &tag, nullptr);
    void* s = post_send(a, w.to, out.data(), out.size(), tag, nullptr);
    if (end == busy_end::killed && side == 1) {
        for (int done = 0; clk::now() - t0 < std::chrono::milliseconds(death_after_ms);)
            (void)a.test(r, &done, nullptr);
        ::kill(::getpid(), SIGKILL);
    }
    const int sent = wait(a, s, nullptr);
    int got = 0;
    const int received = wait(a, r, &got);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(clk::now() - t0).count();
    std::fprintf(stderr, "side %d: %zu MiB each way, ended after %lld ms (send %d, receive %d), peer timeout %ld ms\n",
                 side, busy_size >> 20, static_cast<long long>(ms), sent, received, busy_timeout_ms);
    if (end == busy_end::killed) {
        // The peer's provider connection breaks under both directions' transfers: they fail,
        // with the process alive, within the timeout of the death (and scheduling's slack).
        CHECK(sent == system_error && received == system_error, "send %d, receive %d", sent, received);
        CHECK(ms <= death_after_ms + busy_timeout_ms + 1000, "the requests failed %lld ms after they started",
              static_cast<long long>(ms));
    } else {
        CHECK(sent == 0 && received == 0, "a live peer was given up (send %d, receive %d)", sent, received);
        CHECK(got == static_cast<int>(busy_size), "received %d bytes", got);
        CHECK(first_bad(in.data(), in.size(), seed_of(1 - side, busy_size, 3)) == -1, "the bytes differ");
        // Otherwise the link was not slow enough to keep the liveness exchange waiting.
        CHECK(ms > 2 * busy_timeout_ms, "the link drained in %lld ms", static_cast<long long>(ms));
        // Both stay until both have everything: a side whose send completed may still have its
        // last bytes queued on the slow link, and its exit would make the other a side whose
        // peer is gone, which is not what this case is about.
        const char done = 1;
        char theirs = 0;
        write_all(to_peer, &done, 1);
        read_all(from_peer, &theirs, 1);
    }
    CHECK(a.close_send(w.to) == 0 && a.close_recv(w.from) == 0 && a.close_listen(w.listen) == 0, "close");
}

constexpr std::size_t leaving_size = std::size_t{8} << 20;  // about 3.4 s at 20 Mbit/s
// The leaving side's sockets start with 4 MiB of send buffer: its send completes with about
// 1.7 s of data still to cross the link, however fast either process runs.
constexpr const char* leaving_send_buffer = "net.ipv4.tcp_wmem=4096 4194304 8388608";
constexpr long leaving_timeout_ms = 5000;  // its silence must not end the channel first

/// busy_end::leaves: side 1 sends leaving_size and leaves as soon as its send completes, its last
/// bytes still in its socket and on the link; side 0 receives every byte. Side 1's process is
/// gone before they arrive, and its close notice comes behind them.
void leaving_side(api& a, int side, int to_peer, int from_peer) {
    auto w = connect_both_ways(a, to_peer, from_peer, side == 0);
    std::vector<std::byte> buf(leaving_size);
    const std::uint64_t seed = seed_of(1, leaving_size, 4);
    if (side == 1) {
        fill(buf.data(), buf.size(), seed);
        CHECK(wait(a, post_send(a, w.to, buf.data(), buf.size(), 4, nullptr), nullptr) == 0, "send");
        CHECK(a.close_send(w.to) == 0 && a.close_recv(w.from) == 0 && a.close_listen(w.listen) == 0, "close");
        signal_peer(to_peer);  // leaving: the process exits next
        return;
    }
    void* d = buf.data();
    std::size_t sz = buf.size();
    int tag = 4;
    void* r = post_recv(a, w.from, 1, &d, &sz, &tag, nullptr);
    const auto deadline = clk::now() + std::chrono::seconds(30);
    std::optional<clk::time_point> left;
    int done = 0, got = 0, rc = 0;
    while (rc == 0 && done == 0) {
        rc = a.test(r, &done, &got);
        if (!left && await_child(from_peer, std::chrono::milliseconds(0))) left = clk::now();
        CHECK(clk::now() < deadline, "the receive never ended");
    }
    const long after =
        left ? static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(clk::now() - *left).count())
             : -1;
    std::fprintf(stderr, "side 0: receive ended (code %d, %d bytes) %ld ms after the peer left\n", rc, got, after);
    CHECK(rc == 0 && got == static_cast<int>(leaving_size), "a peer that left was given up before its data arrived");
    CHECK(first_bad(buf.data(), buf.size(), seed) == -1, "the bytes differ");
    // Otherwise its data was in before a peer check (every 100 ms) could find it gone, and this
    // case tested nothing.
    CHECK(after >= 300, "the peer left %ld ms before the receive ended", after);
    CHECK(a.close_send(w.to) == 0 && a.close_recv(w.from) == 0 && a.close_listen(w.listen) == 0, "close");
}

/// Two processes across a link of 100 Mbit/s exchange busy_size each way, or across one of
/// 20 Mbit/s side 1 sends leaving_size to side 0; they end as `end` says. Returns their wait
/// statuses.
auto run_busy_pair(const param& p, busy_end end) -> std::array<int, 2> {
    std::array<int, 2> status{-1, -1};
    auto ns = netns_pair::create();
    if (!ns) return status;
    if (!ns->limit_rate(end == busy_end::leaves ? "20mbit" : "100mbit")) {
        ADD_FAILURE() << "tc qdisc tbf";
        return status;
    }
    if (end == busy_end::leaves && !ns->set_sysctl(1, leaving_send_buffer)) {
        ADD_FAILURE() << "sysctl " << leaving_send_buffer;
        return status;
    }
    const long timeout_ms = end == busy_end::leaves ? leaving_timeout_ms : busy_timeout_ms;
    int peer[2][2];  // peer[i]: to side i
    for (auto& fds : peer) CHECK(::pipe(fds) == 0, "pipe");
    pid_t pids[2];
    for (int side = 0; side < 2; ++side) {
        pids[side] = ::fork();
        CHECK(pids[side] >= 0, "fork");
        if (pids[side] != 0) continue;
        ::close(peer[side][1]);
        ::close(peer[1 - side][0]);
        CHECK(ns->enter(side), "entering namespace %s", ns->name(side).c_str());
        ::setenv("LOOM_PROVIDER", p.provider.c_str(), 1);
        ::setenv("LOOM_IFACE", netns_pair::interface, 1);
        ::setenv("LOOM_PEER_TIMEOUT_MS", std::to_string(timeout_ms).c_str(), 1);
        api a = load(p.version);
        if (end == busy_end::leaves)
            leaving_side(a, side, peer[1 - side][1], peer[side][0]);
        else
            busy_side(a, side, peer[1 - side][1], peer[side][0], end);
        std::fflush(nullptr);
        ::_exit(0);
    }
    for (auto& fds : peer) {
        ::close(fds[0]);
        ::close(fds[1]);
    }
    for (int side = 0; side < 2; ++side) ::waitpid(pids[side], &status[static_cast<std::size_t>(side)], 0);
    return status;  // each side's own waits end within 30 s
}

// Pings and pongs go through endpoints of their own by default (tcp: a second tcp endpoint;
// tcp;ofi_rxm: a native tcp endpoint beside the rxm one), so they do not wait behind seconds of
// data on the same connection (run with LOOM_LIVENESS_ENDPOINT=0, this test fails: each side
// declares the other dead).
TEST_P(nccl_across_hosts, a_live_peer_behind_a_slow_full_link_is_not_declared_dead) {
    if (!netns_pair::create()) GTEST_SKIP() << "cannot make network namespaces here (needs root and iproute2)";
    const auto st = run_busy_pair(GetParam(), busy_end::finish);
    EXPECT_TRUE(exited_ok(st[0])) << "side 0 status " << st[0];
    EXPECT_TRUE(exited_ok(st[1])) << "side 1 status " << st[1];
}

// A peer killed while a slow link is full both ways: its connection breaks in the middle of
// large RMA writes towards the survivor, which fails its requests and closes (on tcp;ofi_rxm
// such a write's error comes without a context: libfabric 2.1's rxm read through it and
// crashed, which scripts/patches/ mends).
TEST_P(nccl_across_hosts, a_peer_killed_behind_a_slow_full_link_fails_the_survivors_requests) {
    if (!netns_pair::create()) GTEST_SKIP() << "cannot make network namespaces here (needs root and iproute2)";
    const auto st = run_busy_pair(GetParam(), busy_end::killed);
    EXPECT_TRUE(exited_ok(st[0])) << "survivor status " << st[0];
    EXPECT_TRUE(WIFSIGNALED(st[1]) && WTERMSIG(st[1]) == SIGKILL) << "killed side status " << st[1];
}

// A peer on this host whose process is gone may still have data on its way (in its socket and
// on the link): that data arrives, and the peer's close notice behind it ends the channel in
// order. The pid's end alone does not make it dead on a socket provider.
TEST_P(nccl_across_hosts, a_peer_that_leaves_with_its_last_bytes_on_the_link_delivers_them) {
    if (!netns_pair::create()) GTEST_SKIP() << "cannot make network namespaces here (needs root and iproute2)";
    const auto st = run_busy_pair(GetParam(), busy_end::leaves);
    EXPECT_TRUE(exited_ok(st[0])) << "receiver status " << st[0];
    EXPECT_TRUE(exited_ok(st[1])) << "sender status " << st[1];
}

INSTANTIATE_TEST_SUITE_P(network_namespaces, nccl_across_hosts,
                         ::testing::Values(param{"tcp", 12}, param{"tcp;ofi_rxm", 12}), name_of);

}  // namespace
}  // namespace nccl_harness
