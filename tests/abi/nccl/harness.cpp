// The NCCL ABI harness: transfers, matching, truncation, requests in flight, flush and close,
// a killed peer, bad input — over shm, tcp;ofi_rxm and tcp, every table version.
#include "harness_support.hpp"

namespace nccl_harness {
namespace {

// ---------------------------------------------------------------- scenarios
TEST_P(nccl_abi, transfers_every_size_byte_exact) {
    pair(
        [](api& a, const pipes& p) {
            void* l = nullptr;
            void* rc = accept_side(a, p, &l);
            std::vector<std::byte> buf(big + 64);
            void* mh = nullptr;
            CHECK(a.reg_mr(rc, buf.data(), buf.size(), ptr_host, &mh) == 0 && mh != nullptr, "regMr");
            for (std::size_t n : sizes) {
                std::memset(buf.data(), 0, n + 64);
                void* d = buf.data();
                std::size_t s = n;
                int tag = 7;
                void* mhs[1] = {mh};
                void* req = post_recv(a, rc, 1, &d, &s, &tag, mhs);
                int got = -1;
                CHECK(wait(a, req, &got) == 0, "recv of %zu failed", n);
                CHECK(static_cast<std::size_t>(got) == n, "size %zu reported %d", n, got);
                const long bad = first_bad(buf.data(), n, n);
                CHECK(bad < 0, "size %zu: byte %ld wrong", n, bad);
                CHECK(buf[n] == std::byte{0}, "size %zu: wrote past the message", n);
            }
            signal_peer(p.to_sender[1]);
            CHECK(a.dereg_mr(rc, mh) == 0, "deregMr");
            CHECK(a.close_recv(rc) == 0 && a.close_listen(l) == 0, "close");
            CHECK(a.finalize() == 0, "finalize");
        },
        [](api& a, const pipes& p, pid_t) {
            void* sc = connect_side(a, p);
            std::vector<std::byte> buf(big);
            void* mh = nullptr;
            CHECK(a.reg_mr(sc, buf.data(), buf.size(), ptr_host, &mh) == 0, "regMr");
            for (std::size_t n : sizes) {
                fill(buf.data(), n, n);
                void* req = post_send(a, sc, buf.data(), n, 7, mh);
                int got = -1;
                CHECK(wait(a, req, &got) == 0, "send of %zu failed", n);
                CHECK(static_cast<std::size_t>(got) == n, "send size %zu reported %d", n, got);
            }
            await_peer(p.to_sender[0]);
            CHECK(a.dereg_mr(sc, mh) == 0 && a.close_send(sc) == 0, "close");
            CHECK(a.finalize() == 0, "finalize");
        });
}

TEST_P(nccl_abi, grouped_receive_matches_by_tag_in_posting_order) {
    constexpr int n = 4;
    static constexpr std::array<std::size_t, n> cap{1000, 2000, 70000, 3000};
    pair(
        [](api& a, const pipes& p) {
            void* l = nullptr;
            void* rc = accept_side(a, p, &l);
            std::vector<std::vector<std::byte>> bufs;
            for (auto c : cap) bufs.emplace_back(c);
            for (int round = 0; round < 3; ++round) {
                void* d[n];
                std::size_t s[n];
                int tags[n] = {10, 11, 12, 13};
                for (int i = 0; i < n; ++i) {
                    d[i] = bufs[static_cast<std::size_t>(i)].data();
                    s[i] = cap[static_cast<std::size_t>(i)];
                }
                void* req = post_recv(a, rc, n, d, s, tags, nullptr);
                int got[n] = {-1, -1, -1, -1};
                CHECK(wait(a, req, got) == 0, "grouped receive failed");
                for (int i = 0; i < n; ++i) {
                    const std::size_t want = cap[static_cast<std::size_t>(i)] - static_cast<std::size_t>(round);
                    CHECK(static_cast<std::size_t>(got[i]) == want, "slot %d size %d want %zu", i, got[i], want);
                    const long bad = first_bad(bufs[static_cast<std::size_t>(i)].data(), want,
                                               static_cast<std::uint64_t>(tags[i] * 100 + round));
                    CHECK(bad < 0, "round %d slot %d byte %ld", round, i, bad);
                }
            }
            signal_peer(p.to_sender[1]);
            CHECK(a.close_recv(rc) == 0 && a.close_listen(l) == 0, "close");
        },
        [](api& a, const pipes& p, pid_t) {
            void* sc = connect_side(a, p);
            for (int round = 0; round < 3; ++round) {
                const int order[n] = {12, 10, 13, 11};
                std::vector<std::vector<std::byte>> bufs;
                std::vector<void*> reqs;
                for (int tag : order) {
                    const std::size_t len = cap[static_cast<std::size_t>(tag - 10)] - static_cast<std::size_t>(round);
                    bufs.emplace_back(len);
                    fill(bufs.back().data(), len, static_cast<std::uint64_t>(tag * 100 + round));
                    reqs.push_back(post_send(a, sc, bufs.back().data(), len, tag, nullptr));
                }
                for (void* r : reqs) CHECK(wait(a, r, nullptr) == 0, "send failed");
            }
            await_peer(p.to_sender[0]);
            CHECK(a.close_send(sc) == 0, "close");
        });
}

TEST_P(nccl_abi, larger_send_is_truncated_to_the_receive) {
    // (send, receive) sizes: scratch path, eager, rendezvous.
    static constexpr std::array<std::pair<std::size_t, std::size_t>, 5> cases{
        {{50, 10}, {4000, 100}, {8192, 4096}, {65536, 1000}, {std::size_t{1} << 20, std::size_t{256} << 10}}};
    pair(
        [](api& a, const pipes& p) {
            void* l = nullptr;
            void* rc = accept_side(a, p, &l);
            std::vector<std::byte> buf(std::size_t{1} << 20);
            void* mh = nullptr;
            CHECK(a.reg_mr(rc, buf.data(), buf.size(), ptr_host, &mh) == 0, "regMr");
            for (auto [send, recv] : cases) {
                std::memset(buf.data(), 0, buf.size());
                void* d = buf.data();
                std::size_t s = recv;
                int tag = 1;
                void* req = post_recv(a, rc, 1, &d, &s, &tag, &mh);
                int got = -1;
                CHECK(wait(a, req, &got) == 0, "truncated receive (%zu into %zu) reported an error", send, recv);
                CHECK(static_cast<std::size_t>(got) == recv, "reported %d, receive holds %zu", got, recv);
                CHECK(first_bad(buf.data(), recv, send) < 0, "truncated payload wrong");
                CHECK(buf[recv] == std::byte{0}, "wrote past the receive buffer");
            }
            signal_peer(p.to_sender[1]);
            CHECK(a.dereg_mr(rc, mh) == 0 && a.close_recv(rc) == 0 && a.close_listen(l) == 0, "close");
        },
        [](api& a, const pipes& p, pid_t) {
            void* sc = connect_side(a, p);
            std::vector<std::byte> buf(std::size_t{1} << 20);
            for (auto [send, recv] : cases) {
                fill(buf.data(), send, send);
                void* req = post_send(a, sc, buf.data(), send, 1, nullptr);
                std::fprintf(stderr, "truncation: sending %zu\n", send);
                int sent = -1;
                CHECK(wait(a, req, &sent) == 0, "send failed");
                CHECK(static_cast<std::size_t>(sent) == send, "the sender reported %d for a send of %zu", sent, send);
            }
            await_peer(p.to_sender[0]);
            CHECK(a.close_send(sc) == 0, "close");
        });
}

TEST_P(nccl_abi, thirty_two_requests_in_flight) {
    constexpr int count = max_requests;
    auto len = [](int i) -> std::size_t {
        return (i % 2 == 0) ? 4096 + static_cast<std::size_t>(i)
                            : (std::size_t{128} << 10) + static_cast<std::size_t>(i);
    };
    pair(
        [&](api& a, const pipes& p) {
            void* l = nullptr;
            void* rc = accept_side(a, p, &l);
            std::vector<std::vector<std::byte>> bufs;
            std::vector<void*> reqs;
            for (int i = 0; i < count; ++i) {
                bufs.emplace_back(len(i));
                void* d = bufs.back().data();
                std::size_t s = len(i);
                int tag = 5;
                void* req = nullptr;
                CHECK(a.irecv(rc, 1, &d, &s, &tag, nullptr, &req) == 0 && req != nullptr, "irecv %d not accepted", i);
                reqs.push_back(req);
            }
            signal_peer(p.to_sender[1]);
            for (int i = count - 1; i >= 0; --i) {  // completion order is ours to choose
                int got = -1;
                CHECK(wait(a, reqs[static_cast<std::size_t>(i)], &got) == 0, "recv %d failed", i);
                CHECK(static_cast<std::size_t>(got) == len(i), "recv %d size %d", i, got);
                CHECK(first_bad(bufs[static_cast<std::size_t>(i)].data(), len(i), static_cast<std::uint64_t>(i)) < 0,
                      "recv %d payload", i);
            }
            signal_peer(p.to_sender[1]);
            CHECK(a.close_recv(rc) == 0 && a.close_listen(l) == 0, "close");
        },
        [&](api& a, const pipes& p, pid_t) {
            void* sc = connect_side(a, p);
            await_peer(p.to_sender[0]);
            std::vector<std::vector<std::byte>> bufs;
            std::vector<void*> reqs;
            for (int i = 0; i < count; ++i) {
                bufs.emplace_back(len(i));
                fill(bufs.back().data(), len(i), static_cast<std::uint64_t>(i));
                void* req = nullptr;
                CHECK(a.isend(sc, bufs.back().data(), len(i), 5, nullptr, &req) == 0 && req != nullptr,
                      "isend %d not accepted", i);
                reqs.push_back(req);
            }
            for (void* r : reqs) CHECK(wait(a, r, nullptr) == 0, "send failed");
            await_peer(p.to_sender[0]);
            CHECK(a.close_send(sc) == 0, "close");
        });
}

TEST_P(nccl_abi, iflush_and_close_with_requests_outstanding) {
    pair(
        [](api& a, const pipes& p) {
            void* l = nullptr;
            void* rc = accept_side(a, p, &l);
            std::vector<std::byte> buf(4096);
            void* mh = nullptr;
            CHECK(a.reg_mr(rc, buf.data(), buf.size(), ptr_host, &mh) == 0, "regMr");
            void* d = buf.data();
            std::size_t s = buf.size();
            int tag = 3;
            void* req = post_recv(a, rc, 1, &d, &s, &tag, &mh);
            CHECK(wait(a, req, nullptr) == 0, "recv");
            int isz = 4096;
            void* freq = reinterpret_cast<void*>(0x1);
            CHECK(a.iflush(rc, 1, &d, &isz, &mh, &freq) == 0, "iflush");
            if (freq != nullptr) CHECK(wait(a, freq, nullptr) == 0, "flush request");
            // Receives nobody will satisfy, then close: must return, not hang.
            std::vector<void*> pending;
            for (int i = 0; i < 4; ++i) {
                int t = 100 + i;
                pending.push_back(post_recv(a, rc, 1, &d, &s, &t, &mh));
            }
            signal_peer(p.to_sender[1]);
            await_peer(p.to_receiver[0]);
            CHECK(a.dereg_mr(rc, mh) == 0, "deregMr");
            CHECK(a.close_recv(rc) == 0, "closeRecv with requests outstanding");
            // The closed comm is stale now.
            void* r2 = nullptr;
            CHECK(a.irecv(rc, 1, &d, &s, &tag, nullptr, &r2) != 0, "irecv on a closed comm accepted");
            CHECK(a.close_recv(rc) != 0, "double close accepted");
            CHECK(a.close_listen(l) == 0, "closeListen");
        },
        [](api& a, const pipes& p, pid_t) {
            void* sc = connect_side(a, p);
            std::vector<std::byte> buf(std::size_t{1} << 20);
            fill(buf.data(), 4096, 4096);
            CHECK(wait(a, post_send(a, sc, buf.data(), 4096, 3, nullptr), nullptr) == 0, "send");
            await_peer(p.to_sender[0]);
            // A rendezvous send whose receive never comes, then close.
            (void)post_send(a, sc, buf.data(), buf.size(), 999, nullptr);
            CHECK(a.close_send(sc) == 0, "closeSend with a request outstanding");
            void* r2 = nullptr;
            CHECK(a.isend(sc, buf.data(), 8, 1, nullptr, &r2) != 0, "isend on a closed comm accepted");
            signal_peer(p.to_receiver[1]);
        });
}

TEST_P(nccl_abi, killed_peer_fails_requests_instead_of_hanging) {
    pair(
        [](api& a, const pipes& p) {
            void* l = nullptr;
            void* rc = accept_side(a, p, &l);
            std::vector<std::byte> buf(4096);
            void* d = buf.data();
            std::size_t s = buf.size();
            int tag = 9;
            void* req = post_recv(a, rc, 1, &d, &s, &tag, nullptr);
            signal_peer(p.to_sender[1]);
            const auto t0 = clk::now();
            const int rc_test = wait(a, req, nullptr);
            CHECK(rc_test == system_error, "expected ncclSystemError, got %d", rc_test);
            std::fprintf(
                stderr, "dead peer detected after %lld ms\n",
                static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(clk::now() - t0).count()));
            CHECK(a.close_recv(rc) == 0 && a.close_listen(l) == 0, "close after peer death");
        },
        [](api& a, const pipes& p, pid_t) {
            (void)connect_side(a, p);
            await_peer(p.to_sender[0]);
            ::raise(SIGKILL);
        },
        true);
}

// bad_input_gives_error_codes, one group of refusals per function (in the child process: a
// failed CHECK ends it).

/// A listening comm and the send and receive comms connected to it.
struct live_comms {
    void* listen{nullptr};
    void* send{nullptr};
    void* recv{nullptr};
};

/// Before any comm: test before init, devices, properties and listen. Returns the device count.
auto refuse_before_comms(api& a, std::array<char, handle_maxsize>& h, void*& l) -> int {
    CHECK(a.test(nullptr, nullptr, nullptr) != 0, "test before init");
    CHECK(a.init() == 0, "init");
    int n = 0;
    CHECK(a.devices(nullptr) != 0, "devices(NULL)");
    CHECK(a.devices(&n) == 0 && n >= 1, "devices");
    props pr;
    CHECK(a.get_props(-1, pr) != 0 && a.get_props(n + 5, pr) != 0, "getProperties of unknown devices");
    CHECK(a.listen(n + 5, h.data(), &l) != 0 && l == nullptr, "listen on unknown device");
    CHECK(a.listen(0, nullptr, &l) != 0, "listen with NULL handle");
    CHECK(a.listen(0, h.data(), nullptr) != 0, "listen with NULL comm");
    CHECK(a.listen(0, h.data(), &l) == 0 && l != nullptr, "listen");
    return n;
}

/// Foreign, corrupted and truncated handles, NULL arguments; then the comms of a connection to
/// ourselves.
auto refuse_bad_handles_then_connect(api& a, std::array<char, handle_maxsize>& h, void* l) -> live_comms {
    std::array<char, handle_maxsize> bad{};
    live_comms c{l};
    CHECK(a.connect(0, bad.data(), &c.send) != 0 && c.send == nullptr, "connect with a zero handle");
    for (int bit : {0, 77, 8 * 22 + 3, 8 * 127}) {
        bad = h;
        bad[static_cast<std::size_t>(bit / 8)] ^= static_cast<char>(1 << (bit % 8));
        CHECK(a.connect(0, bad.data(), &c.send) != 0 && c.send == nullptr, "connect with bit %d flipped", bit);
    }
    CHECK(a.connect(0, nullptr, &c.send) != 0, "connect(NULL handle)");
    CHECK(a.accept(nullptr, &c.recv) != 0, "accept(NULL)");
    CHECK(a.accept(l, nullptr) != 0, "accept(.., NULL)");
    const auto deadline = clk::now() + std::chrono::seconds(20);
    while (c.send == nullptr || c.recv == nullptr) {
        if (c.send == nullptr) CHECK(a.connect(0, h.data(), &c.send) == 0, "connect");
        if (c.recv == nullptr) CHECK(a.accept(l, &c.recv) == 0, "accept");
        CHECK(clk::now() < deadline, "self-connect timed out");
    }
    void* other = nullptr;
    CHECK(a.accept(c.send, &other) != 0 && other == nullptr, "accept on a send comm");
    return c;
}

/// regMr and regMrDmaBuf with bad arguments; then a registration of `buf`, returned.
auto refuse_bad_registrations(api& a, const live_comms& c, std::vector<std::byte>& buf) -> void* {
    void* mh = nullptr;
    CHECK(a.reg_mr(nullptr, buf.data(), buf.size(), ptr_host, &mh) != 0, "regMr(NULL comm)");
    CHECK(a.reg_mr(c.send, nullptr, buf.size(), ptr_host, &mh) != 0, "regMr(NULL data)");
    CHECK(a.reg_mr(c.send, buf.data(), 0, ptr_host, &mh) != 0, "regMr(size 0)");
    CHECK(a.reg_mr(c.send, buf.data(), buf.size(), ptr_host, nullptr) != 0, "regMr(NULL out)");
    CHECK(a.reg_mr(c.send, buf.data(), buf.size(), ptr_cuda, &mh) != 0, "regMr(CUDA) on a host-only device");
    CHECK(a.reg_mr_dmabuf(c.send, buf.data(), buf.size(), ptr_host, 0, 1000, &mh) != 0,
          "regMrDmaBuf with a descriptor that is not open");
    CHECK(a.reg_mr_dmabuf(c.send, buf.data(), buf.size(), ptr_cuda, 0, 1000, &mh) != 0,
          "regMrDmaBuf of CUDA memory on a host-only device");
    CHECK(a.reg_mr_dmabuf(c.send, buf.data(), buf.size(), 7, 0, -1, &mh) != 0, "regMrDmaBuf of an unknown type");
    CHECK(a.reg_mr(c.send, buf.data(), buf.size(), ptr_host, &mh) == 0 && mh != nullptr, "regMr");
    return mh;
}

/// isend, irecv and test with bad arguments.
void refuse_bad_transfers(api& a, const live_comms& c, std::vector<std::byte>& buf, void* mh, int version) {
    void* req = nullptr;
    CHECK(a.isend(nullptr, buf.data(), 8, 1, mh, &req) != 0, "isend(NULL comm)");
    CHECK(a.isend(c.recv, buf.data(), 8, 1, mh, &req) != 0, "isend on a receive comm");
    CHECK(a.isend(c.send, nullptr, 8, 1, nullptr, &req) != 0, "isend(NULL data)");
    CHECK(a.isend(c.send, buf.data(), 8, 1, mh, nullptr) != 0, "isend(NULL request)");
    if (version >= 9)
        CHECK(a.isend(c.send, buf.data(), std::size_t{3} << 30, 1, nullptr, &req) != 0, "isend above maxP2pBytes");
    CHECK(a.isend(c.send, buf.data(), 8192, 1, mh, &req) != 0, "isend beyond the registration");
    void* d[9];
    std::size_t s[9];
    int t[9];
    void* m[9];
    for (int i = 0; i < 9; ++i) {
        d[i] = buf.data();
        s[i] = 16;
        t[i] = i;
        m[i] = mh;
    }
    CHECK(a.irecv(c.recv, 0, d, s, t, m, &req) != 0, "irecv n=0");
    CHECK(a.irecv(c.recv, 9, d, s, t, m, &req) != 0, "irecv n=9 > maxRecvs");
    CHECK(a.irecv(c.recv, 1, nullptr, s, t, m, &req) != 0, "irecv(NULL data)");
    CHECK(a.irecv(c.recv, 1, d, nullptr, t, m, &req) != 0, "irecv(NULL sizes)");
    CHECK(a.irecv(c.recv, 1, d, s, nullptr, m, &req) != 0, "irecv(NULL tags)");
    CHECK(a.irecv(c.send, 1, d, s, t, m, &req) != 0, "irecv on a send comm");
    int done = 0;
    CHECK(a.test(nullptr, &done, nullptr) != 0, "test(NULL)");
    CHECK(a.test(buf.data(), &done, nullptr) != 0, "test(foreign pointer)");
}

/// A completed request and a deregistered handle are stale: refused, not used.
void refuse_stale_handles(api& a, const live_comms& c, std::vector<std::byte>& buf, void* mh) {
    std::vector<std::byte> src(64);
    void* sreq = post_send(a, c.send, src.data(), src.size(), 4, nullptr);
    std::size_t s1 = 64;
    int t1 = 4;
    void* d1 = buf.data();
    void* rreq = post_recv(a, c.recv, 1, &d1, &s1, &t1, &mh);
    CHECK(wait(a, sreq, nullptr) == 0 && wait(a, rreq, nullptr) == 0, "self transfer");
    int done = 0;
    CHECK(a.test(rreq, &done, nullptr) != 0, "test of a completed request");
    CHECK(a.dereg_mr(c.send, nullptr) != 0, "deregMr(NULL)");
    CHECK(a.dereg_mr(c.send, mh) == 0, "deregMr");
    CHECK(a.dereg_mr(c.send, mh) != 0, "deregMr of a stale handle");
    void* req = nullptr;
    CHECK(a.isend(c.send, buf.data(), 8, 1, mh, &req) != 0, "isend with a stale mhandle");
}

/// makeVDevice (v9+) with bad arguments; `n` devices exist.
void refuse_bad_vdevices(api& a, int n) {
    if (!a.make_vdevice) return;
    int vd = -1;
    const int devs[2] = {0, 0};
    const int unknown[1] = {n + 3};
    CHECK(a.make_vdevice(nullptr, 1, devs) != 0, "makeVDevice(NULL)");
    CHECK(a.make_vdevice(&vd, 0, devs) != 0, "makeVDevice(0 devices)");
    CHECK(a.make_vdevice(&vd, 2, devs) != 0, "makeVDevice(duplicate devices)");
    CHECK(a.make_vdevice(&vd, 1, unknown) != 0, "makeVDevice(unknown device)");
}

/// Closes of the wrong kind, twice, or of NULL are refused; the right ones succeed.
void refuse_bad_closes(api& a, const live_comms& c) {
    CHECK(a.close_send(c.recv) != 0, "closeSend on a receive comm");
    CHECK(a.close_send(c.send) == 0 && a.close_recv(c.recv) == 0 && a.close_listen(c.listen) == 0, "close");
    CHECK(a.close_send(c.send) != 0 && a.close_listen(c.listen) != 0, "double close");
    CHECK(a.close_send(nullptr) != 0 && a.close_recv(nullptr) != 0 && a.close_listen(nullptr) != 0, "close(NULL)");
    CHECK(a.finalize() == 0, "finalize");
}

TEST_P(nccl_abi, bad_input_gives_error_codes) {
    const int version = GetParam().version;
    int rs = 0, ss = 0;
    run_pair(
        GetParam().provider, GetParam().env,
        [&](const pipes&) {
            api a = load(version);
            std::array<char, handle_maxsize> h{};
            void* l = nullptr;
            const int n = refuse_before_comms(a, h, l);
            const live_comms c = refuse_bad_handles_then_connect(a, h, l);
            std::vector<std::byte> buf(4096);
            void* mh = refuse_bad_registrations(a, c, buf);
            refuse_bad_transfers(a, c, buf, mh, version);
            refuse_stale_handles(a, c, buf, mh);
            refuse_bad_vdevices(a, n);
            refuse_bad_closes(a, c);
        },
        [](const pipes&, pid_t) {}, &rs, &ss);
    EXPECT_TRUE(exited_ok(rs)) << "status " << rs;
}

// makeVDevice: two NICs (lo and eth0) fused into one virtual device; transfers must arrive
// byte-exact while rendezvous writes stripe over both (tests/integration/plugins checks the
// per-rail counts at the runtime level).

INSTANTIATE_TEST_SUITE_P(providers, nccl_abi,
                         ::testing::Values(param{"shm", 12}, param{"tcp;ofi_rxm", 12}, param{"tcp", 12}), name_of);

// Every older exported version, on one provider: the shims must reach the same implementation.
INSTANTIATE_TEST_SUITE_P(versions, nccl_abi,
                         ::testing::Values(param{"tcp", 6}, param{"tcp", 7}, param{"tcp", 8}, param{"tcp", 9},
                                           param{"tcp", 10}, param{"tcp", 11}),
                         name_of);

// The same with the runtime's background progress thread driving the engine.
INSTANTIATE_TEST_SUITE_P(progress_thread, nccl_abi,
                         ::testing::Values(param{"shm", 12, "LOOM_PROGRESS_THREAD=1"},
                                           param{"tcp;ofi_rxm", 12, "LOOM_PROGRESS_THREAD=1"}),
                         name_of);

}  // namespace
}  // namespace nccl_harness
