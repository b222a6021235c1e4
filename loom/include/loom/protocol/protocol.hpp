// loom/protocol/protocol.hpp — what a protocol type offers, stated as concepts, and the
// generic calls that use any protocol through them.
#pragma once

#include <loom/context.hpp>
#include <loom/error.hpp>
#include <loom/provider_traits.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

namespace loom {

// The concepts take the protocol type with or without reference and const (a generic function
// may name decltype(proto) of an `auto&` parameter).

/// Untagged send and receive of byte spans, each returning void_result.
template <class P>
concept basic_protocol = requires(std::remove_cvref_t<P>& p, std::span<const std::byte> out, std::span<std::byte> in) {
    { p.send(out) } -> std::same_as<void_result>;
    { p.recv(in) } -> std::same_as<void_result>;
};

/// Adds tagged send and receive (tag, and ignore bits for receives).
template <class P>
concept tagged_protocol = basic_protocol<P> && requires(std::remove_cvref_t<P>& p, std::span<const std::byte> out,
                                                        std::span<std::byte> in, std::uint64_t tag) {
    { p.tagged_send(out, tag) } -> std::same_as<void_result>;
    { p.tagged_recv(in, tag, tag) } -> std::same_as<void_result>;
};

/// Adds RMA read and write of a remote address and key.
template <class P>
concept rma_protocol = basic_protocol<P> && requires(std::remove_cvref_t<P>& p, std::span<const std::byte> out,
                                                     std::span<std::byte> in, rma_addr addr, mr_key key) {
    { p.read(in, addr, key) } -> std::same_as<void_result>;
    { p.write(out, addr, key) } -> std::same_as<void_result>;
};

/// Adds inject (a send whose buffer is free on return and that reports no completion).
template <class P>
concept inject_capable = basic_protocol<P> && requires(std::remove_cvref_t<P>& p, std::span<const std::byte> out) {
    { p.inject(out) } -> std::same_as<void_result>;
};

namespace detail {
template <bool>
struct constant_bool {};
template <class P>
struct protocol_provider {
    using type = provider::generic_tag;
};
template <class P>
    requires requires { typename P::provider_type; }
struct protocol_provider<P> {
    using type = typename P::provider_type;
};
}  // namespace detail

/// Declares supports_rma, supports_tagged, supports_atomic and supports_inject as constant
/// booleans: what the protocol promises, usable in `if constexpr`.
template <class P>
concept has_static_capabilities = requires {
    typename detail::constant_bool<std::remove_cvref_t<P>::supports_rma>;
    typename detail::constant_bool<std::remove_cvref_t<P>::supports_tagged>;
    typename detail::constant_bool<std::remove_cvref_t<P>::supports_atomic>;
    typename detail::constant_bool<std::remove_cvref_t<P>::supports_inject>;
};

/// Names the provider it is written for (provider_type, a provider tag).
template <class P>
concept provider_aware_protocol = requires { typename std::remove_cvref_t<P>::provider_type; } &&
                                  provider_tag<typename std::remove_cvref_t<P>::provider_type>;

/// What a protocol offers, decided at compile time: a family is static when the protocol has
/// its operations and, where it declares static capabilities, declares that family supported.
template <class P>
struct protocol_capabilities {
private:
    using type = std::remove_cvref_t<P>;

public:
    /// True when the protocol has tagged operations (and does not declare them unsupported).
    static constexpr bool static_tagged = [] {
        if constexpr (has_static_capabilities<type>)
            return tagged_protocol<type> && type::supports_tagged;
        else
            return tagged_protocol<type>;
    }();
    /// True when the protocol has RMA reads and writes (and does not declare them unsupported).
    static constexpr bool static_rma = [] {
        if constexpr (has_static_capabilities<type>)
            return rma_protocol<type> && type::supports_rma;
        else
            return rma_protocol<type>;
    }();
    /// True when the protocol has inject (and does not declare it unsupported).
    static constexpr bool static_inject = [] {
        if constexpr (has_static_capabilities<type>)
            return inject_capable<type> && type::supports_inject;
        else
            return inject_capable<type>;
    }();
    /// Atomics have no generic call here; only a declaration says so.
    static constexpr bool static_atomic = [] {
        if constexpr (has_static_capabilities<type>)
            return type::supports_atomic;
        else
            return false;
    }();
    /// The protocol's provider tag; provider::generic_tag when it names none.
    using provider_type = typename detail::protocol_provider<type>::type;
};

/// Calls through any protocol: the same code for every protocol type that meets the concept.
namespace protocol {

/// p.send(data).
template <basic_protocol P>
auto send(P& p, std::span<const std::byte> data) -> void_result {
    return p.send(data);
}
/// p.send(data, ctx), where the protocol takes a context.
template <basic_protocol P>
auto send(P& p, std::span<const std::byte> data, context_ptr<void> ctx) -> void_result
    requires requires { p.send(data, ctx); }
{
    return p.send(data, ctx);
}
/// p.recv(buffer).
template <basic_protocol P>
auto recv(P& p, std::span<std::byte> buffer) -> void_result {
    return p.recv(buffer);
}
/// p.recv(buffer, ctx), where the protocol takes a context.
template <basic_protocol P>
auto recv(P& p, std::span<std::byte> buffer, context_ptr<void> ctx) -> void_result
    requires requires { p.recv(buffer, ctx); }
{
    return p.recv(buffer, ctx);
}
/// p.tagged_send(data, tag).
template <tagged_protocol P>
auto tagged_send(P& p, std::span<const std::byte> data, std::uint64_t tag) -> void_result {
    return p.tagged_send(data, tag);
}
/// p.tagged_recv(buffer, tag, ignore).
template <tagged_protocol P>
auto tagged_recv(P& p, std::span<std::byte> buffer, std::uint64_t tag, std::uint64_t ignore = 0) -> void_result {
    return p.tagged_recv(buffer, tag, ignore);
}
/// p.read(local, remote, key): reads remote memory into `local`.
template <rma_protocol P>
auto read(P& p, std::span<std::byte> local, rma_addr remote, mr_key key) -> void_result {
    return p.read(local, remote, key);
}
/// p.write(local, remote, key): writes `local` to remote memory.
template <rma_protocol P>
auto write(P& p, std::span<const std::byte> local, rma_addr remote, mr_key key) -> void_result {
    return p.write(local, remote, key);
}
/// p.inject(data): a send without a completion.
template <inject_capable P>
auto inject(P& p, std::span<const std::byte> data) -> void_result {
    return p.inject(data);
}

}  // namespace protocol
}  // namespace loom
