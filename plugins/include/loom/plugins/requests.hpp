// loom/plugins/requests.hpp — the runtime's send and receive requests and the host's
// registrations: what a host handle points at, checked by magic and generation before use.
#pragma once

#include <loom/plugins/control_messages.hpp>
#include <loom/plugins/limits.hpp>
#include <loom/plugins/operation.hpp>

#include <loom/memory_region.hpp>
#include <loom/mr_cache.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace loom::plugins {

class engine;
struct channel_base;
/// `magic` of a live listener (each kind has its own, cleared on close).
inline constexpr std::uint32_t magic_listen = 0x4c4f4c31;  // per object kind, cleared on close
/// `magic` of a live sender.
inline constexpr std::uint32_t magic_send = 0x4c4f5331;
/// `magic` of a live receiver.
inline constexpr std::uint32_t magic_recv = 0x4c4f5231;
/// `magic` of a live memory_handle.
inline constexpr std::uint32_t magic_mr = 0x4c4f4d31;
/// `magic` of a send_request in use.
inline constexpr std::uint32_t magic_sreq = 0x4c4f7331;
/// `magic` of a recv_request in use.
inline constexpr std::uint32_t magic_rreq = 0x4c4f7231;
/// `magic` of any of them once closed or released.
inline constexpr std::uint32_t magic_dead = 0;

/// A user registration (a host's memory handle). Lives in a never-freed slab, so a
/// stale pointer still reads as dead instead of touching freed memory.
struct memory_handle {
    std::atomic<std::uint32_t> magic{magic_dead};  ///< magic_mr while live
    engine* eng{nullptr};                          ///< the engine that registered it
    bool device{false};                            ///< device memory (HMEM interface other than system)
    mr_handle reg{};                               ///< rail 0 (the engine's own NIC)
    std::array<mr_handle, max_rails - 1> extra{};  ///< rails 1.. of a virtual device
    std::byte* base{nullptr};                      ///< first registered byte
    std::size_t length{0};                         ///< bytes registered
};

/// A host profiler's event for one operation: the handle its callback gave back and the
/// description the adaptor passed it, kept stable in the request until the event is stopped.
struct host_event {
    void* handle{nullptr};                        ///< what the host profiler's start callback returned
    alignas(8) std::array<std::byte, 48> info{};  ///< the event description passed to the profiler
};

/// What send and receive requests share: identity, owner channel, state.
struct request_base {
    std::atomic<std::uint32_t> magic{magic_dead};  ///< magic_sreq or magic_rreq while in use
    std::uint32_t gen{0};                 ///< generation: tells a completion for an earlier use of the request apart
    channel_base* chan{nullptr};          ///< the channel it belongs to
    bool is_send{false};                  ///< a send_request, not a recv_request
    bool active{false};                   ///< taken from the pool and submitted
    bool done{false};                     ///< complete (or failed): the next test() reports it
    bool released{false};                 ///< handed back by the host; recycled once no op is in flight
    bool profiled{false};                 ///< host events are open: the release hook runs when the host's view ends
    bool recycle_queued{false};           ///< on the engine's list of requests to put back in their pool
    request_base* recycle_next{nullptr};  ///< that list's link
    errc error{errc::success};            ///< why the request failed (success while it has not)
    clock::time_point started{};          ///< when it was submitted (peer checks)
};

