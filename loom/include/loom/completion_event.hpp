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
    void* context{nullptr};
    op_flag flags{};
    std::size_t bytes_transferred{0};
    void* buffer{nullptr};
    std::uint64_t data{0};
    std::uint64_t tag{0};
    fabric_addr source{fabric_addrs::unspecified};
    std::error_code error{};
    int provider_errno{0};
    std::size_t overflow_length{0};  ///< bytes the receive buffer could not hold (truncation)
    std::string error_text{};        ///< fi_cq_strerror() text for error entries (kept last:
                                     ///< a copy whose text allocation fails has every other field)

    [[nodiscard]] auto has_error() const noexcept -> bool { return static_cast<bool>(error); }
    [[nodiscard]] auto request() const noexcept -> request_context* { return request_context::from_native(context); }
};

}  // namespace loom
