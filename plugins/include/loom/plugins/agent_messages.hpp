// loom/plugins/agent_messages.hpp — the byte strings a transfer agent gives out and takes in:
// its connection info (which agent, and the address of its receive endpoint), the public data
// of a registration (where it is, how long, its remote key), and the notification record.
// Every string starts with a magic and a version and ends with a checksum (FNV-1a): a truncated,
// bit-flipped or foreign string is refused, never half-read.
//
//   connection info: "LMCI" u16 version, u16 name length, name, handle_bytes, u32 checksum
//   public data:     "LMPD" u16 version, u16 0, u64 address, u64 length, remote key, u32 checksum
//   notification:    u16 name length, name, message (a record of kind notification_record)
#pragma once

#include <loom/plugins/manager_messages.hpp>
#include <loom/plugins/wire.hpp>

#include <loom/error.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace loom::plugins {

/// The version the strings carry.
inline constexpr std::uint16_t agent_messages_version = 1;
/// Agent names travel in 16 bits of length.
inline constexpr std::size_t max_agent_name = 0xffff;
/// The record kind of a notification on a buffered connection.
inline constexpr std::uint16_t notification_record = first_component_kind;

/// How to reach a transfer agent: its name and its receive endpoint's address.
struct connection_info {
    std::string agent{};     ///< the agent's name
    handle_bytes address{};  ///< its receive endpoint's address
};

/// What a peer needs to reach a registration with one-sided operations.
struct public_data {
    std::uint64_t address{0};  ///< the registration's start in the owner's address space
    std::uint64_t length{0};   ///< its length in bytes
    remote_key_bytes key{};    ///< its encoded remote key
};

/// A notification as received.
struct notification {
    std::string agent{};    ///< who sent it
    std::string message{};  ///< the text sent
};

/// The connection info string; message_too_long for a name over max_agent_name.
[[nodiscard]] auto encode(const connection_info& info) -> result<std::string>;
/// invalid_argument for anything but a whole, intact string of this version.
[[nodiscard]] auto decode_connection_info(std::span<const std::byte> bytes) -> result<connection_info>;

/// The public data string.
[[nodiscard]] auto encode(const public_data& data) -> std::string;
/// invalid_argument for anything but a whole, intact string of this version.
[[nodiscard]] auto decode_public_data(std::span<const std::byte> bytes) -> result<public_data>;

/// The payload of a notification record (message_too_long for a name over max_agent_name).
[[nodiscard]] auto encode_notification(std::string_view agent, std::string_view message) -> result<std::string>;
/// The same into `out`, whose capacity is reused (a prepared transfer posted again allocates nothing).
[[nodiscard]] auto encode_notification(std::string_view agent, std::string_view message, std::string& out)
    -> void_result;
/// Decodes a notification record's payload; invalid_argument when it is shorter than its name.
[[nodiscard]] auto decode_notification(std::span<const std::byte> payload) -> result<notification>;

/// Views a string as bytes (what the encoders return is handed on as std::string).
[[nodiscard]] inline auto as_bytes_of(std::string_view s) noexcept -> std::span<const std::byte> {
    return std::as_bytes(std::span(s.data(), s.size()));
}

}  // namespace loom::plugins
