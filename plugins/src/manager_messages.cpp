#include <loom/plugins/detail/little_endian.hpp>
#include <loom/plugins/manager_messages.hpp>

#include <algorithm>
#include <cstring>
#include <limits>

namespace loom::plugins {
namespace {

using detail::get_le;
using detail::put_le;

constexpr std::uint32_t batch_magic = 0x31544142;  // "BAT1"
constexpr std::uint32_t zch_magic = 0x3148435a;    // "ZCH1"
constexpr std::uint32_t key_magic = 0x59454b52;    // "RKEY"

// Batch header and record header
constexpr std::size_t b_magic = 0, b_version = 4, b_count = 6, b_total = 8, b_pad = 12;
static_assert(b_pad + 4 == batch_header_size);
constexpr std::size_t r_length = 0, r_kind = 4, r_pad = 6;
static_assert(r_pad + 2 == record_header_size);
// Zero-copy header
constexpr std::size_t z_magic = 0, z_version = 4, z_header_len = 6, z_data_len = 8, z_header = 16;
static_assert(z_header + max_header_bytes == zero_copy_header_size);
// Remote key
constexpr std::size_t k_magic = 0, k_version = 4, k_rails = 6, k_length = 8, k_rail = 16, k_rail_size = 16,
                      k_checksum = k_rail + k_rail_size * max_rails, k_tail = k_checksum + 4;
static_assert(k_tail + 4 == remote_key_size && k_rails + 2 == k_length && k_checksum == 144);
constexpr std::uint16_t key_version = 2;  // 1 had one rail

auto bad() -> std::unexpected<std::error_code> { return make_unexpected(errc::protocol_error); }

}  // namespace

auto batch_writer::append(std::uint16_t kind, std::span<const std::byte> payload) noexcept -> bool {
    const std::size_t need = record_size(payload.size());
    if (payload.size() > std::numeric_limits<std::uint32_t>::max() || need > buf_.size() - used_ ||
        count_ == std::numeric_limits<std::uint16_t>::max())
        return false;
    auto rec = buf_.subspan(used_, need);
    put_le(rec, r_length, static_cast<std::uint32_t>(payload.size()));
    put_le(rec, r_kind, kind);
    put_le(rec, r_pad, std::uint16_t{0});
    if (!payload.empty()) std::memcpy(rec.data() + record_header_size, payload.data(), payload.size());
    std::fill(rec.begin() + static_cast<std::ptrdiff_t>(record_header_size + payload.size()), rec.end(), std::byte{0});
    used_ += need;
    ++count_;
    return true;
}

auto batch_writer::finish() noexcept -> std::span<const std::byte> {
    put_le(buf_, b_magic, batch_magic);
    put_le(buf_, b_version, wire_version);
    put_le(buf_, b_count, static_cast<std::uint16_t>(count_));
    put_le(buf_, b_total, static_cast<std::uint32_t>(used_));
    put_le(buf_, b_pad, std::uint32_t{0});
    return buf_.first(used_);
}

auto batch_reader::open(std::span<const std::byte> b) -> result<batch_reader> {
    if (b.size() < batch_header_size || get_le<std::uint32_t>(b, b_magic) != batch_magic ||
        get_le<std::uint16_t>(b, b_version) != wire_version || get_le<std::uint32_t>(b, b_pad) != 0 ||
        get_le<std::uint32_t>(b, b_total) != b.size())
        return bad();
    return batch_reader(b, get_le<std::uint16_t>(b, b_count));
}

auto batch_reader::next() -> result<std::optional<batch_record>> {
    if (at_ == buf_.size()) {
        if (seen_ != count_) return bad();
        return std::optional<batch_record>{};
    }
    if (buf_.size() - at_ < record_header_size || seen_ == count_) return bad();
    auto rest = buf_.subspan(at_);
    const std::size_t len = get_le<std::uint32_t>(rest, r_length);
    if (get_le<std::uint16_t>(rest, r_pad) != 0 || len > rest.size() - record_header_size ||
        record_size(len) > rest.size())
        return bad();
    at_ += record_size(len);
    ++seen_;
    return std::optional<batch_record>{
        batch_record{.kind = get_le<std::uint16_t>(rest, r_kind), .payload = rest.subspan(record_header_size, len)}};
}

auto encode(const goodbye& g, std::span<std::byte> out) -> result<std::size_t> {
    batch_writer w(out);
    std::array<std::byte, goodbye_size> payload{};
    put_le(payload, 0, g.batches);
    put_le(payload, 8, g.zero_copy);
    if (!w.append(static_cast<std::uint16_t>(record_kind::goodbye), payload)) return make_unexpected(errc::no_space);
    return w.finish().size();
}

auto decode_goodbye(std::span<const std::byte> payload) -> result<goodbye> {
    if (payload.size() != goodbye_size) return bad();
    return goodbye{.batches = get_le<std::uint64_t>(payload, 0), .zero_copy = get_le<std::uint64_t>(payload, 8)};
}

auto encode(const zero_copy_header& h, std::span<std::byte> out) -> result<std::size_t> {
    if (h.header.size() > max_header_bytes) return make_unexpected(errc::invalid_argument);
    const std::size_t n = z_header + h.header.size();
    if (out.size() < n) return make_unexpected(errc::no_space);
    put_le(out, z_magic, zch_magic);
    put_le(out, z_version, wire_version);
    put_le(out, z_header_len, static_cast<std::uint16_t>(h.header.size()));
    put_le(out, z_data_len, h.data_length);
    if (!h.header.empty()) std::memcpy(out.data() + z_header, h.header.data(), h.header.size());
    return n;
}

auto decode_zero_copy_header(std::span<const std::byte> in) -> result<zero_copy_header> {
    if (in.size() < z_header || get_le<std::uint32_t>(in, z_magic) != zch_magic ||
        get_le<std::uint16_t>(in, z_version) != wire_version)
        return bad();
    const std::size_t len = get_le<std::uint16_t>(in, z_header_len);
    if (len > max_header_bytes || in.size() != z_header + len) return bad();
    return zero_copy_header{.data_length = get_le<std::uint64_t>(in, z_data_len), .header = in.subspan(z_header, len)};
}

auto encode(const memory_key& k) -> result<remote_key_bytes> {
    if (k.rails < 1 || k.rails > max_rails) return make_unexpected(errc::invalid_argument);
    remote_key_bytes out{};
    put_le(out, k_magic, key_magic);
    put_le(out, k_version, key_version);
    put_le(out, k_rails, static_cast<std::uint16_t>(k.rails));
    put_le(out, k_length, k.length);
    for (std::size_t i = 0; i < static_cast<std::size_t>(k.rails); ++i) {
        put_le(out, k_rail + k_rail_size * i, k.rail[i].base);
        put_le(out, k_rail + k_rail_size * i + 8, k.rail[i].key);
    }
    put_le(out, k_checksum, fnv1a(std::span{out}.first(k_checksum)));
    return out;
}

auto decode_remote_key(std::span<const std::byte> in) -> result<memory_key> {
    if (in.size() != remote_key_size || get_le<std::uint32_t>(in, k_magic) != key_magic ||
        get_le<std::uint16_t>(in, k_version) != key_version ||
        get_le<std::uint32_t>(in, k_checksum) != fnv1a(in.first(k_checksum)) || get_le<std::uint32_t>(in, k_tail) != 0)
        return bad();
    memory_key k{.length = get_le<std::uint64_t>(in, k_length), .rails = get_le<std::uint16_t>(in, k_rails)};
    if (k.rails < 1 || k.rails > max_rails) return bad();
    const auto used = k_rail + k_rail_size * static_cast<std::size_t>(k.rails);
    if (std::any_of(in.begin() + static_cast<std::ptrdiff_t>(used), in.begin() + k_checksum,
                    [](std::byte b) { return b != std::byte{0}; }))
        return bad();  // unused rails are zero
    for (std::size_t i = 0; i < static_cast<std::size_t>(k.rails); ++i) {
        k.rail[i] = {.base = get_le<std::uint64_t>(in, k_rail + k_rail_size * i),
                     .key = get_le<std::uint64_t>(in, k_rail + k_rail_size * i + 8)};
        if (k.rail[i].base + k.length < k.rail[i].base) return bad();  // the range would wrap
    }
    return k;
}

}  // namespace loom::plugins
