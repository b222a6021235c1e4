// The spec's opening example as a program, unchanged but for std::println (GCC 12 has no
// <print>). CTest runs it with the providers that require a context for every operation left
// out of discovery (FI_PROVIDER=^psm3): its receive carries none.
#include <array>
#include <cstdio>
#include <loom/async/completion_queue.hpp>
#include <loom/loom.hpp>

auto main() -> int {
    using namespace loom;

    // Query for providers supporting tagged messaging
    auto info_result =
        query_fabric({.capabilities = capability::msg | capability::tagged, .ep_type = endpoint_types::rdm});
    if (!info_result) {
        std::fprintf(stderr, "No suitable fabric provider found\n");
        return 1;
    }
    auto& info = *info_result;

    // Create fabric and domain from the first matching provider
    auto fabric = fabric::create(info).value();
    auto domain = domain::create(fabric, info).value();

    // Create completion queue for operation notifications
    auto cq = completion_queue::create(domain, {.size = 128}).value();

    // Create address vector for peer addressing (required for RDM endpoints)
    auto av = address_vector::create(domain).value();

    // Create and configure endpoint
    auto ep = endpoint::create(domain, info).value();
    ep.bind_cq(cq, cq_bind::transmit | cq_bind::recv).value();
    ep.bind_av(av).value();
    ep.enable().value();

    // Allocate and register a buffer for RDMA operations
    std::array<std::byte, 4096> buffer{};
    auto mr = memory_region::register_memory(domain, std::span{buffer}, mr_access_flags::send | mr_access_flags::recv)
                  .value();

    // Post a receive for incoming messages
    auto recv_result = ep.recv(std::span{buffer});
    if (!recv_result) {
        std::fprintf(stderr, "Failed to post receive\n");
        return 1;
    }

    // Poll for completions
    while (auto event = cq.poll()) {
        if (event->has_error()) {
            std::fprintf(stderr, "Operation failed\n");
        } else {
            std::printf("Received %zu bytes\n", event->bytes_transferred);
        }
        break;
    }

    return 0;
}
