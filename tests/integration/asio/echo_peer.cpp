// loom-asio-echo-peer PROVIDER FD WAIT_OBJ: the other side of the Asio ping-pong test. Opens
// the provider, exchanges addresses with the test over FD, then in a coroutine on its own
// io_context sends back every tagged message it receives (tag 1 in, tag 2 out) until an empty
// one arrives. Exit status 0 when it ended that way.
#include "harness.hpp"

#include <loom/asio.hpp>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/use_awaitable.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace loom_test;

auto main(int argc, char** argv) -> int {
    if (argc != 4) return 2;
    const int fd = std::atoi(argv[2]);
    const bool wait_obj = std::string(argv[3]) == "1";
    auto st =
        open_stack(argv[1], loom::capability::msg | loom::capability::tagged, 0, {.size = 256, .wait_obj = wait_obj});
    if (!st) return 3;
    auto me = st->ep.name();
    if (!me || !send_address(fd, *me)) return 4;
    auto them = recv_address(fd, std::chrono::seconds(30));
    if (!them) return 5;
    auto peer = st->av.insert(*them);
    if (!peer) return 6;
    ::asio::io_context ioc;
    loom::asio::endpoint ep(ioc, std::move(st->ep), st->cq, st->cq);
    auto& service = loom::asio::fabric_service::use(ioc);
    if (!service.register_cq(st->cq)) return 7;
    service.start();
    int status = 8;
    std::vector<std::byte> buf(1 << 20);
    ::asio::co_spawn(
        ioc,
        [&]() -> ::asio::awaitable<void> {
            for (;;) {
                const std::size_t n = co_await ep.async_tagged_receive(::asio::buffer(buf), 1, ::asio::use_awaitable);
                if (n == 0) break;
                co_await ep.async_tagged_send_to(::asio::buffer(buf.data(), n), *peer, 2, ::asio::use_awaitable);
            }
            status = 0;
        },
        [&](const std::exception_ptr& e) {
            if (!e) return;
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& x) {
                std::fprintf(stderr, "echo peer: %s\n", x.what());
            }
        });
    ioc.run();
    service.stop();
    (void)service.deregister_cq(st->cq);
    return status;
}
