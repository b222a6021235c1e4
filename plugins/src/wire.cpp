#include "loom/plugins/wire.hpp"

#include <loom/plugins/detail/little_endian.hpp>

#include <cstring>

namespace loom::plugins {
namespace {

constexpr std::size_t off_magic = 0, off_version = 4, off_flags = 6, off_channel = 8, off_format = 16,
                      off_addr_len = 20, off_addr = 22, off_reserved = 120, off_checksum = 124;
static_assert(off_addr + handle_address_capacity == off_reserved);

using detail::get_le;
using detail::put_le;

}  // namespace

auto fnv1a(std::span<const std::byte> bytes) noexcept -> std::uint32_t {
    std::uint32_t h = 2166136261U;
    for (auto b : bytes) {
        h ^= static_cast<std::uint32_t>(b);
        h *= 16777619U;
    }
    return h;
}

auto encode_handle(const listen_info& info) -> result<handle_bytes> {
    const auto format = native_format(info.endpoint_address);
    if (format == address_format::unspecified) return make_unexpected(errc::invalid_argument);
    const auto raw = to_raw(info.endpoint_address);
    if (raw.empty() || raw.size() > handle_address_capacity) return make_unexpected(errc::invalid_argument);
    handle_bytes b{};
    put_le<std::uint32_t>(b, off_magic, handle_magic);
    put_le<std::uint16_t>(b, off_version, wire_version);
    put_le<std::uint16_t>(b, off_flags, info.flags);
    put_le<std::uint64_t>(b, off_channel, info.channel_id);
    put_le<std::uint32_t>(b, off_format, static_cast<std::uint32_t>(format));
    put_le<std::uint16_t>(b, off_addr_len, static_cast<std::uint16_t>(raw.size()));
    std::memcpy(b.data() + off_addr, raw.data(), raw.size());
    put_le<std::uint32_t>(b, off_checksum, fnv1a(std::span{b}.first(off_checksum)));
    return b;
}

auto decode_handle(std::span<const std::byte> bytes) -> result<listen_info> {
    if (bytes.size() < handle_size) return make_unexpected(errc::invalid_argument);
    const auto b = bytes.first(handle_size);
    if (get_le<std::uint32_t>(b, off_magic) != handle_magic) return make_unexpected(errc::invalid_argument);
    if (get_le<std::uint32_t>(b, off_checksum) != fnv1a(b.first(off_checksum)))
        return make_unexpected(errc::invalid_argument);
    if (get_le<std::uint16_t>(b, off_version) != wire_version) return make_unexpected(errc::not_supported);
    const auto len = get_le<std::uint16_t>(b, off_addr_len);
    if (len == 0 || len > handle_address_capacity) return make_unexpected(errc::invalid_argument);
    const auto format = static_cast<address_format>(get_le<std::uint32_t>(b, off_format));
    auto addr = address_from_raw(format, b.subspan(off_addr, len));
    if (!addr) return std::unexpected(addr.error());
    listen_info info;
    info.channel_id = get_le<std::uint64_t>(b, off_channel);
    info.flags = get_le<std::uint16_t>(b, off_flags);
    info.endpoint_address = std::move(*addr);
    return info;
}

}  // namespace loom::plugins
