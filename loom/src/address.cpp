#include "loom/address.hpp"

#include <arpa/inet.h>
#include <endian.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>

namespace loom {
namespace {

// Our declaration of the kernel's struct sockaddr_ib (rdma/ib.h), 48 bytes.
struct native_sockaddr_ib {
    std::uint16_t family;
    std::uint16_t pkey;      // big endian
    std::uint32_t flowinfo;  // big endian
    std::uint8_t gid[16];
    std::uint64_t sid;       // big endian
    std::uint64_t sid_mask;  // big endian
    std::uint64_t scope_id;  // host order
};
static_assert(sizeof(native_sockaddr_ib) == native_sockaddr_ib_size);

template <class T>
auto read_struct(std::span<const std::byte> bytes) -> T {
    T v{};
    std::memcpy(&v, bytes.data(), sizeof(T));
    return v;
}

auto decode_inet(std::span<const std::byte> bytes, bool allow_v4, bool allow_v6) -> result<address> {
    if (bytes.size() < sizeof(::sa_family_t)) return make_unexpected(errc::invalid_argument);
    ::sa_family_t family{};
    std::memcpy(&family, bytes.data(), sizeof(family));
    if (family == AF_INET && allow_v4) {
        if (bytes.size() < sizeof(::sockaddr_in)) return make_unexpected(errc::invalid_argument);
        return address{ipv4_address{read_struct<::sockaddr_in>(bytes)}};
    }
    if (family == AF_INET6 && allow_v6) {
        if (bytes.size() < sizeof(::sockaddr_in6)) return make_unexpected(errc::invalid_argument);
        return address{ipv6_address{read_struct<::sockaddr_in6>(bytes)}};
    }
    return make_unexpected(errc::invalid_argument);
}

auto decode_ib(std::span<const std::byte> bytes) -> result<address> {
    if (bytes.size() < sizeof(native_sockaddr_ib)) return make_unexpected(errc::invalid_argument);
    const auto n = read_struct<native_sockaddr_ib>(bytes);
    if (n.family != address_family_ib) return make_unexpected(errc::invalid_argument);
    ib_socket_address a;
    std::copy_n(n.gid, 16, a.gid.begin());
    a.pkey = be16toh(n.pkey);
    a.flow_info = be32toh(n.flowinfo);
    a.service_id = be64toh(n.sid);
    a.service_id_mask = be64toh(n.sid_mask);
    a.scope_id = n.scope_id;
    return address{a};
}

}  // namespace

ipv4_address::ipv4_address() noexcept : sa_{} { sa_.sin_family = AF_INET; }
ipv6_address::ipv6_address() noexcept : sa_{} { sa_.sin6_family = AF_INET6; }

auto ipv4_address::parse(const std::string& host, std::uint16_t port) -> result<ipv4_address> {
    ipv4_address a;
    if (host.find('\0') != std::string::npos) return make_unexpected(errc::invalid_argument);
    if (::inet_pton(AF_INET, host.c_str(), &a.sa_.sin_addr) != 1) return make_unexpected(errc::invalid_argument);
    a.sa_.sin_port = htons(port);
    return a;
}
auto ipv6_address::parse(const std::string& host, std::uint16_t port) -> result<ipv6_address> {
    ipv6_address a;
    if (host.find('\0') != std::string::npos) return make_unexpected(errc::invalid_argument);
    if (::inet_pton(AF_INET6, host.c_str(), &a.sa_.sin6_addr) != 1) return make_unexpected(errc::invalid_argument);
    a.sa_.sin6_port = htons(port);
    return a;
}
auto ipv4_address::port() const noexcept -> std::uint16_t { return ntohs(sa_.sin_port); }
auto ipv6_address::port() const noexcept -> std::uint16_t { return ntohs(sa_.sin6_port); }

auto ipv4_address::to_string() const -> std::string {
    char buf[INET_ADDRSTRLEN]{};
    ::inet_ntop(AF_INET, &sa_.sin_addr, buf, sizeof buf);
    std::string out(buf);
    out.append(":").append(std::to_string(port()));
    return out;
}
auto ipv6_address::to_string() const -> std::string {
    char buf[INET6_ADDRSTRLEN]{};
    ::inet_ntop(AF_INET6, &sa_.sin6_addr, buf, sizeof buf);
    // Appended piecewise: GCC 12 at -O3 warns falsely (-Wrestrict) on "[" + std::string(...).
    std::string out;
    out.reserve(sizeof buf + 8);
    out.append("[").append(buf).append("]:").append(std::to_string(port()));
    return out;
}
auto operator==(const ipv4_address& a, const ipv4_address& b) noexcept -> bool {
    return a.sa_.sin_port == b.sa_.sin_port && a.sa_.sin_addr.s_addr == b.sa_.sin_addr.s_addr;
}
auto operator==(const ipv6_address& a, const ipv6_address& b) noexcept -> bool {
    return a.sa_.sin6_port == b.sa_.sin6_port && a.sa_.sin6_scope_id == b.sa_.sin6_scope_id &&
           a.sa_.sin6_flowinfo == b.sa_.sin6_flowinfo &&
           std::memcmp(&a.sa_.sin6_addr, &b.sa_.sin6_addr, sizeof(in6_addr)) == 0;
}

auto ib_socket_address::to_string() const -> std::string {
    char buf[INET6_ADDRSTRLEN]{};
    ::inet_ntop(AF_INET6, gid.data(), buf, sizeof buf);
    char tail[64];
    std::snprintf(tail, sizeof tail, " pkey=0x%04x sid=0x%llx", pkey, static_cast<unsigned long long>(service_id));
    std::string out("ib[");
    out.append(buf).append("]").append(tail);
    return out;
}

auto ib_address::to_string() const -> std::string {
    char buf[INET6_ADDRSTRLEN]{};
    ::inet_ntop(AF_INET6, gid_.data(), buf, sizeof buf);
    char tail[48];
    std::snprintf(tail, sizeof tail, " qpn=0x%06x lid=0x%04x", qpn_, lid_);
    std::string out("ib[");
    out.append(buf).append("]").append(tail);
    return out;
}

auto opaque_address::to_string() const -> std::string {
    if (format_ == address_format::str) {
        const auto* p = reinterpret_cast<const char*>(bytes_.data());
        return std::string(p, strnlen(p, bytes_.size()));
    }
    std::string out = loom::to_string(format_) + ":";
    char hex[3];
    for (auto b : bytes_) {
        std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned>(b));
        out += hex;
    }
    return out;
}

