// Region descriptors: encode, and decode with every field validated.
#include <loom/plugins/region_descriptor.hpp>

#include <loom/plugins/detail/little_endian.hpp>
#include <loom/plugins/wire.hpp>

#include <cstring>

namespace loom::plugins {

using detail::get_le;
using detail::put_le;

namespace {
constexpr std::uint32_t region_magic = 0x45504d4cU;  // "LMPE"
constexpr std::uint16_t region_version = 1;
constexpr std::size_t region_key_at = 32;
constexpr std::size_t region_sum_at = region_key_at + remote_key_size;
constexpr std::size_t region_used = region_sum_at + 4;
static_assert(region_used <= region_descriptor_size);
}  // namespace

auto encode_region(const remote_view& v) -> region_descriptor {
    region_descriptor d{};
    put_le<std::uint32_t>(d, 0, region_magic);
    put_le<std::uint16_t>(d, 4, region_version);
    put_le<std::uint16_t>(d, 6, static_cast<std::uint16_t>(region_used));
    put_le<std::uint64_t>(d, 8, v.base);
    put_le<std::uint64_t>(d, 16, v.length);
    put_le<std::uint32_t>(d, 24, static_cast<std::uint32_t>(v.owner));
    std::memcpy(d.data() + region_key_at, v.key_bytes.data(), remote_key_size);
    put_le<std::uint32_t>(d, region_sum_at, fnv1a(std::span<const std::byte>(d).first(region_sum_at)));
    return d;
}

auto decode_region(std::span<const std::byte> b) -> result<remote_view> {
    if (b.size() < region_used) return make_unexpected(errc::invalid_argument);
    if (get_le<std::uint32_t>(b, 0) != region_magic) return make_unexpected(errc::invalid_argument);
    if (get_le<std::uint16_t>(b, 4) != region_version) return make_unexpected(errc::not_supported);
    if (get_le<std::uint16_t>(b, 6) != region_used || get_le<std::uint32_t>(b, 28) != 0 ||
        get_le<std::uint32_t>(b, region_sum_at) != fnv1a(b.first(region_sum_at)))
        return make_unexpected(errc::invalid_argument);
    remote_view v;
    v.base = get_le<std::uint64_t>(b, 8);
    v.length = get_le<std::uint64_t>(b, 16);
    const auto owner = get_le<std::uint32_t>(b, 24);
    if (v.length == 0 || v.base + v.length < v.base || owner > 0x7fffffffU)
        return make_unexpected(errc::invalid_argument);
    v.owner = static_cast<int>(owner);
    std::memcpy(v.key_bytes.data(), b.data() + region_key_at, remote_key_size);
    auto key = decode_remote_key(v.key_bytes);
    if (!key || key->length != v.length) return make_unexpected(errc::invalid_argument);
    v.key = *key;
    return v;
}

auto region_base(std::span<const std::byte> descriptor, int owner) -> result<std::uint64_t> {
    auto v = decode_region(descriptor);
    if (!v) return std::unexpected(v.error());
    if (v->owner != owner) return make_unexpected(errc::invalid_argument);
    return v->base;
}

}  // namespace loom::plugins
