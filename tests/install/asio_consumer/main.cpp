// Sends a tagged message to itself through the installed Asio front end (shm loopback), the
// receive awaited in a coroutine.
#include "../shm_chain.hpp"

#include <loom/asio.hpp>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/use_awaitable.hpp>

#include <array>
#include <cstdio>

int main() {
    auto chain = open_shm_chain();
    if (!chain) return 1;
    auto& [info, fab, dom, cq, av] = *chain;
    ::asio::io_context ioc;
    auto ep = loom::asio::make_endpoint(ioc, dom, info, cq, av).value();
    ep.set_default_peer(av.insert(ep.native().name().value()).value());
    auto& service = loom::asio::fabric_service::use(ioc);
    if (!service.register_cq(cq)) return 1;
    service.start();
    std::array<std::byte, 64> out{}, in{};
    out.fill(std::byte{3});
    std::size_t received = 0;
    ::asio::co_spawn(
        ioc,
        [&]() -> ::asio::awaitable<void> {
            received = co_await ep.async_tagged_receive(::asio::buffer(in), 7, ::asio::use_awaitable);
        },
        ::asio::detached);
    ep.async_tagged_send(::asio::buffer(out), 7, ::asio::detached);
    ioc.run();
    if (received != 64 || in != out) return 1;
    std::printf("asio consumer: message received\n");
    return 0;
}
