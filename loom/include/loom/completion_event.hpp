// loom/completion_event.hpp — one completion read from a completion queue.
#pragma once

#include <loom/context.hpp>
#include <loom/error.hpp>

#include <cstdint>
#include <string>
#include <system_error>

namespace loom {

/// One completion: success fields, or an error with the provider's diagnostics.
struct completion_event {
    void* context{nullptr};            ///< the operation's context (op_context)
    op_flag flags{};                   ///< what completed (op_flag::send, op_flag::recv, ...)
    std::size_t bytes_transferred{0};  ///< bytes received (receives)
    void* buffer{nullptr};             ///< where the data landed (multi-receive buffers)
    std::uint64_t data{0};             ///< remote CQ data (with op_flag::remote_cq_data)
    std::uint64_t tag{0};              ///< the message's tag (tagged receives)
    /// The sender, on queues that read source addresses; else unspecified.
    fabric_addr source{fabric_addrs::unspecified};
    std::error_code error{};         ///< why the operation failed; empty on success
    int provider_errno{0};           ///< the provider's own error code of a failure
    std::size_t overflow_length{0};  ///< bytes the receive buffer could not hold (truncation)
    std::string error_text{};        ///< fi_cq_strerror() text for error entries (kept last:
                                     ///< a copy whose text allocation fails has every other field)

    /// True for a failed operation (or a failed read of the queue).
    [[nodiscard]] auto has_error() const noexcept -> bool { return static_cast<bool>(error); }
    /// The context as the request_context it was submitted with.
    [[nodiscard]] auto request() const noexcept -> request_context* { return request_context::from_native(context); }
};

}  // namespace loom
