// loom/address.hpp — typed native addresses (sockaddr_in/in6/ib, provider formats).
#pragma once

#include <loom/error.hpp>
#include <loom/flags.hpp>

#include <netinet/in.h>

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

namespace loom {

/// An IPv4 socket address (FI_SOCKADDR_IN).
class ipv4_address {
public:
    ipv4_address() noexcept;
    /// Wraps a native sockaddr_in as it is.
    explicit ipv4_address(const ::sockaddr_in& native) noexcept : sa_(native) {}
    /// Dotted quad + port in host order; invalid_argument when the text is no IPv4 address.
    [[nodiscard]] static auto parse(const std::string& host, std::uint16_t port) -> result<ipv4_address>;
    /// The native sockaddr_in (port and address in network order).
    [[nodiscard]] auto native() const noexcept -> const ::sockaddr_in& { return sa_; }
    /// The port in host order.
    [[nodiscard]] auto port() const noexcept -> std::uint16_t;
    [[nodiscard]] auto to_string() const -> std::string;  ///< "a.b.c.d:port"
    /// Same address and port.
    friend auto operator==(const ipv4_address& a, const ipv4_address& b) noexcept -> bool;

private:
    ::sockaddr_in sa_;
};

/// An IPv6 socket address (FI_SOCKADDR_IN6).
class ipv6_address {
public:
    ipv6_address() noexcept;
    /// Wraps a native sockaddr_in6 as it is.
    explicit ipv6_address(const ::sockaddr_in6& native) noexcept : sa_(native) {}
    /// Text form of an IPv6 address + port in host order; invalid_argument when the text is no IPv6 address.
    [[nodiscard]] static auto parse(const std::string& host, std::uint16_t port) -> result<ipv6_address>;
    /// The native sockaddr_in6 (port and address in network order).
    [[nodiscard]] auto native() const noexcept -> const ::sockaddr_in6& { return sa_; }
    /// The port in host order.
    [[nodiscard]] auto port() const noexcept -> std::uint16_t;
    /// The interface index of a link-local address (0: none).
    [[nodiscard]] auto scope_id() const noexcept -> std::uint32_t { return sa_.sin6_scope_id; }
    [[nodiscard]] auto to_string() const -> std::string;  ///< "[addr]:port"
    /// Same address, port, scope and flow label.
    friend auto operator==(const ipv6_address& a, const ipv6_address& b) noexcept -> bool;

private:
    ::sockaddr_in6 sa_;
};

/// An InfiniBand socket address (FI_SOCKADDR_IB, struct sockaddr_ib). Scalars are in host
/// order; the GID bytes are in network order, as on the wire.
struct ib_socket_address {
    std::array<std::uint8_t, 16> gid{};  ///< GID (network order)
    std::uint16_t pkey{};                ///< partition key
    std::uint32_t flow_info{};           ///< flow label
    std::uint64_t service_id{};          ///< service ID the peer listens on
    std::uint64_t service_id_mask{};     ///< mask applied to service_id
    std::uint64_t scope_id{};            ///< scope ID (interface index)
    /// Field-wise equality.
    friend auto operator==(const ib_socket_address&, const ib_socket_address&) noexcept -> bool = default;
    /// "ib[gid] pkey=0x... sid=0x...".
    [[nodiscard]] auto to_string() const -> std::string;
};
/// Size of the native struct sockaddr_ib.
inline constexpr std::size_t native_sockaddr_ib_size = 48;
/// AF_IB from the kernel's socket families.
inline constexpr int address_family_ib = 27;

/// A provider-specific representation (FI_ADDR_STR, EFA, CXI, PSM3, ...), kept byte-exact,
/// including a string address's terminating null byte.
class opaque_address {
public:
    opaque_address() = default;
    /// Copies `bytes`, which are in format `fmt`.
    opaque_address(address_format fmt, std::span<const std::byte> bytes)
        : format_(fmt), bytes_(bytes.begin(), bytes.end()) {}
    /// The format the bytes are in.
    [[nodiscard]] auto format() const noexcept -> address_format { return format_; }
    /// The native bytes, as the provider writes them.
    [[nodiscard]] auto bytes() const noexcept -> std::span<const std::byte> { return bytes_; }
    /// A string address as its text; any other format as "<format>:<hex bytes>".
    [[nodiscard]] auto to_string() const -> std::string;
    /// Same format and bytes.
    friend auto operator==(const opaque_address&, const opaque_address&) -> bool = default;

private:
    address_format format_{address_format::unspecified};
    std::vector<std::byte> bytes_;
};

/// Any native endpoint address. Exhaustive visitors handle every alternative.
using address = std::variant<ipv4_address, ipv6_address, ib_socket_address, opaque_address>;

/// The active alternative's C++ object (an ipv4_address, ..., an opaque_address), for code that
/// dispatches on the object itself. Not the native representation: use to_raw(), or
/// opaque_address::bytes() for a provider format.
[[nodiscard]] inline auto get_address_data(const address& a) noexcept -> const void* {
    switch (a.index()) {  // not std::visit: it may throw, and this never does
        case 0: return std::get_if<0>(&a);
        case 1: return std::get_if<1>(&a);
        case 2: return std::get_if<2>(&a);
        case 3: return std::get_if<3>(&a);
        default: return nullptr;  // valueless
    }
}
static_assert(std::variant_size_v<address> == 4, "get_address_data handles every alternative");

/// An InfiniBand endpoint identifier: GID (network byte order), queue pair number, LID. An
/// identifier, not a socket address: it is no alternative of loom::address, so it cannot be
/// connected to or inserted into an address vector (use ib_socket_address for FI_SOCKADDR_IB).
class ib_address {
public:
    /// Bytes in a GID.
    static constexpr std::size_t gid_size = 16;
    constexpr ib_address() noexcept = default;
    /// From a GID in network order, a queue pair number and a LID.
    constexpr explicit ib_address(std::span<const std::uint8_t, gid_size> gid, std::uint32_t qpn = 0,
                                  std::uint16_t lid = 0) noexcept
        : qpn_(qpn), lid_(lid) {
        for (std::size_t i = 0; i < gid_size; ++i) gid_[i] = gid[i];
    }
    /// The GID, in network order.
    [[nodiscard]] constexpr auto gid() const noexcept -> std::span<const std::uint8_t, gid_size> { return gid_; }
    /// The queue pair number.
    [[nodiscard]] constexpr auto qpn() const noexcept -> std::uint32_t { return qpn_; }
    /// The local identifier.
    [[nodiscard]] constexpr auto lid() const noexcept -> std::uint16_t { return lid_; }
    /// "ib[fe80::1] qpn=0x000123 lid=0x0007" (the GID as an IPv6 address).
    [[nodiscard]] auto to_string() const -> std::string;
    /// Ordered by GID, then QPN, then LID.
    friend constexpr auto operator<=>(const ib_address&, const ib_address&) noexcept = default;

private:
    std::array<std::uint8_t, gid_size> gid_{};
    std::uint32_t qpn_{};
    std::uint16_t lid_{};
};

/// Decodes native address bytes of a given format. Malformed input (wrong length, wrong
/// family, an unterminated string address, an unspecified format) -> invalid_argument.
[[nodiscard]] auto address_from_raw(address_format format, std::span<const std::byte> bytes) -> result<address>;

/// The native format an address encodes to.
[[nodiscard]] auto native_format(const address& a) noexcept -> address_format;

/// Encodes an address into its native bytes (the inverse of address_from_raw).
[[nodiscard]] auto to_raw(const address& a) -> std::vector<std::byte>;

namespace detail {
/// Room for the native socket addresses (sockaddr_in, sockaddr_in6, sockaddr_ib).
inline constexpr std::size_t max_socket_address = 64;
/// Writes a socket address's native bytes into `out` without allocating and returns their
/// length; 0 for an opaque address (its bytes() are already native).
[[nodiscard]] auto encode_socket_address(const address& a, std::span<std::byte, max_socket_address> out) noexcept
    -> std::size_t;
/// The native bytes of `a` without allocating: an opaque address's own bytes, or a socket
/// address encoded into `scratch` (which must outlive the result).
[[nodiscard]] inline auto native_bytes(const address& a, std::span<std::byte, max_socket_address> scratch) noexcept
    -> std::span<const std::byte> {
    if (const auto* opaque = std::get_if<opaque_address>(&a)) return opaque->bytes();
    return std::span<const std::byte>{scratch}.first(encode_socket_address(a, scratch));
}
}  // namespace detail

/// Human-readable form ("127.0.0.1:4242", "fi_shm://1234", ...).
[[nodiscard]] auto to_string(const address& a) -> std::string;

}  // namespace loom
