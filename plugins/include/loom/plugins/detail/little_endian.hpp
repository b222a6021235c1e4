// Little-endian fields at fixed offsets of a byte buffer: every wire format of the runtime
// (listen handle, control messages) reads and writes through these two functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

namespace loom::plugins::detail {

template <class T>
    requires std::is_unsigned_v<T>
constexpr void put_le(std::span<std::byte> b, std::size_t off, T v) noexcept {
    for (std::size_t i = 0; i < sizeof(T); ++i)
        b[off + i] = static_cast<std::byte>((std::uint64_t{v} >> (8 * i)) & 0xff);
}

template <class T>
    requires std::is_unsigned_v<T>
[[nodiscard]] constexpr auto get_le(std::span<const std::byte> b, std::size_t off) noexcept -> T {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i)
        v |= std::uint64_t{std::to_integer<std::uint8_t>(b[off + i])} << (8 * i);
    return static_cast<T>(v);
}

}  // namespace loom::plugins::detail
