// The Asio sections of the API description (Asio Integration, Coroutine Support, Registered
// Buffers), as written there (std::println aside), on loopback tcp. Filled in where the text
// elides setup or leaves the peer open: the endpoint's default peer is its own address, and a
// message is sent to it before a receive that waits for one.
#include "core_support.hpp"

#include <loom/asio.hpp>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/use_future.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>

namespace {

/// The endpoint's own address as its default peer (what the examples' sends go to).
void talk_to_itself(loom::asio::endpoint& ep, loom::address_vector& av) {
    auto self = av.insert(ep.native().name().value()).value();
    ep.set_default_peer(self);
}

/// The elided setup of the later examples: an Asio endpoint on loopback tcp that sends to
/// itself, its queue read by the started service.
auto loop_endpoint(::asio::io_context& ioc, core_test::loop_stack& s) -> loom::asio::endpoint {
    auto ep = loom::asio::make_endpoint(ioc, s.domain, s.info, s.cq, s.av).value();
    talk_to_itself(ep, s.av);
    auto& service = loom::asio::fabric_service::use(ioc);
    EXPECT_TRUE(service.register_cq(s.cq));
    service.start();
    return ep;
}

::asio::awaitable<void> communicate(loom::asio::endpoint& ep) {
    std::array<std::byte, 1024> buf{};

    // Await async operations naturally
    std::size_t n = co_await ep.async_receive(::asio::buffer(buf), ::asio::use_awaitable);
    std::printf("Received %zu bytes\n", n);

    // Tagged messaging with coroutines
    co_await ep.async_tagged_send(::asio::buffer(buf),
                                  0x1234,  // tag
                                  ::asio::use_awaitable);
}

TEST(AsioSpecExamples, asio_integration) {
    ::setenv("FI_PROVIDER", "tcp", 1);  // the example takes the first RDM provider: tcp here
    using namespace loom;

    // Query for fabric provider
    auto info = query_fabric({.ep_type = endpoint_types::rdm}).value();
    auto fabric = fabric::create(info).value();
    auto domain = domain::create(fabric, info).value();
    auto cq = completion_queue::create(domain, {.size = 128}).value();
    auto av = address_vector::create(domain).value();

    // Create Asio io_context
    ::asio::io_context ioc;

    // Create an Asio-integrated endpoint using the convenience helper
    auto ep = loom::asio::make_endpoint(ioc, domain, info, cq, av).value();
    talk_to_itself(ep, av);  // filled in: where the example's send goes

    // Register the completion queue with the fabric service for polling
    auto& service = loom::asio::fabric_service::use(ioc);
    service.register_cq(cq);
    service.start();

    // Register memory for RDMA operations
    std::array<std::byte, 4096> buffer{};
    auto mr = memory_region::register_memory(domain, std::span{buffer}, mr_access_flags::send | mr_access_flags::recv)
                  .value();

    ::testing::internal::CaptureStdout();  // what the example's callback prints
    // Async send with callback
    ep.async_send(::asio::buffer(buffer), [](std::error_code ec, std::size_t n) {
        if (!ec) {
            std::printf("Sent %zu bytes\n", n);
        }
    });

    // Or use std::future
    auto future = ep.async_receive(::asio::buffer(buffer), ::asio::use_future);
    ioc.run();
    auto bytes = future.get();  // Blocks until receive completes

    EXPECT_EQ(::testing::internal::GetCapturedStdout(), "Sent 4096 bytes\n");
    EXPECT_EQ(bytes, 4096u);
    EXPECT_EQ(service.outstanding_operations(), 0u);
    EXPECT_FALSE(service.deregister_cq(cq).has_value());
}

TEST(AsioSpecExamples, coroutine_support) {
    core_test::loop_stack s;
    ASSERT_NO_FATAL_FAILURE(core_test::must_open_loop("tcp", core_test::loop_options{}, s));
    ::asio::io_context ioc;
    // ... setup endpoint as above ...
    auto ep = loop_endpoint(ioc, s);
    auto& service = loom::asio::fabric_service::use(ioc);
    std::array<std::byte, 300> hello{};
    ep.async_send(::asio::buffer(hello), ::asio::detached);  // what communicate() receives

    ::testing::internal::CaptureStdout();  // what communicate() prints
    ::asio::co_spawn(ioc, communicate(ep), ::asio::detached);
    ioc.run();
    EXPECT_EQ(::testing::internal::GetCapturedStdout(), "Received 300 bytes\n");
    EXPECT_FALSE(service.deregister_cq(s.cq).has_value());
}

TEST(AsioSpecExamples, registered_buffers) {
    core_test::loop_stack s;
    ASSERT_NO_FATAL_FAILURE(core_test::must_open_loop("tcp", core_test::loop_options{}, s));
    auto& domain = s.domain;
    ::asio::io_context ioc;
    auto ep = loop_endpoint(ioc, s);
    auto& service = loom::asio::fabric_service::use(ioc);
    std::array<std::byte, 100> message{};
    message.fill(std::byte{0x3c});
    ep.async_send(::asio::buffer(message), ::asio::detached);

    // ... fabric/domain setup and a connected Asio endpoint named ep ...
    std::array<std::byte, 4096> storage{};
    auto mr = loom::memory_region::register_memory(domain, std::span{storage},
                                                   loom::mr_access_flags::send | loom::mr_access_flags::recv)
                  .value();

    loom::asio::mutable_registered_buffer buf{::asio::buffer(storage), &mr, loom::asio::registered_buffer_id{0}};
    ep.async_receive(loom::asio::buffer(buf, 1024), [](std::error_code error, std::size_t received) {
        // A successful receive reports the message length, not buffer capacity.
    });

    ioc.run();
    EXPECT_EQ(service.outstanding_operations(), 0u);  // the receive completed
    EXPECT_EQ(storage[99], std::byte{0x3c});
    EXPECT_EQ(storage[100], std::byte{0});
    EXPECT_FALSE(service.deregister_cq(s.cq).has_value());
}

}  // namespace