auto address_from_raw(address_format format, std::span<const std::byte> bytes) -> result<address> {
    if (auto ok = validate(format); !ok) return std::unexpected(ok.error());
    switch (format) {
        case address_format::unspecified: return make_unexpected(errc::invalid_argument);
        case address_format::sockaddr: {
            if (bytes.size() >= sizeof(::sa_family_t)) {
                ::sa_family_t family{};
                std::memcpy(&family, bytes.data(), sizeof family);
                if (family == address_family_ib) return decode_ib(bytes);
            }
            return decode_inet(bytes, true, true);
        }
        case address_format::sockaddr_ip: return decode_inet(bytes, true, true);
        case address_format::sockaddr_in: return decode_inet(bytes, true, false);
        case address_format::sockaddr_in6: return decode_inet(bytes, false, true);
        case address_format::sockaddr_ib: return decode_ib(bytes);
        case address_format::str: {
            // A string address must be non-empty and carry its terminating null.
            if (bytes.empty() || std::find(bytes.begin(), bytes.end(), std::byte{0}) == bytes.end() ||
                bytes.front() == std::byte{0})
                return make_unexpected(errc::invalid_argument);
            const auto end = std::find(bytes.begin(), bytes.end(), std::byte{0});
            return address{opaque_address{format, {bytes.begin(), end + 1}}};
        }
        default:
            if (bytes.empty()) return make_unexpected(errc::invalid_argument);
            return address{opaque_address{format, bytes}};
    }
}

auto native_format(const address& a) noexcept -> address_format {
    struct visitor {
        auto operator()(const ipv4_address&) const noexcept { return address_format::sockaddr_in; }
        auto operator()(const ipv6_address&) const noexcept { return address_format::sockaddr_in6; }
        auto operator()(const ib_socket_address&) const noexcept { return address_format::sockaddr_ib; }
        auto operator()(const opaque_address& o) const noexcept { return o.format(); }
    };
    return std::visit(visitor{}, a);
}

auto detail::encode_socket_address(const address& a, std::span<std::byte, max_socket_address> out) noexcept
    -> std::size_t {
    const auto write = [&](const auto& native) {
        static_assert(sizeof(native) <= max_socket_address);
        std::memcpy(out.data(), &native, sizeof(native));
        return sizeof(native);
    };
    struct visitor {
        decltype(write)& put;
        auto operator()(const ipv4_address& v) const -> std::size_t { return put(v.native()); }
        auto operator()(const ipv6_address& v) const -> std::size_t { return put(v.native()); }
        auto operator()(const ib_socket_address& v) const -> std::size_t {
            native_sockaddr_ib n{};
            n.family = address_family_ib;
            n.pkey = htobe16(v.pkey);
            n.flowinfo = htobe32(v.flow_info);
            std::copy(v.gid.begin(), v.gid.end(), n.gid);
            n.sid = htobe64(v.service_id);
            n.sid_mask = htobe64(v.service_id_mask);
            n.scope_id = v.scope_id;
            return put(n);
        }
        auto operator()(const opaque_address&) const -> std::size_t { return 0; }
    };
    return std::visit(visitor{write}, a);
}

auto to_raw(const address& a) -> std::vector<std::byte> {
    std::array<std::byte, detail::max_socket_address> scratch{};
    const auto bytes = detail::native_bytes(a, scratch);
    return {bytes.begin(), bytes.end()};
}

auto to_string(const address& a) -> std::string {
    return std::visit([](const auto& v) { return v.to_string(); }, a);
}

}  // namespace loom
