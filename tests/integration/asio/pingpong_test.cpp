// A coroutine ping-pong between two processes, each side an Asio endpoint driven by its
// io_context's fabric service: on tcp, shm and tcp;ofi_rxm, with timer polling and with the
// queue's wait descriptor where the provider offers one. Every echo is compared byte for byte.
#include "asio_progress.hpp"
#include "harness.hpp"

#include <loom/asio.hpp>

#include <asio/co_spawn.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/use_future.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <vector>

#ifndef LOOM_ASIO_ECHO_PEER_PATH
#error "LOOM_ASIO_ECHO_PEER_PATH must name the loom-asio-echo-peer executable"
#endif

using namespace loom_test;
using namespace std::chrono_literals;

namespace {

/// The echo peer process and the socket its address came over.
class echo_peer {
public:
    explicit echo_peer(const asio_case& c) {
        int sv[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return;
        const std::string fd_arg = std::to_string(sv[1]);
        pid_ = ::fork();
        if (pid_ == 0) {
            ::close(sv[0]);
            ::fcntl(sv[1], F_SETFD, 0);
            ::execl(LOOM_ASIO_ECHO_PEER_PATH, "loom-asio-echo-peer", c.provider.c_str(), fd_arg.c_str(),
                    c.wait_obj ? "1" : "0", static_cast<char*>(nullptr));
            ::_exit(127);
        }
        ::close(sv[1]);
        fd_ = sv[0];
    }
    ~echo_peer() {
        if (fd_ >= 0) ::close(fd_);
        if (pid_ > 0 && !reaped_) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
    }
    echo_peer(const echo_peer&) = delete;
    auto operator=(const echo_peer&) -> echo_peer& = delete;
    [[nodiscard]] auto fd() const -> int { return fd_; }
    /// The exit status, waiting up to `timeout`; -1 when it did not end.
    auto wait(std::chrono::milliseconds timeout) -> int {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        int status = 0;
        while (std::chrono::steady_clock::now() < deadline) {
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                reaped_ = true;
                return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            }
            std::this_thread::sleep_for(5ms);
        }
        return -1;
    }

private:
    pid_t pid_{-1};
    int fd_{-1};
    bool reaped_{false};
};

class asio_pingpong : public ::testing::TestWithParam<asio_case> {};

TEST_P(asio_pingpong, a_coroutine_ping_pong_echoes_every_byte) {
    const auto& c = GetParam();
    auto st = open_stack(c.provider, loom::capability::msg | loom::capability::tagged, 0,
                         {.size = 256, .wait_obj = c.wait_obj});
    ASSERT_TRUE(st) << st.error().message();
    echo_peer peer(c);
    ASSERT_GE(peer.fd(), 0);
    auto them = recv_address(peer.fd(), 30s);
    ASSERT_TRUE(them) << "the echo peer sent no address";
    ASSERT_TRUE(send_address(peer.fd(), st->ep.name().value()));
    const auto other = st->av.insert(*them).value();

    ::asio::io_context ioc;
    loom::asio::endpoint ep(ioc, std::move(st->ep), st->cq, st->cq);
    ep.set_default_peer(other);
    auto& service = loom::asio::fabric_service::use(ioc);
    ASSERT_TRUE(service.register_cq(st->cq));
    service.start();
    const bool by_fd = service.progress_of(st->cq) == loom::asio::fabric_service::progress_kind::descriptor;
    EXPECT_EQ(by_fd, c.wait_obj && c.provider != "shm");

    constexpr int rounds = 300;
    std::vector<std::byte> out(1 << 20), in(1 << 20);
    auto done = ::asio::co_spawn(
        ioc,
        [&]() -> ::asio::awaitable<int> {
            int bad = 0;
            for (int i = 0; i < rounds; ++i) {
                const std::size_t size = std::size_t{1} << (i % 21);  // 1 B .. 1 MiB
                fill_pattern(std::span{out}.first(size), static_cast<std::uint64_t>(i));
                co_await ep.async_tagged_send(::asio::buffer(out.data(), size), 1, ::asio::use_awaitable);
                const std::size_t n = co_await ep.async_tagged_receive(::asio::buffer(in), 2, ::asio::use_awaitable);
                if (n != size || check_pattern(std::span{in}.first(n), static_cast<std::uint64_t>(i))) ++bad;
            }
            co_await ep.async_tagged_send(::asio::buffer(out.data(), 0), 1, ::asio::use_awaitable);  // the end
            co_return bad;
        },
        ::asio::use_future);
    ioc.run_for(120s);
    ASSERT_EQ(done.wait_for(0s), std::future_status::ready) << "the ping-pong did not finish";
    EXPECT_EQ(done.get(), 0) << "echoes differed from what was sent";
    EXPECT_EQ(peer.wait(30s), 0);
    service.stop();
    EXPECT_FALSE(service.deregister_cq(st->cq));
}

INSTANTIATE_TEST_SUITE_P(providers, asio_pingpong,
                         ::testing::Values(asio_case{"tcp", false}, asio_case{"shm", false},
                                           asio_case{"tcp;ofi_rxm", false}, asio_case{"tcp", true},
                                           asio_case{"tcp;ofi_rxm", true}),
                         asio_case_name<::testing::TestParamInfo<asio_case>>);

}  // namespace
