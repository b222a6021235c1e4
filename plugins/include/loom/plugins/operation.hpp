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
    send_eager,     ///< an eager send: the whole message in one tagged send
    send_rts,       ///< A rendezvous request to send (RTS): announces a large message's size
    cts_recv,       ///< the sender's receive of the receiver's clear-to-send (CTS)
    rma_write,      ///< A rendezvous RMA write of data into the receiver's buffer (one per rail)
    recv_slot,      ///< A receive request's tagged receive into one of its buffers (slots)
    cts_send,       ///< the receiver's clear-to-send (CTS) answer to a rendezvous request
    listen_recv,    ///< A listener's receive of connection requests
    connect_send,   ///< A sender's connection request to a listener
    accept_recv,    ///< A sender's receive of the receiver's accept message
    accept_send,    ///< A receiver's accept message to its sender
    flush_read,     ///< an RMA read of the endpoint from itself that makes received data visible to a device
    liveness_recv,  ///< A channel's receive of its peer's liveness messages (close notices; pings without a liveness
                    ///< endpoint)
    liveness_any,   ///< A receive on the liveness endpoint of any channel's pings and pongs
    foreign,        ///< an operation of a layer above the engine (foreign_op)
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
