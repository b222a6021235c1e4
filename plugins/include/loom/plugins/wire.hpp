// loom/plugins/wire.hpp — the listen handle the plugins hand through their host library
// (a fixed 128-byte handle, or a part of a larger connection blob).
//
// Layout (little-endian, 128 bytes):
//   0  u32 magic "LOOM"      4  u16 version      6  u16 flags
//   8  u64 channel id       16  u32 address format (loom::address_format)
//  20  u16 address length   22  address bytes (at most 98)
// 120  u32 reserved (0)    124  u32 checksum: FNV-1a over bytes [0, 124)
// Every field read from a peer is validated: a truncated, foreign, corrupted or
// wrong-version handle is an error, never a crash.
#pragma once

#include <loom/address.hpp>
#include <loom/error.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace loom::plugins {

/// Bytes of a listen handle.
inline constexpr std::size_t handle_size = 128;
inline constexpr std::uint32_t handle_magic = 0x4d4f4f4cU;  ///< "LOOM" read as a little-endian u32: the handle's magic
/// The version of the runtime's wire formats (2: CONNECT and ACCEPT carry the liveness endpoint;
/// 3: under ofi_rxm that endpoint is the core provider's).
inline constexpr std::uint16_t wire_version = 3;
/// Largest address a handle carries.
inline constexpr std::size_t handle_address_capacity = 98;

/// An encoded listen handle.
using handle_bytes = std::array<std::byte, handle_size>;

/// What a listen handle carries.
struct listen_info {
    std::uint64_t channel_id{0};  ///< the listener's channel id
    std::uint16_t flags{0};       ///< reserved; 0
    address endpoint_address{};   ///< the listener's endpoint address
};

/// Encodes a handle; invalid_argument when the address does not fit (more than
/// handle_address_capacity bytes) or has no format.
[[nodiscard]] auto encode_handle(const listen_info& info) -> result<handle_bytes>;

/// Decodes and validates a handle received from a peer. Errors: invalid_argument for a
/// buffer shorter than handle_size, a wrong magic (a foreign handle), a bad checksum, an
/// address length above the capacity, or an address that does not decode;
/// not_supported for a version this build does not speak.
[[nodiscard]] auto decode_handle(std::span<const std::byte> bytes) -> result<listen_info>;

/// FNV-1a (32-bit) of `bytes`.
[[nodiscard]] auto fnv1a(std::span<const std::byte> bytes) noexcept -> std::uint32_t;

}  // namespace loom::plugins
