#include "peer_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <thread>

#ifndef LOOM_TEST_PEER_PATH
#error "LOOM_TEST_PEER_PATH must name the loom-test-peer executable"
#endif

namespace loom_test {
using namespace std::chrono_literals;

peer_process::peer_process(const std::string& provider, loom::capability caps, stack& local) : prog_(local.cq) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        error_ = "socketpair failed";
        return;
    }
    char fd_arg[16], caps_arg[32];
    std::snprintf(fd_arg, sizeof fd_arg, "%d", sv[1]);
    std::snprintf(caps_arg, sizeof caps_arg, "%llx", static_cast<unsigned long long>(caps.get()));
    pid_ = ::fork();
    if (pid_ == 0) {
        ::close(sv[0]);
        const int flags = ::fcntl(sv[1], F_GETFD);
        ::fcntl(sv[1], F_SETFD, flags & ~FD_CLOEXEC);
        ::execl(LOOM_TEST_PEER_PATH, "loom-test-peer", provider.c_str(), fd_arg, caps_arg, static_cast<char*>(nullptr));
        ::_exit(127);
    }
    ::close(sv[1]);
    fd_ = sv[0];
    if (pid_ < 0) {
        error_ = "fork failed";
        return;
    }
    auto them = recv_address(fd_, 30s);
    if (!them) {
        error_ = "peer did not send a valid address (provider unavailable?)";
        return;
    }
    auto me = local.ep.name();
    if (!me || !send_address(fd_, *me)) {
        error_ = "cannot send our address";
        return;
    }
    native_ = *them;
    auto h = local.av.insert(*them);
    if (!h) {
        error_ = "av insert of the peer failed: " + h.error().message();
        return;
    }
    addr_ = *h;
    peer_.emplace(*h);
    ok_ = true;
}

peer_process::~peer_process() {
    if (pid_ > 0 && fd_ >= 0) {
        const command q{.code = op::quit};
        (void)write_all(fd_, &q, sizeof q);
    }
    if (fd_ >= 0) ::close(fd_);
    if (pid_ > 0) {
        for (int i = 0; i < 200; ++i) {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) return;
            std::this_thread::sleep_for(25ms);
        }
        kill();
    }
}

void peer_process::kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
}

auto peer_process::run(const command& c) -> reply {
    reply r;
    if (!write_all(fd_, &c, sizeof c) || !prog_.read_fd(fd_, &r, sizeof r, 90s)) {
        r.status = static_cast<int>(loom::errc::timed_out);
        std::snprintf(r.text, sizeof r.text, "peer did not answer");
    }
    return r;
}

auto peer_process::add_peer(const loom::address& a) -> std::int32_t {
    const command c{.code = op::add_peer};
    reply r;
    if (!write_all(fd_, &c, sizeof c) || !send_address(fd_, a) || !prog_.read_fd(fd_, &r, sizeof r, 30s) ||
        r.status != 0)
        return -1;
    return static_cast<std::int32_t>(r.value);
}

local_buffers::local_buffers(loom::domain& dom, std::size_t n)
    : send_area(std::make_unique<std::byte[]>(n)), recv_area(std::make_unique<std::byte[]>(n)), size(n) {
    send_mr =
        loom::memory_region::register_memory(dom, std::span{send_area.get(), n}, loom::mr_access_flags::send).value();
    recv_mr =
        loom::memory_region::register_memory(dom, std::span{recv_area.get(), n}, loom::mr_access_flags::recv).value();
}

auto send_and_wait(stack& s, progress& prog, local_buffers& b, kind k, std::size_t size, std::uint64_t seed,
                   std::uint64_t tag, loom::fabric_addr dest) -> loom::result<loom::completion_event> {
    auto buf = b.send(size);
    fill_pattern(buf, seed);
    loom::request_context ctx;
    auto ok = prog.retry(
        [&] {
            return k == kind::tagged ? s.ep.tagged_send(buf, b.send_mr, tag, dest, &ctx)
                                     : s.ep.send(buf, b.send_mr, dest, &ctx);
        },
        30s);
    if (!ok) return std::unexpected(ok.error());
    return prog.wait_for(&ctx, 30s);
}

}  // namespace loom_test
