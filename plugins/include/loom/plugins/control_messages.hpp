// loom/plugins/control_messages.hpp — the runtime's control messages, each an encode/decode
// pair. Little-endian, fixed offsets (static_asserts in control_messages.cpp), versioned with
// wire_version; decode validates every field it reads, so a truncated, foreign or corrupted
// message is an error (protocol_error), never a crash or an out-of-range index.
//
// CONNECT (connector -> listener, control tag of the listen channel):
//   0 u32 magic "CONN"  4 u16 version  6 u16 address length  8 u32 sender channel
//  12 u32 listen channel  16 u32 pid  20 u32 address format  24 u64 host id
//  32 address bytes, then the rail list
// ACCEPT (listener -> connector, control tag of the sender channel):
//   0 u32 magic "ACPT"  4 u16 version  6 u16 0  8 u32 receiver channel  12 u32 sender channel
//  16 u32 pid  20 u32 0  24 u64 host id  32 the rail list (the zero fields must be zero)
// Rail list (addresses of rails 1.. of a virtual device): u8 count, then per rail
//   u16 length, u32 address format, address bytes
// Then the sender's liveness endpoint (where its pings and pongs go, apart from the data): one
// entry of the same shape; length 0 and format 0 when it has none.
// CTS (receiver -> sender, clear-to-send tag of the sender channel):
//   0 u32 magic "CTS1"  4 u32 rails  8 u64 immediate base | capacity  16 per rail u64 address, u64 key
// PING / PONG / CLOSED (either side -> the peer's channel, control tag with sequence
// liveness_sequence; pings and pongs between the liveness endpoints where both sides have one):
//   0 u32 magic "LIVE"  4 u16 version  6 u16 1 ping, 2 pong, 3 closed  8 u32 sequence  12 u32 0
#pragma once

#include <loom/address.hpp>
#include <loom/error.hpp>
#include <loom/plugins/limits.hpp>
#include <loom/plugins/match_bits.hpp>
#include <loom/plugins/wire.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace loom::plugins {

/// A connector's request to join a listen channel.
struct connect_message {
    std::uint32_t sender_channel{0};    ///< the connector's new channel id
    std::uint32_t listen_channel{0};    ///< the listen channel it joins
    std::uint32_t pid{0};               ///< the connector's process id
    std::uint64_t host{0};              ///< the connector's host identity
    address sender_address{};           ///< the connector's address (rail 0)
    std::vector<address> rails{};       ///< the connector's rails 1..
    std::optional<address> liveness{};  ///< the connector's liveness endpoint, if it has one
};

/// The listener's answer: the channel that will receive.
struct accept_message {
    std::uint32_t receiver_channel{0};  ///< the listener's new receive channel id
    std::uint32_t sender_channel{0};    ///< the connector's channel id, echoed
    std::uint32_t pid{0};               ///< the acceptor's process id
    std::uint64_t host{0};              ///< the acceptor's host identity
    std::vector<address> rails{};       ///< the acceptor's rails 1..
    std::optional<address> liveness{};  ///< the acceptor's liveness endpoint, if it has one
};

/// Where one rail of a rendezvous write goes.
struct remote_rail {
    std::uint64_t address{0};  ///< the buffer's address on the rail
    std::uint64_t key{0};      ///< the buffer's key on the rail
};

/// A receiver's clear-to-send: the buffer (per rail), how much it holds, and the immediate data
/// each write must carry.
struct clear_to_send {
    immediate::write_target target{};           ///< the receive the writes land in
    std::uint64_t capacity{0};                  ///< at most immediate::length_mask
    int rails{0};                               ///< 1 .. max_rails
    std::array<remote_rail, max_rails> rail{};  ///< per rail: where the writes go
};

/// What a liveness message says.
enum class liveness_kind : std::uint16_t {
    ping = 1,   ///< a probe, sent while a channel waits on its peer
    pong = 2,   ///< the answer to a ping
    closed = 3  ///< the sender of it has closed its side of the channel: stop waiting on it
};

/// A liveness message, exchanged between the two sides of a channel.
struct liveness_message {
    liveness_kind kind{liveness_kind::ping};  ///< what it says
    std::uint32_t sequence{0};                ///< a pong repeats its ping's
};

/// The sequence field of the control tag that carries liveness messages (0 is the handshake's).
inline constexpr std::uint32_t liveness_sequence = 1;

/// Bytes of an encoded liveness message.
inline constexpr std::size_t liveness_size = 16;
/// Bytes of a CONNECT before its address.
inline constexpr std::size_t connect_header_size = 32;
/// Bytes of an ACCEPT before its rail list.
inline constexpr std::size_t accept_header_size = 32;
/// Bytes of the largest CTS (every rail).
inline constexpr std::size_t cts_max_size = 16 + 16 * max_rails;

/// Encoded size of each message (what encode writes).
/// @{
[[nodiscard]] auto encoded_size(const connect_message& m) noexcept -> std::size_t;
[[nodiscard]] auto encoded_size(const accept_message& m) noexcept -> std::size_t;
[[nodiscard]] constexpr auto encoded_size(const clear_to_send& m) noexcept -> std::size_t {
    return 16 + 16 * static_cast<std::size_t>(m.rails);
}
/// @}

/// Writes the message into `out`; the bytes used. invalid_argument for an address (of a rail or
/// the liveness endpoint) without a format or longer than handle_address_capacity, or more
/// rails than max_rails - 1; no_space when `out` is too small.
/// @{
[[nodiscard]] auto encode(const connect_message& m, std::span<std::byte> out) -> result<std::size_t>;
[[nodiscard]] auto encode(const accept_message& m, std::span<std::byte> out) -> result<std::size_t>;
[[nodiscard]] auto encode(const clear_to_send& m, std::span<std::byte> out) -> result<std::size_t>;
[[nodiscard]] auto encode(const liveness_message& m, std::span<std::byte> out) -> result<std::size_t>;
/// @}

/// Decodes a received message; protocol_error for anything malformed (short, wrong magic or
/// version, lengths beyond the bytes, zero channel ids, bad addresses, rail counts out of range).
/// @{
[[nodiscard]] auto decode_connect(std::span<const std::byte> in) -> result<connect_message>;
[[nodiscard]] auto decode_accept(std::span<const std::byte> in) -> result<accept_message>;
[[nodiscard]] auto decode_cts(std::span<const std::byte> in) -> result<clear_to_send>;
[[nodiscard]] auto decode_liveness(std::span<const std::byte> in) -> result<liveness_message>;
/// @}

}  // namespace loom::plugins