/// A send: eager (one tagged message, or an inject) or by rendezvous (RTS, CTS, RMA writes).
struct send_request : request_base {
    const std::byte* data{nullptr};                      ///< the data
    std::size_t size{0};                                 ///< bytes to send
    void* desc{nullptr};                                 ///< the host registration's descriptor, or null
    std::uint32_t user_tag{0};                           ///< the user's tag
    std::uint32_t seq{0};                                ///< sequence number within (channel, tag)
    bool rendezvous{false};                              ///< goes by rendezvous
    bool cts_seen{false};                                ///< the receiver's clear-to-send arrived
    host_event prof{};                                   ///< host profiler event
    std::size_t to_write{0};                             ///< bytes the receiver takes (at most its capacity)
    std::size_t written{0};                              ///< bytes written so far
    std::uint64_t imm_base{0};                           ///< immediate data that routes the writes to the receive slot
    int stripes{1};                                      ///< rails the writes are striped over
    std::array<std::uint64_t, max_rails> remote_addr{};  ///< the receive buffer's address on each rail
    std::array<std::uint64_t, max_rails> remote_key{};   ///< the receive buffer's key on each rail
    /// Per rail: where its stripe starts, its length, bytes of it written, the write in flight.
    /// @{
    std::array<std::size_t, max_rails> stripe_off{}, stripe_len{}, stripe_done{}, chunk{};
    /// @}
    std::array<mr_handle, max_rails> src{};                ///< registrations of the RMA source when the host gave none
    std::array<const memory_region*, max_rails> src_mr{};  ///< each rail's registration of the data
    std::array<std::byte, cts_max_size> cts{};             ///< the clear-to-send lands here
    op main{};                                             ///< the eager send or the rendezvous request
    op cts_op{};                                           ///< the receive of the clear-to-send
    std::array<op, max_rails> write_ops{};                 ///< the RMA write in flight on each rail
};

/// One buffer of a (grouped) receive.
struct recv_slot {
    std::byte* data{nullptr};                      ///< the buffer
    std::size_t capacity{0};                       ///< its size
    void* desc{nullptr};                           ///< the host registration's descriptor, or null
    std::array<std::uint64_t, max_rails> rkey{};   ///< the buffer's key on each rail (rendezvous)
    std::array<std::uint64_t, max_rails> raddr{};  ///< the buffer's address on each rail (rendezvous)
    std::uint32_t user_tag{0};                     ///< the user's tag
    std::uint32_t seq{0};                          ///< sequence number within (channel, tag)
    bool done{false};                              ///< complete
    bool rendezvous{false};                        ///< the sender chose the rendezvous
    bool has_key{false};                           ///< rkey and raddr are filled in
    std::array<mr_handle, max_rails> tmp{};        ///< registrations looked up when the host gave none
    memory_handle* host_reg{nullptr};              ///< the host's registration, or null
    host_event prof{};                             ///< host profiler event
    std::size_t received{0};                       ///< bytes received
    std::size_t expected{0};                       ///< bytes the rendezvous will write
    std::size_t landed{0};                         ///< bytes the rendezvous wrote so far
    /// Eager data for buffers smaller than scratch_size lands here first.
    std::array<std::byte, scratch_size> scratch{};
    std::array<std::byte, cts_max_size> cts{};  ///< the clear-to-send sent back
    std::size_t cts_len{0};                     ///< its length
    op recv_op{};                               ///< the tagged receive
    op cts_op{};                                ///< the clear-to-send's send
};

/// A receive of up to max_slots buffers, complete when every one has its message.
struct recv_request : request_base {
    int n{0};                                  ///< buffers
    int remaining{0};                          ///< buffers still waiting
    std::array<recv_slot, max_slots> slots{};  ///< the buffers
};

/// What an adaptor may read of a request (for its host's profiler, its logs).
struct request_view {
    bool is_send{false};     ///< a send
    bool rendezvous{false};  ///< a send that goes by RTS/CTS and RMA writes
    int parts{1};            ///< sub-receives of a grouped receive; 1 for a send
};
/// The view of `r`.
[[nodiscard]] inline auto view_of(const request_base& r) noexcept -> request_view {
    if (r.is_send) return {.is_send = true, .rendezvous = static_cast<const send_request&>(r).rendezvous, .parts = 1};
    return {.is_send = false, .rendezvous = false, .parts = static_cast<const recv_request&>(r).n};
}
/// Marks a request whose host events the adaptor opened: the engine calls its release hook
/// once when the host's view of the request ends.
inline void mark_profiled(request_base& r) noexcept { r.profiled = true; }
/// The host-event slot of part `i` of a request (the send itself, or sub-receive i).
[[nodiscard]] inline auto host_event_of(request_base& r, int i) noexcept -> host_event& {
    if (r.is_send) return static_cast<send_request&>(r).prof;
    return static_cast<recv_request&>(r).slots[static_cast<std::size_t>(i)].prof;
}

}  // namespace loom::plugins
