// loom/plugins/channels.hpp — one-directional channels (senders, receivers, listeners): their
// identity, peer, connection and liveness state, and the request pools they own.
#pragma once

#include <loom/plugins/control_messages.hpp>
#include <loom/plugins/limits.hpp>
#include <loom/plugins/match_bits.hpp>
#include <loom/plugins/operation.hpp>
#include <loom/plugins/request_pool.hpp>
#include <loom/plugins/requests.hpp>

#include <loom/address.hpp>
#include <loom/endpoint.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace loom::plugins {

/// Per-(channel, user tag) sequence counters (open addressing, no allocation).
class tag_sequences {
public:
    /// The next sequence number for `tag`; nullopt when the table is full. Inline: the first
    /// probe hits for every tag but colliding ones.
    [[nodiscard]] auto next(std::uint32_t tag) noexcept -> std::optional<std::uint32_t> {
        std::uint32_t h = (tag * 2654435761U) % tag_table_size;
        for (int i = 0; i < tag_table_size; ++i, h = (h + 1) % tag_table_size) {
            auto& e = e_[h];
            if (!e.used) {
                e = {tag, 1, true};
                return 0;
            }
            if (e.tag == tag) return (e.seq++) & match_bits::sequence_mask;
        }
        return std::nullopt;
    }
    /// Forgets every tag: sequences start again at 0 (a channel reused).
    void reset() noexcept;

private:
    struct entry {
        std::uint32_t tag{0};
        std::uint32_t seq{0};
        bool used{false};
    };
    std::array<entry, tag_table_size> e_{};
};

struct channel_base;

/// An operation a layer above the engine issues to a channel's peer (the endpoint manager's
/// one-sided RMA and atomics). The engine submits it through `submit_with` on `rail`, defers it
/// on FI_EAGAIN like its own operations and hands its end — success, the completion's error or
/// the submission's — to `on_end`, under the engine lock. The caller keeps it alive until then.
struct foreign_op : op {
    /// 0 (in flight), 1 (complete already) or -FI_E*.
    using submit_fn = int (*)(foreign_op&, endpoint&, fabric_addr peer) noexcept;
    /// Receives the operation's end: success, or the completion's or submission's error.
    using end_fn = void (*)(foreign_op&, std::error_code) noexcept;
    submit_fn submit_with{nullptr};  ///< submits the operation on an endpoint to the peer
    end_fn on_end{nullptr};          ///< called once at its end
    channel_base* chan{nullptr};     ///< the channel whose peer it targets
    int rail{0};                     ///< the rail it goes on (below the channel's rails; the peer's key must have it)
    /// Its success means the peer's side answered (a read, an atomic, a write that completes
    /// once delivered): the peer monitor counts it as hearing from the peer.
    bool answered_by_peer{false};
};

/// A channel's connection state.
enum class chan_state : std::uint8_t {
    idle,        ///< not connected yet (the initial state)
    connecting,  ///< connection request sent; waiting to be accepted
    ready,       ///< connected: requests may be posted
    failed,      ///< the connection failed or the peer was declared dead
    closed       ///< closed on this side
};

/// Liveness of a connection (peer_monitor.cpp): while a request waits on the peer, pings go out
/// and the peer's pongs keep last_heard fresh. They go through the liveness endpoints of both
/// sides where both have one, so they do not wait behind the data; what the peer answers
/// meanwhile counts too.
struct liveness_state {
    /// The peer's liveness endpoint; unspecified when either side has none (pings then go
    /// with the data).
    fabric_addr via{fabric_addrs::unspecified};
    clock::time_point last_heard{};  ///< when the peer was last heard from
    /// Something from the peer completed since the last check (a message, a read, a delivered
    /// write): the check takes it as hearing from the peer. A flag, not a clock read, per completion.
    bool answered{false};
    clock::time_point last_ping{};                  ///< when the last ping went out
    std::uint32_t ping_sequence{0};                 ///< sequence number of the last ping sent
    op receive{};                                   ///< the posted receive for the peer's liveness messages
    std::array<std::byte, liveness_size> buffer{};  ///< where the peer's pings and pongs land
};

/// What senders, receivers and listeners share: identity, peer and connection state.
struct channel_base {
    std::atomic<std::uint32_t> magic{magic_dead};    ///< magic_send, magic_recv or magic_listen while open
    engine* eng{nullptr};                            ///< the engine it belongs to
    std::uint32_t id{0};                             ///< this side's channel id (what the peer puts in its tags)
    std::uint32_t remote_id{0};                      ///< the peer's channel id
    fabric_addr peer{fabric_addrs::unspecified};     ///< on rail 0
    int rails{1};                                    ///< rails both sides have
    std::array<fabric_addr, max_rails> rail_peer{};  ///< the peer on each rail ([0] == peer)
    std::uint32_t peer_pid{0};                       ///< the peer's process id (0: unknown)
    std::uint64_t peer_host{0};          ///< the peer's host identity (same-host peers are checked directly)
    chan_state state{chan_state::idle};  ///< connection state
    bool is_sender{false};               ///< true for a sender, false for a receiver
    std::string peer_name{};             ///< the peer's address as text, for logs
    liveness_state* live{nullptr};       ///< the derived channel's own (last, after its pools)
    bool closed_by_peer{false};          ///< the peer said it closed its side (not watched any more)
    std::uint32_t foreign_in_flight{0};  ///< foreign operations to the peer not yet ended
    clock::time_point foreign_since{};   ///< when the oldest of them may have started
};

struct listener;
/// The sending side of a one-directional channel.
struct sender : channel_base {
    std::uint32_t listen_id{0};                             ///< the listener's channel id at the peer
    std::size_t connect_len{0};                             ///< length of the connect message
    std::array<std::byte, control_capacity> connect_msg{};  ///< the connect message
    std::array<std::byte, control_capacity> accept_msg{};   ///< the peer's accept message lands here
    op connect_op{};                                        ///< its send
    op accept_op{};                                         ///< its receive
    clock::time_point deadline{};                           ///< the connect fails after this
    tag_sequences seqs{};                                   ///< sequence numbers per tag
    request_pool<send_request, send_pool_size> pool{};      ///< its send requests
    liveness_state liveness{};                              ///< the peer's liveness
    sender() noexcept { live = &liveness; }
};

/// The receiving side of a one-directional channel.
struct receiver : channel_base {
    std::size_t accept_len{0};                             ///< length of the accept message
    std::array<std::byte, control_capacity> accept_msg{};  ///< the accept message
    op accept_op{};                                        ///< its send
    tag_sequences seqs{};                                  ///< sequence numbers per tag
    request_pool<recv_request, recv_pool_size> pool{};     ///< its receive requests
    liveness_state liveness{};                             ///< the peer's liveness
    receiver() noexcept { live = &liveness; }
};

/// A CONNECT that arrived at a listener and waits for accept().
struct pending_connect {
    std::uint32_t sender_id{0};                 ///< the connector's channel id
    std::uint32_t pid{0};                       ///< the connector's process id
    std::uint64_t host{0};                      ///< the connector's host identity
    address peer_address{};                     ///< the connector's address (rail 0)
    std::vector<address> rail_addresses{};      ///< the connector's rails 1..
    std::optional<address> liveness_address{};  ///< the connector's liveness endpoint, if any
};

/// Takes connection requests; accept() turns each into a receiver.
struct listener : channel_base {
    std::array<std::byte, control_capacity> buffer{};  ///< where the next connect message lands
    op recv_op{};                                      ///< its receive
    std::deque<pending_connect> arrived{};             ///< requests that arrived and wait for accept()
};

}  // namespace loom::plugins
