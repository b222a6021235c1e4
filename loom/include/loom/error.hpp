// loom/error.hpp — result<T>, errc and the libfabric error category.
#pragma once

#include <cstdint>
#include <expected>
#include <system_error>
#include <type_traits>

/// The core binding: typed, owning wrappers of libfabric's objects and operations.
namespace loom {

/// Error codes: libfabric's FI_E* values (positive), one enumerator per code.
enum class errc : int {
    success = 0,
    operation_not_permitted = 1,       // FI_EPERM
    no_entry = 2,                      // FI_ENOENT
    interrupted = 4,                   // FI_EINTR
    io_error = 5,                      // FI_EIO
    argument_list_too_long = 7,        // FI_E2BIG
    bad_file_descriptor = 9,           // FI_EBADF
    again = 11,                        // FI_EAGAIN (also FI_EWOULDBLOCK): retry after progress
    no_memory = 12,                    // FI_ENOMEM
    permission_denied = 13,            // FI_EACCES
    bad_address = 14,                  // FI_EFAULT
    busy = 16,                         // FI_EBUSY
    no_device = 19,                    // FI_ENODEV
    invalid_argument = 22,             // FI_EINVAL
    too_many_files = 24,               // FI_EMFILE
    no_space = 28,                     // FI_ENOSPC
    not_implemented = 38,              // FI_ENOSYS
    no_message = 42,                   // FI_ENOMSG
    no_data = 61,                      // FI_ENODATA
    protocol_error = 71,               // FI_EPROTO
    value_too_large = 75,              // FI_EOVERFLOW
    message_too_long = 90,             // FI_EMSGSIZE
    protocol_option_unavailable = 92,  // FI_ENOPROTOOPT
    not_supported = 95,                // FI_EOPNOTSUPP
    address_in_use = 98,               // FI_EADDRINUSE
    address_not_available = 99,        // FI_EADDRNOTAVAIL
    network_down = 100,                // FI_ENETDOWN
    network_unreachable = 101,         // FI_ENETUNREACH
    connection_aborted = 103,          // FI_ECONNABORTED
    connection_reset = 104,            // FI_ECONNRESET
    no_buffer_space = 105,             // FI_ENOBUFS
    already_connected = 106,           // FI_EISCONN
    not_connected = 107,               // FI_ENOTCONN
    shutdown = 108,                    // FI_ESHUTDOWN
    timed_out = 110,                   // FI_ETIMEDOUT
    connection_refused = 111,          // FI_ECONNREFUSED
    host_down = 112,                   // FI_EHOSTDOWN
    host_unreachable = 113,            // FI_EHOSTUNREACH
    already_in_progress = 114,         // FI_EALREADY
    in_progress = 115,                 // FI_EINPROGRESS
    canceled = 125,                    // FI_ECANCELED
    key_rejected = 129,                // FI_EKEYREJECTED
    remote_io = 121,                   // FI_EREMOTEIO
    other = 256,                       // FI_EOTHER
    too_small = 257,                   // FI_ETOOSMALL
    bad_state = 258,                   // FI_EOPBADSTATE
    error_available = 259,             // FI_EAVAIL
    bad_flags = 260,                   // FI_EBADFLAGS
    no_event_queue = 261,              // FI_ENOEQ
    invalid_domain = 262,              // FI_EDOMAIN
    no_completion_queue = 263,         // FI_ENOCQ
    crc_error = 264,                   // FI_ECRC
    truncated = 265,                   // FI_ETRUNC
    no_key = 266,                      // FI_ENOKEY
    no_address_vector = 267,           // FI_ENOAV
    overrun = 268,                     // FI_EOVERRUN
    receiver_not_ready = 269,          // FI_ENORX
    no_memory_region = 270,            // FI_ENOMR
};

namespace detail {
/// The category object, constant-initialized in libloom (no guard, no call to reach it).
extern const std::error_category* const fabric_category_object;
}  // namespace detail

/// The category of every loom error: messages come from fi_strerror(). Inline: building or
/// testing an error code is on hot paths (FI_EAGAIN from a post into a full queue, then
/// is_again, once per retry).
[[nodiscard]] inline auto fabric_category() noexcept -> const std::error_category& {
    return *detail::fabric_category_object;
}

/// An error code of loom's category for `e`.
[[nodiscard]] inline auto make_error_code(errc e) noexcept -> std::error_code {
    return {static_cast<int>(e), fabric_category()};
}

/// A value or the error code of why there is none.
template <class T>
using result = std::expected<T, std::error_code>;
/// Success or the error code of the failure.
using void_result = result<void>;

/// An error result for a positive FI_E* code or an errc.
[[nodiscard]] inline auto make_unexpected(errc e) noexcept -> std::unexpected<std::error_code> {
    return std::unexpected(make_error_code(e));
}
/// Maps the return value of a libfabric call (negative FI_E*) to an error code.
[[nodiscard]] inline auto native_error(long long rc) noexcept -> std::error_code {
    const auto v = rc < 0 ? -rc : rc;
    return {static_cast<int>(v), fabric_category()};
}
/// native_error(rc) as an unexpected result.
[[nodiscard]] inline auto native_unexpected(long long rc) noexcept -> std::unexpected<std::error_code> {
    return std::unexpected(native_error(rc));
}
/// 0 -> success, negative -> error.
[[nodiscard]] inline auto check_native(long long rc) noexcept -> void_result {
    if (rc >= 0) [[likely]]
        return {};
    return native_unexpected(rc);
}

/// True when the error is the normal "try again after progress" outcome.
[[nodiscard]] inline auto is_again(const std::error_code& ec) noexcept -> bool {
    return ec == make_error_code(errc::again);
}

/// Name of the enumerator (e.g. "invalid_argument"), or "unknown".
[[nodiscard]] auto errc_name(errc e) noexcept -> const char*;

}  // namespace loom

template <>
struct std::is_error_code_enum<loom::errc> : std::true_type {};
