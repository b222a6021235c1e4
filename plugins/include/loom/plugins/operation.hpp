// loom/plugins/operation.hpp — one libfabric operation of the engine: what kind it is, whose it
// is, and where it stands (in flight, queued for a retry). Its address is the provider's context.
#pragma once

#include <loom/context.hpp>

#include <chrono>
#include <cstdint>

namespace loom::plugins {

/// The clock the engine stamps operations and requests with.
using clock = std::chrono::steady_clock;

/// What an engine operation is: decides how its completion is handled.
enum class op_kind : std::uint8_t {
    send_eager,
    send_rts,
    cts_recv,
    rma_write,
    recv_slot,
    cts_send,
    listen_recv,
    connect_send,
    accept_recv,
    accept_send,
    flush_read,
    liveness_recv,
    foreign,
};

/// One libfabric operation of the engine; its address is the context handed to the provider.
struct op : request_context {
    void* owner{nullptr};                ///< the request or channel it belongs to
    std::uint32_t gen{0};                ///< the owner's generation when submitted (stale completions are dropped)
    op_kind kind{};                      ///< what it is
    std::uint8_t slot{0};                ///< the sub-receive or rail it serves
    bool in_flight{false};               ///< submitted and not yet completed
    bool deferred{false};                ///< queued: refused for now (submission_queue), or not yet handed over
    clock::time_point deferred_since{};  ///< the first refusal of this submission
};

}  // namespace loom::plugins
