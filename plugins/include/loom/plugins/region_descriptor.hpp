// loom/plugins/region_descriptor.hpp — what a PE publishes about a registration so that the
// other PEs can reach it (pe_group::describe): fixed size, position-independent (addresses and
// keys, no process-local handle), versioned and checksummed.
//
// Layout (little-endian): 0 u32 magic "LMPE", 4 u16 version, 6 u16 bytes used, 8 u64 base
// address, 16 u64 length, 24 u32 owner PE, 28 u32 reserved (0), 32 the remote key
// (manager_messages.hpp), then u32 FNV-1a over everything before it; the rest is zero.
#pragma once

#include <loom/plugins/manager_messages.hpp>
#include <loom/plugins/memory_key.hpp>

#include <loom/error.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace loom::plugins {

/// Bytes of a region descriptor.
inline constexpr std::size_t region_descriptor_size = 256;
/// An encoded region descriptor.
using region_descriptor = std::array<std::byte, region_descriptor_size>;

/// A descriptor's content.
struct remote_view {
    std::uint64_t base{0};         ///< the registration's base address in the owner's address space
    std::uint64_t length{0};       ///< its length in bytes
    int owner{0};                  ///< the PE that registered it
    remote_key_bytes key_bytes{};  ///< its encoded remote key
    memory_key key{};              ///< key_bytes decoded (decode_region fills it)
};

/// The descriptor of `v` (key_bytes as given; `key` is not read).
[[nodiscard]] auto encode_region(const remote_view& v) -> region_descriptor;
/// invalid_argument for a truncated, foreign or damaged descriptor (or one whose key does not
/// decode or disagrees on the length); not_supported for another version.
[[nodiscard]] auto decode_region(std::span<const std::byte> bytes) -> result<remote_view>;
/// The base address in a descriptor that PE `owner` made; decode_region's errors, and
/// invalid_argument for another PE's descriptor.
[[nodiscard]] auto region_base(std::span<const std::byte> descriptor, int owner) -> result<std::uint64_t>;

}  // namespace loom::plugins
