// Peers on other hosts (their own UTS namespace): a killed one fails every request within the
// peer timeout; a live one busy elsewhere is never declared dead.
#include "harness_support.hpp"

namespace nccl_harness {
namespace {

// ---------------------------------------------------------------- peers on other hosts
// The peer process gets a UTS namespace of its own (another hostname), so the plugin cannot
// tell by pid whether it is alive: only the liveness exchange can.
void become_another_host() {
    CHECK(::unshare(CLONE_NEWUTS) == 0, "unshare(CLONE_NEWUTS): %s", std::strerror(errno));
    CHECK(::sethostname("loom-other-host", 15) == 0, "sethostname: %s", std::strerror(errno));
}

auto can_make_uts_namespaces() -> bool {
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(::unshare(CLONE_NEWUTS) == 0 ? 0 : 1);
    int st = 0;
    ::waitpid(pid, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

constexpr long peer_timeout_ms = 1500;  // what run_pair sets LOOM_PEER_TIMEOUT_MS to

TEST_P(nccl_abi, peer_on_another_host_killed_fails_every_request_within_the_peer_timeout) {
    if (!can_make_uts_namespaces()) GTEST_SKIP() << "no UTS namespaces here (needs CAP_SYS_ADMIN)";
    pair(
        [](api& a, const pipes& p) {
            auto w = connect_both_ways(a, p.to_sender[1], p.to_receiver[0], true);
            // Eight receives the peer will never fill, eight rendezvous sends it will never take.
            constexpr int n = 8;
            std::vector<std::vector<std::byte>> rbuf(n, std::vector<std::byte>(4096));
            std::vector<std::byte> sbuf(std::size_t{1} << 20, std::byte{7});
            std::vector<void*> reqs;
            for (int i = 0; i < n; ++i) {
                void* d = rbuf[static_cast<std::size_t>(i)].data();
                std::size_t sz = 4096;
                int tag = i;
                reqs.push_back(post_recv(a, w.from, 1, &d, &sz, &tag, nullptr));
                reqs.push_back(post_send(a, w.to, sbuf.data(), sbuf.size(), i, nullptr));
            }
            signal_peer(p.to_sender[1]);
            await_peer(p.to_receiver[0]);  // the peer's last word before SIGKILL
            const auto t0 = clk::now();
            for (void* r : reqs) {
                const int rc = wait(a, r, nullptr);
                CHECK(rc == system_error, "expected ncclSystemError, got %d", rc);
            }
            const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(clk::now() - t0).count();
            std::fprintf(stderr, "16 requests to a dead peer on another host failed %lld ms after its death\n",
                         static_cast<long long>(ms));
            // The timeout, one 100 ms check, and scheduling on a loaded 2-core machine.
            CHECK(ms <= peer_timeout_ms + 1000, "requests failed %lld ms after the death (timeout %ld ms)",
                  static_cast<long long>(ms), peer_timeout_ms);
            CHECK(a.close_send(w.to) == 0 && a.close_recv(w.from) == 0 && a.close_listen(w.listen) == 0,
                  "close after peer death");
        },
        [](api& a, const pipes& p, pid_t) {
            become_another_host();
            (void)connect_both_ways(a, p.to_receiver[1], p.to_sender[0], false);
            await_peer(p.to_sender[0]);
            // Let the survivor's requests wait on us for a while (pings answered), then die.
            std::this_thread::sleep_for(std::chrono::milliseconds(2 * peer_timeout_ms));
            signal_peer(p.to_receiver[1]);
            ::raise(SIGKILL);
        },
        true);
}

TEST_P(nccl_abi, peer_on_another_host_busy_elsewhere_is_not_declared_dead) {
    if (!can_make_uts_namespaces()) GTEST_SKIP() << "no UTS namespaces here (needs CAP_SYS_ADMIN)";
    pair(
        [](api& a, const pipes& p) {
            void* l = nullptr;
            void* rc = accept_side(a, p, &l);
            std::vector<std::byte> buf(65536);
            void* d = buf.data();
            std::size_t s = buf.size();
            int tag = 4;
            void* req = post_recv(a, rc, 1, &d, &s, &tag, nullptr);
            signal_peer(p.to_sender[1]);
            int got = 0;
            const int code = wait(a, req, &got);
            CHECK(code == 0, "a receive from a live but busy peer failed (%d)", code);
            CHECK(got == 65536 && buf[65535] == std::byte{0x5a}, "received %d bytes", got);
            CHECK(a.close_recv(rc) == 0 && a.close_listen(l) == 0, "close");
        },
        [](api& a, const pipes& p, pid_t) {
            become_another_host();
            void* sc = connect_side(a, p);
            await_peer(p.to_sender[0]);
            // Busy elsewhere: no call into the plugin for three peer timeouts while the
            // receiver waits on us.
            std::this_thread::sleep_for(std::chrono::milliseconds(3 * peer_timeout_ms));
            std::vector<std::byte> buf(65536, std::byte{0x5a});
            void* req = post_send(a, sc, buf.data(), buf.size(), 4, nullptr);
            CHECK(wait(a, req, nullptr) == 0, "send");
            CHECK(a.close_send(sc) == 0, "close");
        });
}

}  // namespace
}  // namespace nccl_harness
