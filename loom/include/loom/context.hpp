// loom/context.hpp — operation contexts and strong scalar types.
#pragma once

#include <loom/flags.hpp>

#include <rdma/fabric.h>

#include <compare>
#include <concepts>
#include <cstdint>
#include <type_traits>

namespace loom {

/// A value of type T that does not mix with other strong values of the same T.
template <class Tag, class T>
class strong_value {
public:
    /// The wrapped type.
    using value_type = T;
    constexpr strong_value() noexcept = default;
    /// Wraps `v`.
    constexpr explicit strong_value(T v) noexcept : v_(v) {}
    /// The wrapped value.
    [[nodiscard]] constexpr auto get() const noexcept -> T { return v_; }
    /// Ordered as the wrapped values.
    friend constexpr auto operator<=>(strong_value, strong_value) noexcept = default;

private:
    T v_{};
};

/// A peer's handle in an address vector (fi_addr_t).
using fabric_addr = strong_value<struct fabric_addr_tag, ::fi_addr_t>;
/// A remote virtual address or offset for RMA.
using rma_addr = strong_value<struct rma_addr_tag, std::uint64_t>;
/// A remote protection key.
using mr_key = strong_value<struct mr_key_tag, std::uint64_t>;

/// A destination that address_vector::insert, insert_raw or receive_context_address returned:
/// never FI_ADDR_UNSPEC or FI_ADDR_NOTAVAIL, so an endpoint's sends to it skip the destination
/// check that a plain fabric_addr gets (connectionless providers index their peer tables with
/// it). Only an address vector makes one; it is a fabric_addr wherever one is expected. Like any
/// fi_addr_t it goes stale when the vector removes it or closes.
class peer_addr : public fabric_addr {
public:
    peer_addr() = delete;

private:
    constexpr explicit peer_addr(::fi_addr_t v) noexcept : fabric_addr(v) {}
    friend class address_vector;
};

/// Reserved fabric_addr values.
namespace fabric_addrs {
/// No particular peer: a connected destination, or a receive from anyone.
inline constexpr fabric_addr unspecified{FI_ADDR_UNSPEC};
/// No handle: what a batch insertion reports for an address the provider refused.
inline constexpr fabric_addr not_available{FI_ADDR_NOTAVAIL};
}  // namespace fabric_addrs

/// What operations accept as a destination: a peer_addr, or any fabric_addr.
template <class D>
concept destination = std::same_as<D, fabric_addr> || std::same_as<D, peer_addr>;

namespace detail {
/// True when a destination names a peer without a look at the endpoint: always for a peer_addr
/// (an address vector made it); for a plain fabric_addr when it is not fabric_addrs::unspecified
/// (which only a connected endpoint accepts: the full checks decide).
[[nodiscard]] constexpr auto names_a_peer(fabric_addr a) noexcept -> bool { return a != fabric_addrs::unspecified; }
[[nodiscard]] constexpr auto names_a_peer(peer_addr) noexcept -> bool { return true; }
}  // namespace detail

/// Per-operation state handed to the provider. The native fi_context2 comes first, so the
/// pointer the provider stores (and returns in completions) is the request_context itself.
/// Derive from it to attach application state; it is never allocated by loom.
struct request_context {
    ::fi_context2 native{};    ///< what the provider stores; first, so its address is the request_context's
    void* user_data{nullptr};  ///< free for the application

    /// The pointer to hand to libfabric as the operation's context.
    [[nodiscard]] auto native_context() noexcept -> void* { return &native; }
    /// The request_context whose native_context() is `p` (a completion's op_context).
    [[nodiscard]] static auto from_native(void* p) noexcept -> request_context* {
        return static_cast<request_context*>(p);
    }
};
static_assert(std::is_standard_layout_v<request_context>);

/// A borrowed pointer to operation context storage (nullptr: no context).
/// Built implicitly from a request_context* (or any pointer convertible to T*).
template <class T>
class context_ptr {
public:
    constexpr context_ptr() noexcept = default;
    /// No context.
    constexpr context_ptr(std::nullptr_t) noexcept {}
    /// Borrows `p`.
    template <class U>
        requires std::is_convertible_v<U*, T*>
    constexpr context_ptr(U* p) noexcept : p_(p) {}  // NOLINT(google-explicit-constructor)
    /// The borrowed pointer; null for no context.
    [[nodiscard]] constexpr auto get() const noexcept -> T* { return p_; }
    /// True when a context is set.
    constexpr explicit operator bool() const noexcept { return p_ != nullptr; }

private:
    T* p_{nullptr};
};

/// How message/RMA helpers treat the endpoint's default operation flags.
enum class operation_defaults {
    replace,               ///< use exactly the flags passed
    inherit,               ///< extend the endpoint's creation defaults for this direction
    inherit_without_more,  ///< inherit, then drop the FI_MORE batching hint
};

/// The flags an operation is submitted with: `requested`, plus the endpoint's `defaults` for
/// that direction when D inherits them.
template <operation_defaults D>
[[nodiscard]] constexpr auto effective_flags(op_flag requested, op_flag defaults) noexcept -> op_flag {
    if constexpr (D == operation_defaults::replace)
        return requested;
    else if constexpr (D == operation_defaults::inherit)
        return requested | defaults;
    else
        return (requested | defaults).without(op_flag::more);
}

}  // namespace loom
