// loom/detail/async_submission.hpp — what an asynchronous front-end operation (a sender, an
// Asio operation) submits: one place for both front ends.
#pragma once

#include <loom/detail/hot.hpp>
#include <loom/endpoint.hpp>
#include <loom/msg.hpp>
#include <loom/rma.hpp>

#include <sys/uio.h>

#include <span>

namespace loom::detail {

/// Front-end operations ask for a completion of their own: the endpoint's defaults for the
/// direction, less the FI_MORE hint (nothing may follow to end the batch), plus FI_COMPLETION
/// (selective completion would otherwise drop it).
inline constexpr auto own_completion = operation_defaults::inherit_without_more;
/// When the endpoint's defaults carry no FI_MORE and its queue is not selective, the plain call
/// (fi_send, fi_trecv, ...) has exactly those semantics, without the message form's cost.
[[nodiscard]] constexpr auto plain_call_completes(op_flag defaults, bool selective) noexcept -> bool {
    return !selective && !defaults.any(op_flag::more);
}

/// One message operation: local buffers with a descriptor each (or none at all), the peer (the
/// source filter of a receive) and, for the tagged family, tag and ignore bits.
struct message_submission {
    std::span<const ::iovec> iov;
    std::span<void* const> desc;
    fabric_addr peer{fabric_addrs::unspecified};
    std::uint64_t tag{0};
    std::uint64_t ignore{0};
    bool tagged{false};
};

[[nodiscard]] inline auto submit_send(endpoint& ep, const message_submission& m, void* ctx) noexcept -> void_result {
    if (plain_call_completes(ep.tx_op_flags(), ep.transmit_completion_is_selective())) [[likely]] {
        if (m.iov.size() == 1) {
            const std::span<const std::byte> data{static_cast<const std::byte*>(m.iov[0].iov_base), m.iov[0].iov_len};
            void* const desc = m.desc.empty() ? nullptr : m.desc[0];
            return m.tagged ? ep.tagged_send(data, m.tag, m.peer, desc, ctx) : ep.send(data, m.peer, desc, ctx);
        }
        return m.tagged ? ep.tagged_sendv(m.iov, m.desc, m.tag, m.peer, ctx) : ep.sendv(m.iov, m.desc, m.peer, ctx);
    }
    const capability family = m.tagged ? capability::tagged : capability::msg;
    if (const int e = ep.check_tx_iov(family, m.iov, m.desc, m.peer, ctx)) return endpoint::fail(e);
    const auto flags = effective_flags<own_completion>(op_flag::completion, ep.tx_op_flags()).get();
    void** const desc = desc_or_null(m.desc);
    if (m.tagged) {
        const ::fi_msg_tagged native{m.iov.data(), desc, m.iov.size(), m.peer.get(), m.tag, 0, ctx, 0};
        return check_native(::fi_tsendmsg(ep.native(), &native, flags));
    }
    const ::fi_msg native{m.iov.data(), desc, m.iov.size(), m.peer.get(), ctx, 0};
    return check_native(::fi_sendmsg(ep.native(), &native, flags));
}

[[nodiscard]] inline auto submit_receive(endpoint& ep, const message_submission& m, void* ctx) noexcept -> void_result {
    if (plain_call_completes(ep.rx_op_flags(), ep.receive_completion_is_selective())) [[likely]] {
        if (m.iov.size() == 1) {
            const std::span<std::byte> data{static_cast<std::byte*>(m.iov[0].iov_base), m.iov[0].iov_len};
            void* const desc = m.desc.empty() ? nullptr : m.desc[0];
            return m.tagged ? ep.tagged_recv(data, m.tag, m.ignore, m.peer, desc, ctx)
                            : ep.recv(data, m.peer, desc, ctx);
        }
        return m.tagged ? ep.tagged_recvv(m.iov, m.desc, m.tag, m.ignore, m.peer, ctx)
                        : ep.recvv(m.iov, m.desc, m.peer, ctx);
    }
    const capability family = m.tagged ? capability::tagged : capability::msg;
    if (const int e = ep.check_rx_iov(family, m.iov, m.desc, m.peer, ctx)) return fail_code(e);
    const auto flags = effective_flags<own_completion>(op_flag::completion, ep.rx_op_flags()).get();
    void** const desc = desc_or_null(m.desc);
    if (m.tagged) {
        const ::fi_msg_tagged native{m.iov.data(), desc, m.iov.size(), m.peer.get(), m.tag, m.ignore, ctx, 0};
        return check_native(::fi_trecvmsg(ep.native(), &native, flags));
    }
    const ::fi_msg native{m.iov.data(), desc, m.iov.size(), m.peer.get(), ctx, 0};
    return check_native(::fi_recvmsg(ep.native(), &native, flags));
}

/// One buffer, as the senders submit it: the plain call straight away where it completes as a
/// front end needs (the common case), else the general form above.
[[nodiscard]] LOOM_SUBMIT_INLINE auto submit_send_one(endpoint& ep, std::span<const std::byte> data, void* desc,
                                                      fabric_addr peer, std::uint64_t tag, bool tagged,
                                                      void* ctx) noexcept -> void_result {
    if (plain_call_completes(ep.tx_op_flags(), ep.transmit_completion_is_selective())) [[likely]]
        return tagged ? ep.tagged_send(data, tag, peer, desc, ctx) : ep.send(data, peer, desc, ctx);
    const ::iovec iov{const_cast<std::byte*>(data.data()), data.size()};
    return submit_send(ep, {{&iov, 1}, {&desc, 1}, peer, tag, 0, tagged}, ctx);
}

[[nodiscard]] LOOM_SUBMIT_INLINE auto submit_receive_one(endpoint& ep, std::span<std::byte> data, void* desc,
                                                         fabric_addr source, std::uint64_t tag, std::uint64_t ignore,
                                                         bool tagged, void* ctx) noexcept -> void_result {
    if (plain_call_completes(ep.rx_op_flags(), ep.receive_completion_is_selective())) [[likely]]
        return tagged ? ep.tagged_recv(data, tag, ignore, source, desc, ctx) : ep.recv(data, source, desc, ctx);
    const ::iovec iov{data.data(), data.size()};
    return submit_receive(ep, {{&iov, 1}, {&desc, 1}, source, tag, ignore, tagged}, ctx);
}

/// A read or write between local buffers and one remote range of exactly their total length.
[[nodiscard]] inline auto submit_rma(endpoint& ep, bool is_read, std::span<const ::iovec> iov,
                                     std::span<void* const> desc, fabric_addr peer, const remote_memory& remote,
                                     void* ctx) noexcept -> void_result {
    const std::span<const remote_memory> one{&remote, 1};
    if (is_read) return rma::readv_to<own_completion>(ep, iov, desc, peer, one, op_flag::completion, ctx);
    return rma::writev_to<own_completion>(ep, iov, desc, peer, one, op_flag::completion, ctx);
}

}  // namespace loom::detail
