// loom/asio/detail/endpoint_state.hpp — what an Asio endpoint shares with its operations.
#pragma once

#include <loom/asio/detail/op_count.hpp>
#include <loom/completion_queue.hpp>
#include <loom/endpoint.hpp>

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
    /// `one_thread`: the io_context's I/O objects are used from one thread at a time
    /// (fabric_service::one_thread()).
    endpoint_state(loom::endpoint&& ep, completion_queue* tx_cq, completion_queue* rx_cq, fabric_service* service,
                   bool one_thread) noexcept
        : tx_cq(tx_cq), rx_cq(rx_cq), service(service), refs_(1, one_thread), ep(std::move(ep)) {}
    endpoint_state(const endpoint_state&) = delete;
    auto operator=(const endpoint_state&) -> endpoint_state& = delete;
    ~endpoint_state() = default;

    void add_ref() noexcept { (void)refs_.add(1, std::memory_order_relaxed); }
    void release() noexcept {
        if (refs_.add(-1, std::memory_order_acq_rel) == 1) delete this;
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
    op_count refs_;

public:
    loom::endpoint ep;
};

}  // namespace loom::asio::detail
