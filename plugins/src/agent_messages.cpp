#include <loom/plugins/agent_messages.hpp>
#include <loom/plugins/detail/little_endian.hpp>

#include <cstring>

namespace loom::plugins {
namespace {

using detail::get_le;
using detail::put_le;

constexpr std::uint32_t info_magic = 0x49434d4c;    // "LMCI"
constexpr std::uint32_t public_magic = 0x44504d4c;  // "LMPD"
// connection info: magic, version, name length, name, address, checksum
constexpr std::size_t i_magic = 0, i_version = 4, i_name_len = 6, i_name = 8;
// public data
constexpr std::size_t p_magic = 0, p_version = 4, p_pad = 6, p_address = 8, p_length = 16, p_key = 24;
constexpr std::size_t public_size = p_key + remote_key_size + 4;

auto bytes_of(std::string& s) -> std::span<std::byte> { return std::as_writable_bytes(std::span(s.data(), s.size())); }

auto bad() -> std::unexpected<std::error_code> { return make_unexpected(errc::invalid_argument); }

void seal(std::string& s) {
    auto b = bytes_of(s);
    put_le<std::uint32_t>(b, b.size() - 4, fnv1a(b.first(b.size() - 4)));
}

auto intact(std::span<const std::byte> b) -> bool {
    return b.size() >= 4 && get_le<std::uint32_t>(b, b.size() - 4) == fnv1a(b.first(b.size() - 4));
}

}  // namespace

auto encode(const connection_info& info) -> result<std::string> {
    if (info.agent.size() > max_agent_name) return make_unexpected(errc::message_too_long);
    std::string s(i_name + info.agent.size() + handle_size + 4, '\0');
    auto b = bytes_of(s);
    put_le(b, i_magic, info_magic);
    put_le(b, i_version, agent_messages_version);
    put_le(b, i_name_len, static_cast<std::uint16_t>(info.agent.size()));
    std::memcpy(b.data() + i_name, info.agent.data(), info.agent.size());
    std::memcpy(b.data() + i_name + info.agent.size(), info.address.data(), handle_size);
    seal(s);
    return s;
}

auto decode_connection_info(std::span<const std::byte> b) -> result<connection_info> {
    if (b.size() < i_name + handle_size + 4 || get_le<std::uint32_t>(b, i_magic) != info_magic ||
        get_le<std::uint16_t>(b, i_version) != agent_messages_version)
        return bad();
    const std::size_t name_len = get_le<std::uint16_t>(b, i_name_len);
    if (b.size() != i_name + name_len + handle_size + 4 || !intact(b)) return bad();
    connection_info info;
    info.agent.assign(reinterpret_cast<const char*>(b.data() + i_name), name_len);
    std::memcpy(info.address.data(), b.data() + i_name + name_len, handle_size);
    return info;
}

auto encode(const public_data& data) -> std::string {
    std::string s(public_size, '\0');
    auto b = bytes_of(s);
    put_le(b, p_magic, public_magic);
    put_le(b, p_version, agent_messages_version);
    put_le(b, p_pad, std::uint16_t{0});
    put_le(b, p_address, data.address);
    put_le(b, p_length, data.length);
    std::memcpy(b.data() + p_key, data.key.data(), remote_key_size);
    seal(s);
    return s;
}

auto decode_public_data(std::span<const std::byte> b) -> result<public_data> {
    if (b.size() != public_size || get_le<std::uint32_t>(b, p_magic) != public_magic ||
        get_le<std::uint16_t>(b, p_version) != agent_messages_version || get_le<std::uint16_t>(b, p_pad) != 0 ||
        !intact(b))
        return bad();
    public_data d;
    d.address = get_le<std::uint64_t>(b, p_address);
    d.length = get_le<std::uint64_t>(b, p_length);
    if (d.length == 0 || d.address + d.length < d.address) return bad();
    std::memcpy(d.key.data(), b.data() + p_key, remote_key_size);
    if (!decode_remote_key(d.key)) return bad();
    return d;
}

auto encode_notification(std::string_view agent, std::string_view message, std::string& out) -> void_result {
    if (agent.size() > max_agent_name) return make_unexpected(errc::message_too_long);
    out.resize(2 + agent.size() + message.size());
    auto b = bytes_of(out);
    put_le(b, 0, static_cast<std::uint16_t>(agent.size()));
    std::memcpy(b.data() + 2, agent.data(), agent.size());
    if (!message.empty()) std::memcpy(b.data() + 2 + agent.size(), message.data(), message.size());
    return {};
}

auto encode_notification(std::string_view agent, std::string_view message) -> result<std::string> {
    std::string s;
    if (auto r = encode_notification(agent, message, s); !r) return std::unexpected(r.error());
    return s;
}

auto decode_notification(std::span<const std::byte> payload) -> result<notification> {
    if (payload.size() < 2) return bad();
    const std::size_t name_len = get_le<std::uint16_t>(payload, 0);
    if (payload.size() < 2 + name_len) return bad();
    notification n;
    n.agent.assign(reinterpret_cast<const char*>(payload.data() + 2), name_len);
    n.message.assign(reinterpret_cast<const char*>(payload.data() + 2 + name_len), payload.size() - 2 - name_len);
    return n;
}

}  // namespace loom::plugins
