// loom/execution/detail/message_descriptions.hpp — what a message sender submits.
#pragma once

#include <loom/execution/detail/fabric_operation.hpp>
#include <loom/msg.hpp>

#include <span>

namespace loom::execution::detail {

/// Front-end operations ask for a completion of their own: the endpoint's defaults for the
/// direction, less the FI_MORE hint (nothing may follow to end the batch), plus FI_COMPLETION
/// (selective completion would otherwise drop it).
inline constexpr auto own_completion = operation_defaults::inherit_without_more;
/// When the endpoint's defaults carry no FI_MORE and its queue is not selective, the plain call
/// (fi_send, fi_trecv, ...) has exactly those semantics, without the message form's cost.
[[nodiscard]] constexpr auto plain_call_completes(op_flag defaults, bool selective) noexcept -> bool {
    return !selective && !defaults.any(op_flag::more);
}

struct send_description {
    using value_signature = set_value_t();
    std::span<const std::byte> buffer;
    void* desc;
    fabric_addr peer;
    std::uint64_t tag;
    bool tagged;

    [[nodiscard]] auto check(const endpoint&, const completion_queue&) const noexcept -> std::error_code { return {}; }
    [[nodiscard]] auto submit(endpoint& ep, void* ctx) noexcept -> void_result {
        if (plain_call_completes(ep.tx_op_flags(), ep.transmit_completion_is_selective()))
            return tagged ? ep.tagged_send(buffer, tag, peer, desc, ctx) : ep.send(buffer, peer, desc, ctx);
        const ::iovec iov{const_cast<std::byte*>(buffer.data()), buffer.size()};
        if (tagged) {
            msg::tagged_send_message<void*> m{};
            m.iov.push_back(iov);
            m.desc.push_back(desc);
            m.addr = peer;
            m.tag = tag;
            m.context = ctx;
            return msg::tagged_sendmsg<own_completion>(ep, m, op_flag::completion);
        }
        msg::send_message<void*> m{};
        m.iov.push_back(iov);
        m.desc.push_back(desc);
        m.addr = peer;
        m.context = ctx;
        return msg::sendmsg<own_completion>(ep, m, op_flag::completion);
    }
    template <class R>
    void complete(R&& r, const completion_event&) const noexcept {
        execution::set_value(static_cast<R&&>(r));
    }
};

struct receive_description {
    using value_signature = set_value_t(std::size_t);
    std::span<std::byte> buffer;
    void* desc;
    fabric_addr source;
    std::uint64_t tag;
    std::uint64_t ignore;
    bool tagged;

    /// A length must come back (not a context-only queue), and one completion per operation.
    [[nodiscard]] auto check(const endpoint& ep, const completion_queue& cq) const noexcept -> std::error_code {
        if (cq.format() == cq_format::context) return make_error_code(errc::invalid_argument);
        if (ep.rx_op_flags().any(op_flag::multi_recv)) return make_error_code(errc::not_supported);
        return {};
    }
    [[nodiscard]] auto submit(endpoint& ep, void* ctx) noexcept -> void_result {
        if (plain_call_completes(ep.rx_op_flags(), ep.receive_completion_is_selective()))
            return tagged ? ep.tagged_recv(buffer, tag, ignore, source, desc, ctx) : ep.recv(buffer, source, desc, ctx);
        const ::iovec iov{buffer.data(), buffer.size()};
        if (tagged) {
            msg::tagged_receive_message<void*> m{};
            m.iov.push_back(iov);
            m.desc.push_back(desc);
            m.addr = source;
            m.tag = tag;
            m.ignore = ignore;
            m.context = ctx;
            return msg::tagged_recvmsg<own_completion>(ep, m, op_flag::completion);
        }
        msg::receive_message<void*> m{};
        m.iov.push_back(iov);
        m.desc.push_back(desc);
        m.addr = source;
        m.context = ctx;
        return msg::recvmsg<own_completion>(ep, m, op_flag::completion);
    }
    template <class R>
    void complete(R&& r, const completion_event& ev) const noexcept {
        execution::set_value(static_cast<R&&>(r), ev.bytes_transferred);
    }
};

}  // namespace loom::execution::detail
