// loom/asio/detail/endpoint_state.hpp — what an Asio endpoint shares with its operations.
#pragma once

#include <loom/completion_queue.hpp>
#include <loom/endpoint.hpp>

#include <atomic>

namespace loom::asio {
class fabric_service;
}

namespace loom::asio::detail {

/// The native endpoint, the queues it completes on and the service that drives them. Each
/// outstanding operation holds a reference, so that an endpoint destroyed with operations in
/// flight keeps its native endpoint open until they complete (cancelled on destruction). Its
/// address is the owner tag of its operations in the queues' registries.
class alignas(64) endpoint_state {
public:
    endpoint_state(loom::endpoint&& ep, completion_queue* tx_cq, completion_queue* rx_cq,
                   fabric_service* service) noexcept
        : tx_cq(tx_cq), rx_cq(rx_cq), service(service), ep(std::move(ep)) {}
    endpoint_state(const endpoint_state&) = delete;
    auto operator=(const endpoint_state&) -> endpoint_state& = delete;
    ~endpoint_state() = default;

    void add_ref() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
    void release() noexcept {
        if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
    }
    /// References held by operations in flight (the endpoint's own excluded).
    [[nodiscard]] auto operations() const noexcept -> long { return refs_.load(std::memory_order_acquire) - 1; }

    // Aligned to a cache line: an operation reads these, with the count, in the first line, and
    // the endpoint's own per-operation fields (domain, flags, gates: after its handle) in the
    // third. A stream's copies evict both between operations.
    completion_queue* tx_cq;
    completion_queue* rx_cq;
    fabric_service* service;
    fabric_addr default_peer{fabric_addrs::unspecified};

private:
    std::atomic<long> refs_{1};

public:
    loom::endpoint ep;
};

}  // namespace loom::asio::detail
