// loom/msg.hpp — message descriptions with explicit flags (fi_sendmsg / fi_tsendmsg families).
#pragma once

#include <loom/context.hpp>
#include <loom/detail/inline_vector.hpp>
#include <loom/endpoint.hpp>

#include <sys/uio.h>

/// Messages described in full, with explicit per-operation flags (fi_sendmsg, fi_tsendmsg, ...).
namespace loom::msg {

/// iovec entries: up to 16 inline, more on the heap.
using iov_array = detail::inline_vector<::iovec, 16>;
/// Registration descriptors, one per iovec entry (or none): up to 16 inline.
using desc_array = detail::inline_vector<void*, 16>;

/// A send described in full (fi_msg), for sendmsg.
template <class Ctx = void*>
struct send_message {
    iov_array iov{};                              ///< the data, gathered
    desc_array desc{};                            ///< their descriptors
    fabric_addr addr{fabric_addrs::unspecified};  ///< destination; unspecified on a connected endpoint
    Ctx context{};                                ///< the operation's context
    std::uint64_t data{0};                        ///< remote CQ data, sent with op_flag::remote_cq_data
};

/// A receive described in full (fi_msg), for recvmsg.
template <class Ctx = void*>
struct receive_message {
    iov_array iov{};                              ///< where the data goes, scattered
    desc_array desc{};                            ///< their descriptors
    fabric_addr addr{fabric_addrs::unspecified};  ///< accepted source; unspecified: anyone
    Ctx context{};                                ///< the operation's context
};

/// A tagged send described in full (fi_msg_tagged), for tagged_sendmsg.
template <class Ctx = void*>
struct tagged_send_message {
    iov_array iov{};                              ///< the data, gathered
    desc_array desc{};                            ///< their descriptors
    fabric_addr addr{fabric_addrs::unspecified};  ///< destination; unspecified on a connected endpoint
    std::uint64_t tag{0};                         ///< the message's tag
    Ctx context{};                                ///< the operation's context
    std::uint64_t data{0};                        ///< remote CQ data, sent with op_flag::remote_cq_data
};

/// A tagged receive described in full (fi_msg_tagged), for tagged_recvmsg.
template <class Ctx = void*>
struct tagged_receive_message {
    iov_array iov{};                              ///< where the data goes, scattered
    desc_array desc{};                            ///< their descriptors
    fabric_addr addr{fabric_addrs::unspecified};  ///< accepted source; unspecified: anyone
    std::uint64_t tag{0};                         ///< the tag to match
    std::uint64_t ignore{0};                      ///< tag bits that need not match
    Ctx context{};                                ///< the operation's context
};

namespace detail {
template <class Ctx>
auto to_void(Ctx c) noexcept -> void* {
    if constexpr (std::is_pointer_v<Ctx>)
        return const_cast<void*>(static_cast<const void*>(c));
    else
        return reinterpret_cast<void*>(c);
}
inline auto desc_ptr(const desc_array& d) noexcept -> void** {
    return d.empty() ? nullptr : const_cast<void**>(d.data());
}
}  // namespace detail

/// fi_sendmsg. `flags` replace the endpoint's transmit defaults unless D inherits them.
template <operation_defaults D = operation_defaults::replace, class Ctx>
auto sendmsg(endpoint& ep, const send_message<Ctx>& m, op_flag flags = {}) noexcept -> void_result {
    void* ctx = detail::to_void(m.context);
    if (const int e = ep.check_tx_iov(capability::msg, m.iov, m.desc, m.addr, ctx)) return endpoint::fail(e);
    const ::fi_msg native{m.iov.data(), detail::desc_ptr(m.desc), m.iov.size(), m.addr.get(), ctx, m.data};
    return check_native(::fi_sendmsg(ep.native(), &native, effective_flags<D>(flags, ep.tx_op_flags()).get()));
}

/// fi_recvmsg (op_flag::multi_recv posts a multi-receive buffer) on an endpoint or a shared
/// receive context. `flags` replace the target's receive defaults unless D inherits them.
template <operation_defaults D = operation_defaults::replace, receive_target T, class Ctx>
auto recvmsg(T& target, const receive_message<Ctx>& m, op_flag flags = {}) noexcept -> void_result {
    void* ctx = detail::to_void(m.context);
    if (const int e = target.check_rx_iov(capability::msg, m.iov, m.desc, m.addr, ctx)) [[unlikely]]
        return loom::detail::fail_code(e);
    const ::fi_msg native{m.iov.data(), detail::desc_ptr(m.desc), m.iov.size(), m.addr.get(), ctx, 0};
    return check_native(::fi_recvmsg(target.native(), &native, effective_flags<D>(flags, target.rx_op_flags()).get()));
}

/// fi_tsendmsg. `flags` replace the endpoint's transmit defaults unless D inherits them.
template <operation_defaults D = operation_defaults::replace, class Ctx>
auto tagged_sendmsg(endpoint& ep, const tagged_send_message<Ctx>& m, op_flag flags = {}) noexcept -> void_result {
    void* ctx = detail::to_void(m.context);
    if (const int e = ep.check_tx_iov(capability::tagged, m.iov, m.desc, m.addr, ctx)) return endpoint::fail(e);
    const ::fi_msg_tagged native{m.iov.data(), detail::desc_ptr(m.desc), m.iov.size(), m.addr.get(), m.tag, 0, ctx,
                                 m.data};
    return check_native(::fi_tsendmsg(ep.native(), &native, effective_flags<D>(flags, ep.tx_op_flags()).get()));
}

/// fi_trecvmsg on an endpoint or a shared receive context.
template <operation_defaults D = operation_defaults::replace, receive_target T, class Ctx>
auto tagged_recvmsg(T& target, const tagged_receive_message<Ctx>& m, op_flag flags = {}) noexcept -> void_result {
    void* ctx = detail::to_void(m.context);
    if (const int e = target.check_rx_iov(capability::tagged, m.iov, m.desc, m.addr, ctx)) [[unlikely]]
        return loom::detail::fail_code(e);
    const ::fi_msg_tagged native{
        m.iov.data(), detail::desc_ptr(m.desc), m.iov.size(), m.addr.get(), m.tag, m.ignore, ctx, 0};
    return check_native(::fi_trecvmsg(target.native(), &native, effective_flags<D>(flags, target.rx_op_flags()).get()));
}

}  // namespace loom::msg
