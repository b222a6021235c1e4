// loom-pingpong: two processes on this machine exchange messages over one provider through
// the loom API and report half-round-trip latency and bandwidth per size, checking every byte
// of the last message of each size.
//
//   loom-pingpong [-p PROVIDER] [-t] [-n ITERATIONS] [-m MAX_BYTES]
#include <loom/loom.hpp>

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace {

struct options {
    std::string provider{"shm"};
    bool tagged{false};
    int iterations{1000};
    std::size_t max_bytes{1u << 20};
};

auto die(const char* what, const std::error_code& ec) -> int {
    std::fprintf(stderr, "loom-pingpong: %s: %s\n", what, ec.message().c_str());
    return 1;
}

auto write_all(int fd, const void* p, std::size_t n) -> bool {
    for (auto* c = static_cast<const char*>(p); n > 0;) {
        const auto w = ::write(fd, c, n);
        if (w <= 0) return false;
        c += w;
        n -= static_cast<std::size_t>(w);
    }
    return true;
}
auto read_all(int fd, void* p, std::size_t n) -> bool {
    for (auto* c = static_cast<char*>(p); n > 0;) {
        const auto r = ::read(fd, c, n);
        if (r <= 0) return false;
        c += r;
        n -= static_cast<std::size_t>(r);
    }
    return true;
}

auto byte_at(std::size_t size, std::size_t i) -> std::byte { return static_cast<std::byte>((i * 7 + size) & 0xff); }

struct side {
    loom::fabric_info info;
    loom::fabric fabric;
    loom::domain domain;
    loom::completion_queue cq;
    loom::address_vector av;
    loom::endpoint ep;
    std::vector<std::byte> tx, rx;
    loom::memory_region tx_mr, rx_mr;
    loom::fabric_addr peer;
    bool tagged{false};
    loom::request_context tx_ctx, rx_ctx;

    auto open(const options& o) -> loom::void_result {
        auto all = loom::query_all({.capabilities = loom::capability::msg | loom::capability::tagged,
                                    .ep_type = loom::endpoint_types::rdm,
                                    .provider = o.provider});
        if (!all) return std::unexpected(all.error());
        info = *all->begin();
        for (const auto& i : *all)
            if (i.domain_name() == "lo" || i.provider_name() == "shm") {
                info = i;
                break;
            }
        tagged = o.tagged;
        auto f = loom::fabric::create(info);
        if (!f) return std::unexpected(f.error());
        fabric = std::move(*f);
        auto d = loom::domain::create(fabric, info);
        if (!d) return std::unexpected(d.error());
        domain = std::move(*d);
        auto c = loom::completion_queue::create(domain, {.size = 128});
        if (!c) return std::unexpected(c.error());
        cq = std::move(*c);
        auto a = loom::address_vector::create(domain);
        if (!a) return std::unexpected(a.error());
        av = std::move(*a);
        auto e = loom::endpoint::create(domain, info);
        if (!e) return std::unexpected(e.error());
        ep = std::move(*e);
        if (auto r = ep.bind_cq(cq, loom::cq_bind::transmit | loom::cq_bind::recv); !r) return r;
        if (auto r = ep.bind_av(av); !r) return r;
        if (auto r = ep.enable(); !r) return r;
        tx.resize(o.max_bytes);
        rx.resize(o.max_bytes);
        auto t = loom::memory_region::register_memory(domain, std::span{tx}, loom::mr_access_flags::send);
        if (!t) return std::unexpected(t.error());
        tx_mr = std::move(*t);
        auto r = loom::memory_region::register_memory(domain, std::span{rx}, loom::mr_access_flags::recv);
        if (!r) return std::unexpected(r.error());
        rx_mr = std::move(*r);
        return {};
    }

    bool tx_done{false}, rx_done{false};
    /// Reads completions until the one for `ctx` has arrived. Completions are matched by
    /// context: the peer's reply can complete before our own send reports.
    auto wait(const loom::request_context* ctx) -> loom::void_result {
        bool& done = ctx == &tx_ctx ? tx_done : rx_done;
        while (!done) {
            if (auto ev = cq.poll()) {
                if (ev->has_error()) return std::unexpected(ev->error);
                if (ev->context == &tx_ctx) tx_done = true;
                if (ev->context == &rx_ctx) rx_done = true;
            }
        }
        done = false;
        return {};
    }
    auto post_recv(std::size_t n) -> loom::void_result {
        auto buf = std::span{rx}.first(n);
        return tagged ? ep.tagged_recv(buf, 1, 0, loom::fabric_addrs::unspecified, rx_mr.descriptor(), &rx_ctx)
                      : ep.recv(buf, loom::fabric_addrs::unspecified, rx_mr.descriptor(), &rx_ctx);
    }
    auto send(std::size_t n) -> loom::void_result {
        auto buf = std::span<const std::byte>{tx}.first(n);
        for (;;) {
            auto r = tagged ? ep.tagged_send(buf, 1, peer, tx_mr.descriptor(), &tx_ctx)
                            : ep.send(buf, peer, tx_mr.descriptor(), &tx_ctx);
            if (r || !loom::is_again(r.error())) return r;
            (void)cq.poll();
        }
    }
};

auto run(bool initiator, int fd, const options& o) -> int {
    side s;
    if (auto r = s.open(o); !r) return die("open", r.error());
    auto me = s.ep.name();
    if (!me) return die("name", me.error());
    const auto raw = loom::to_raw(*me);
    const std::uint32_t hdr[2] = {static_cast<std::uint32_t>(loom::native_format(*me)),
                                  static_cast<std::uint32_t>(raw.size())};
    std::uint32_t peer_hdr[2];
    if (!write_all(fd, hdr, sizeof hdr) || !write_all(fd, raw.data(), raw.size()) ||
        !read_all(fd, peer_hdr, sizeof peer_hdr))
        return die("address exchange", std::make_error_code(std::errc::broken_pipe));
    std::vector<std::byte> peer_raw(peer_hdr[1]);
    if (!read_all(fd, peer_raw.data(), peer_raw.size()))
        return die("address exchange", std::make_error_code(std::errc::broken_pipe));
    auto peer = loom::address_from_raw(static_cast<loom::address_format>(peer_hdr[0]), peer_raw);
    if (!peer) return die("peer address", peer.error());
    auto h = s.av.insert(*peer);
    if (!h) return die("av insert", h.error());
    s.peer = *h;

    if (initiator)
        std::printf("# provider %s, %s messages, %d iterations per size\n%12s %10s %14s %14s  %s\n", o.provider.c_str(),
                    o.tagged ? "tagged" : "untagged", o.iterations, "bytes", "iters", "latency(us)", "bw(MB/s)",
                    "check");
    for (std::size_t size = 1; size <= o.max_bytes; size *= 4) {
        const int iters = size >= (256u << 10) ? std::max(10, o.iterations / 20) : o.iterations;
        for (std::size_t i = 0; i < size; ++i) s.tx[i] = byte_at(size, i);
        char sync = 0;  // both sides ready for this size
        if (!write_all(fd, &sync, 1) || !read_all(fd, &sync, 1)) return 1;
        const auto t0 = std::chrono::steady_clock::now();
        for (int it = 0; it < iters; ++it) {
            if (auto r = s.post_recv(size); !r) return die("post receive", r.error());
            if (initiator) {
                if (auto r = s.send(size); !r) return die("send", r.error());
                if (auto r = s.wait(&s.tx_ctx); !r) return die("send completion", r.error());
                if (auto r = s.wait(&s.rx_ctx); !r) return die("receive completion", r.error());
            } else {
                if (auto r = s.wait(&s.rx_ctx); !r) return die("receive completion", r.error());
                if (auto r = s.send(size); !r) return die("send", r.error());
                if (auto r = s.wait(&s.tx_ctx); !r) return die("send completion", r.error());
            }
        }
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        bool ok = true;
        for (std::size_t i = 0; i < size; ++i) ok = ok && s.rx[i] == byte_at(size, i);
        if (initiator) {
            const double lat_us = secs / iters / 2 * 1e6;
            std::printf("%12zu %10d %14.2f %14.1f  %s\n", size, iters, lat_us, size / (lat_us * 1e-6) / 1e6,
                        ok ? "ok" : "WRONG BYTES");
            std::fflush(stdout);
        }
        if (!ok) return 3;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "-p" && i + 1 < argc)
            o.provider = argv[++i];
        else if (a == "-t")
            o.tagged = true;
        else if (a == "-n" && i + 1 < argc)
            o.iterations = std::max(1, std::atoi(argv[++i]));
        else if (a == "-m" && i + 1 < argc)
            o.max_bytes = std::strtoull(argv[++i], nullptr, 10);
        else {
            std::fprintf(stderr, "usage: loom-pingpong [-p PROVIDER] [-t] [-n ITERATIONS] [-m MAX_BYTES]\n");
            return 2;
        }
    }
    if (o.max_bytes == 0) o.max_bytes = 1;
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 1;
    const pid_t child = ::fork();
    if (child < 0) return 1;
    if (child == 0) {
        ::close(sv[0]);
        ::_exit(run(false, sv[1], o));
    }
    ::close(sv[1]);
    const int rc = run(true, sv[0], o);
    ::close(sv[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    const int child_rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    return rc != 0 ? rc : child_rc;
}
