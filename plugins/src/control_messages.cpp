#include <loom/plugins/control_messages.hpp>
#include <loom/plugins/detail/little_endian.hpp>

#include <algorithm>
#include <cstring>

namespace loom::plugins {
namespace {

using detail::get_le;
using detail::put_le;

constexpr std::uint32_t connect_magic = 0x4e4e4f43;  // "CONN"
constexpr std::uint32_t accept_magic = 0x54504341;   // "ACPT"
constexpr std::uint32_t cts_magic = 0x31535443;      // "CTS1"
constexpr std::uint32_t live_magic = 0x4556494c;     // "LIVE"

// CONNECT
constexpr std::size_t c_magic = 0, c_version = 4, c_addr_len = 6, c_sender = 8, c_listen = 12, c_pid = 16,
                      c_format = 20, c_host = 24, c_addr = 32;
static_assert(c_addr == connect_header_size && c_host + 8 == connect_header_size);
// ACCEPT
constexpr std::size_t a_magic = 0, a_version = 4, a_pad0 = 6, a_receiver = 8, a_sender = 12, a_pid = 16, a_pad1 = 20,
                      a_host = 24;
static_assert(a_host + 8 == accept_header_size && a_pad0 + 2 == a_receiver && a_pad1 + 4 == a_host);
// CTS
constexpr std::size_t t_magic = 0, t_rails = 4, t_imm = 8, t_rail = 16, t_rail_size = 16;
static_assert(t_rail + t_rail_size * max_rails == cts_max_size);
// PING / PONG / CLOSED
constexpr std::size_t l_magic = 0, l_version = 4, l_type = 6, l_sequence = 8, l_pad = 12;
static_assert(l_pad + 4 == liveness_size);
// Rail list entry
constexpr std::size_t r_len = 0, r_format = 2, r_addr = 6;

auto valid_channel(std::uint32_t id) noexcept -> bool { return id != 0 && id <= match_bits::max_channel_id; }

auto bad() -> std::unexpected<std::error_code> { return make_unexpected(errc::protocol_error); }

auto address_fits(const address& a) -> bool {
    const auto n = to_raw(a).size();
    return native_format(a) != address_format::unspecified && n != 0 && n <= handle_address_capacity;
}

auto rails_size(const std::vector<address>& rails, const std::optional<address>& liveness) -> std::size_t {
    std::size_t n = 1;
    for (const auto& a : rails) n += r_addr + to_raw(a).size();
    return n + r_addr + (liveness ? to_raw(*liveness).size() : 0);
}

auto rails_fit(const std::vector<address>& rails, const std::optional<address>& liveness) -> bool {
    if (rails.size() >= static_cast<std::size_t>(max_rails)) return false;
    for (const auto& a : rails)
        if (!address_fits(a)) return false;
    return !liveness || address_fits(*liveness);
}

/// An address as its sender wrote it: native format and raw bytes (generic formats, or bytes
/// after a string's terminator, would decode to an address that is not what was sent).
auto decode_address(std::uint32_t format, std::span<const std::byte> bytes) -> result<address> {
    auto a = address_from_raw(static_cast<address_format>(format), bytes);
    if (!a || static_cast<std::uint32_t>(native_format(*a)) != format || !std::ranges::equal(to_raw(*a), bytes))
        return bad();
    return a;
}

/// One address entry at `off`; the offset after it.
auto encode_entry(const address& a, std::span<std::byte> out, std::size_t off) -> std::size_t {
    const auto raw = to_raw(a);
    put_le<std::uint16_t>(out, off + r_len, static_cast<std::uint16_t>(raw.size()));
    put_le<std::uint32_t>(out, off + r_format, static_cast<std::uint32_t>(native_format(a)));
    std::memcpy(out.data() + off + r_addr, raw.data(), raw.size());
    return off + r_addr + raw.size();
}

void encode_rails(const std::vector<address>& rails, const std::optional<address>& liveness, std::span<std::byte> out) {
    out[0] = static_cast<std::byte>(rails.size());
    std::size_t off = 1;
    for (const auto& a : rails) off = encode_entry(a, out, off);
    if (liveness) {
        (void)encode_entry(*liveness, out, off);
    } else {  // an empty entry: none
        put_le<std::uint16_t>(out, off + r_len, 0);
        put_le<std::uint32_t>(out, off + r_format, 0);
    }
}

/// The address entry at `off` (advanced past it).
auto decode_entry(std::span<const std::byte> in, std::size_t& off) -> result<address> {
    if (off + r_addr > in.size()) return bad();
    const auto len = get_le<std::uint16_t>(in, off + r_len);
    const auto fmt = get_le<std::uint32_t>(in, off + r_format);
    if (len == 0 || len > handle_address_capacity || off + r_addr + len > in.size()) return bad();
    auto a = decode_address(fmt, in.subspan(off + r_addr, len));
    if (!a) return bad();
    off += r_addr + len;
    return a;
}

/// The rail list at the start of `in` and the liveness entry after it (empty: none); trailing
/// bytes are refused.
auto decode_rails(std::span<const std::byte> in, std::vector<address>& rails, std::optional<address>& liveness)
    -> void_result {
    if (in.empty()) return bad();
    const auto n = std::to_integer<std::size_t>(in[0]);
    if (n >= static_cast<std::size_t>(max_rails)) return bad();
    std::size_t off = 1;
    for (std::size_t i = 0; i < n; ++i) {
        auto a = decode_entry(in, off);
        if (!a) return std::unexpected(a.error());
        rails.push_back(std::move(*a));
    }
    if (off + r_addr == in.size() && get_le<std::uint16_t>(in, off + r_len) == 0 &&
        get_le<std::uint32_t>(in, off + r_format) == 0)
        return {};
    auto a = decode_entry(in, off);
    if (!a || off != in.size()) return bad();
    liveness = std::move(*a);
    return {};
}

}  // namespace

auto encoded_size(const connect_message& m) noexcept -> std::size_t {
    return connect_header_size + to_raw(m.sender_address).size() + rails_size(m.rails, m.liveness);
}

auto encoded_size(const accept_message& m) noexcept -> std::size_t {
    return accept_header_size + rails_size(m.rails, m.liveness);
}

auto encode(const connect_message& m, std::span<std::byte> out) -> result<std::size_t> {
    if (!address_fits(m.sender_address) || !rails_fit(m.rails, m.liveness))
        return make_unexpected(errc::invalid_argument);
    const std::size_t n = encoded_size(m);
    if (n > out.size()) return make_unexpected(errc::no_space);
    const auto raw = to_raw(m.sender_address);
    put_le<std::uint32_t>(out, c_magic, connect_magic);
    put_le<std::uint16_t>(out, c_version, wire_version);
    put_le<std::uint16_t>(out, c_addr_len, static_cast<std::uint16_t>(raw.size()));
    put_le<std::uint32_t>(out, c_sender, m.sender_channel);
    put_le<std::uint32_t>(out, c_listen, m.listen_channel);
    put_le<std::uint32_t>(out, c_pid, m.pid);
    put_le<std::uint32_t>(out, c_format, static_cast<std::uint32_t>(native_format(m.sender_address)));
    put_le<std::uint64_t>(out, c_host, m.host);
    std::memcpy(out.data() + c_addr, raw.data(), raw.size());
    encode_rails(m.rails, m.liveness, out.subspan(c_addr + raw.size()));
    return n;
}

auto decode_connect(std::span<const std::byte> in) -> result<connect_message> {
    if (in.size() < connect_header_size || get_le<std::uint32_t>(in, c_magic) != connect_magic ||
        get_le<std::uint16_t>(in, c_version) != wire_version)
        return bad();
    connect_message m;
    m.sender_channel = get_le<std::uint32_t>(in, c_sender);
    m.listen_channel = get_le<std::uint32_t>(in, c_listen);
    if (!valid_channel(m.sender_channel) || !valid_channel(m.listen_channel)) return bad();
    const auto len = get_le<std::uint16_t>(in, c_addr_len);
    if (len == 0 || len > handle_address_capacity || c_addr + len > in.size()) return bad();
    auto a = decode_address(get_le<std::uint32_t>(in, c_format), in.subspan(c_addr, len));
    if (!a) return bad();
    if (auto r = decode_rails(in.subspan(c_addr + len), m.rails, m.liveness); !r) return std::unexpected(r.error());
    m.pid = get_le<std::uint32_t>(in, c_pid);
    m.host = get_le<std::uint64_t>(in, c_host);
    m.sender_address = std::move(*a);
    return m;
}

auto encode(const accept_message& m, std::span<std::byte> out) -> result<std::size_t> {
    if (!rails_fit(m.rails, m.liveness)) return make_unexpected(errc::invalid_argument);
    const std::size_t n = encoded_size(m);
    if (n > out.size()) return make_unexpected(errc::no_space);
    put_le<std::uint32_t>(out, a_magic, accept_magic);
    put_le<std::uint16_t>(out, a_version, wire_version);
    put_le<std::uint16_t>(out, a_pad0, 0);
    put_le<std::uint32_t>(out, a_receiver, m.receiver_channel);
    put_le<std::uint32_t>(out, a_sender, m.sender_channel);
    put_le<std::uint32_t>(out, a_pid, m.pid);
    put_le<std::uint32_t>(out, a_pad1, 0);
    put_le<std::uint64_t>(out, a_host, m.host);
    encode_rails(m.rails, m.liveness, out.subspan(accept_header_size));
    return n;
}

auto decode_accept(std::span<const std::byte> in) -> result<accept_message> {
    if (in.size() < accept_header_size + 1 || get_le<std::uint32_t>(in, a_magic) != accept_magic ||
        get_le<std::uint16_t>(in, a_version) != wire_version || get_le<std::uint16_t>(in, a_pad0) != 0 ||
        get_le<std::uint32_t>(in, a_pad1) != 0)
        return bad();
    accept_message m;
    m.receiver_channel = get_le<std::uint32_t>(in, a_receiver);
    m.sender_channel = get_le<std::uint32_t>(in, a_sender);
    if (!valid_channel(m.receiver_channel) || !valid_channel(m.sender_channel)) return bad();
    if (auto r = decode_rails(in.subspan(accept_header_size), m.rails, m.liveness); !r)
        return std::unexpected(r.error());
    m.pid = get_le<std::uint32_t>(in, a_pid);
    m.host = get_le<std::uint64_t>(in, a_host);
    return m;
}

auto encode(const clear_to_send& m, std::span<std::byte> out) -> result<std::size_t> {
    if (m.rails < 1 || m.rails > max_rails || m.capacity > immediate::length_mask)
        return make_unexpected(errc::invalid_argument);
    const std::size_t n = encoded_size(m);
    if (n > out.size()) return make_unexpected(errc::no_space);
    put_le<std::uint32_t>(out, t_magic, cts_magic);
    put_le<std::uint32_t>(out, t_rails, static_cast<std::uint32_t>(m.rails));
    put_le<std::uint64_t>(out, t_imm, immediate::make_base(m.target) | m.capacity);
    for (std::size_t k = 0; k < static_cast<std::size_t>(m.rails); ++k) {
        put_le<std::uint64_t>(out, t_rail + t_rail_size * k, m.rail[k].address);
        put_le<std::uint64_t>(out, t_rail + t_rail_size * k + 8, m.rail[k].key);
    }
    return n;
}

auto decode_cts(std::span<const std::byte> in) -> result<clear_to_send> {
    if (in.size() < t_rail || get_le<std::uint32_t>(in, t_magic) != cts_magic) return bad();
    const auto rails = get_le<std::uint32_t>(in, t_rails);
    if (rails < 1 || rails > static_cast<std::uint32_t>(max_rails) || in.size() != t_rail + t_rail_size * rails)
        return bad();
    clear_to_send m;
    const auto imm = get_le<std::uint64_t>(in, t_imm);
    m.target = immediate::target_of(imm);
    m.capacity = immediate::length_of(imm);
    if (!valid_channel(m.target.channel)) return bad();
    m.rails = static_cast<int>(rails);
    for (std::size_t k = 0; k < rails; ++k) {
        m.rail[k].address = get_le<std::uint64_t>(in, t_rail + t_rail_size * k);
        m.rail[k].key = get_le<std::uint64_t>(in, t_rail + t_rail_size * k + 8);
    }
    return m;
}

auto encode(const liveness_message& m, std::span<std::byte> out) -> result<std::size_t> {
    if (out.size() < liveness_size) return make_unexpected(errc::no_space);
    put_le<std::uint32_t>(out, l_magic, live_magic);
    put_le<std::uint16_t>(out, l_version, wire_version);
    put_le<std::uint16_t>(out, l_type, static_cast<std::uint16_t>(m.kind));
    put_le<std::uint32_t>(out, l_sequence, m.sequence);
    put_le<std::uint32_t>(out, l_pad, 0);
    return liveness_size;
}

auto decode_liveness(std::span<const std::byte> in) -> result<liveness_message> {
    if (in.size() != liveness_size || get_le<std::uint32_t>(in, l_magic) != live_magic ||
        get_le<std::uint16_t>(in, l_version) != wire_version || get_le<std::uint32_t>(in, l_pad) != 0)
        return bad();
    const auto kind = static_cast<liveness_kind>(get_le<std::uint16_t>(in, l_type));
    if (kind != liveness_kind::ping && kind != liveness_kind::pong && kind != liveness_kind::closed) return bad();
    return liveness_message{.kind = kind, .sequence = get_le<std::uint32_t>(in, l_sequence)};
}

}  // namespace loom::plugins
