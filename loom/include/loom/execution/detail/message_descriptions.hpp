// loom/execution/detail/message_descriptions.hpp — what a message sender submits.
#pragma once

#include <loom/detail/async_submission.hpp>
#include <loom/execution/detail/fabric_operation.hpp>

#include <span>

namespace loom::execution::detail {

struct send_description {
    using value_signature = set_value_t();
    std::span<const std::byte> buffer;
    void* desc;
    fabric_addr peer;
    std::uint64_t tag;
    bool tagged;

    [[nodiscard]] auto check(const endpoint&, const completion_queue&) const noexcept -> std::error_code { return {}; }
    [[nodiscard]] auto submit(endpoint& ep, void* ctx) noexcept -> void_result {
        return loom::detail::submit_send_one(ep, buffer, desc, peer, tag, tagged, ctx);
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
        return loom::detail::submit_receive_one(ep, buffer, desc, source, tag, ignore, tagged, ctx);
    }
    template <class R>
    void complete(R&& r, const completion_event& ev) const noexcept {
        execution::set_value(static_cast<R&&>(r), ev.bytes_transferred);
    }
};

}  // namespace loom::execution::detail
