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
    success = 0,                       ///< no error (FI_SUCCESS)
    operation_not_permitted = 1,       ///< FI_EPERM: operation not permitted
    no_entry = 2,                      ///< FI_ENOENT: no such entry (file, device or name) found
    interrupted = 4,                   ///< FI_EINTR: interrupted by a signal
    io_error = 5,                      ///< FI_EIO: input/output error
    argument_list_too_long = 7,        ///< FI_E2BIG: argument list too long
    bad_file_descriptor = 9,           ///< FI_EBADF: bad file descriptor
    again = 11,                        ///< FI_EAGAIN (also FI_EWOULDBLOCK): cannot proceed now; retry after progress
    no_memory = 12,                    ///< FI_ENOMEM: out of memory
    permission_denied = 13,            ///< FI_EACCES: permission denied
    bad_address = 14,                  ///< FI_EFAULT: bad address
    busy = 16,                         ///< FI_EBUSY: device or resource busy
    no_device = 19,                    ///< FI_ENODEV: no such device
    invalid_argument = 22,             ///< FI_EINVAL: invalid argument
    too_many_files = 24,               ///< FI_EMFILE: too many open files
    no_space = 28,                     ///< FI_ENOSPC: no space left on device
    not_implemented = 38,              ///< FI_ENOSYS: function not implemented
    no_message = 42,                   ///< FI_ENOMSG: no message of the desired type
    no_data = 61,                      ///< FI_ENODATA: no data available
    protocol_error = 71,               ///< FI_EPROTO: protocol error
    value_too_large = 75,              ///< FI_EOVERFLOW: value too large for its data type
    message_too_long = 90,             ///< FI_EMSGSIZE: message too long
    protocol_option_unavailable = 92,  ///< FI_ENOPROTOOPT: protocol option not available
    not_supported = 95,                ///< FI_EOPNOTSUPP: operation not supported
    address_in_use = 98,               ///< FI_EADDRINUSE: address already in use
    address_not_available = 99,        ///< FI_EADDRNOTAVAIL: cannot assign the requested address
    network_down = 100,                ///< FI_ENETDOWN: network is down
    network_unreachable = 101,         ///< FI_ENETUNREACH: network is unreachable
    connection_aborted = 103,          ///< FI_ECONNABORTED: connection aborted
    connection_reset = 104,            ///< FI_ECONNRESET: connection reset by peer
    no_buffer_space = 105,             ///< FI_ENOBUFS: no buffer space available
    already_connected = 106,           ///< FI_EISCONN: endpoint is already connected
    not_connected = 107,               ///< FI_ENOTCONN: endpoint is not connected
    shutdown = 108,                    ///< FI_ESHUTDOWN: cannot send after the endpoint was shut down
    timed_out = 110,                   ///< FI_ETIMEDOUT: operation timed out
    connection_refused = 111,          ///< FI_ECONNREFUSED: connection refused
    host_down = 112,                   ///< FI_EHOSTDOWN: host is down
    host_unreachable = 113,            ///< FI_EHOSTUNREACH: no route to host
    already_in_progress = 114,         ///< FI_EALREADY: operation already in progress
    in_progress = 115,                 ///< FI_EINPROGRESS: operation now in progress
    canceled = 125,                    ///< FI_ECANCELED: operation canceled
    key_rejected = 129,                ///< FI_EKEYREJECTED: key was rejected
    remote_io = 121,                   ///< FI_EREMOTEIO: remote I/O error
    other = 256,                       ///< FI_EOTHER: unspecified error
    too_small = 257,                   ///< FI_ETOOSMALL: provided buffer is too small
    bad_state = 258,                   ///< FI_EOPBADSTATE: operation not permitted in the current state
    error_available = 259,             ///< FI_EAVAIL: an error entry is available to read from the queue
    bad_flags = 260,                   ///< FI_EBADFLAGS: flags not supported
    no_event_queue = 261,              ///< FI_ENOEQ: missing or unavailable event queue
    invalid_domain = 262,              ///< FI_EDOMAIN: invalid resource domain
    no_completion_queue = 263,         ///< FI_ENOCQ: missing or unavailable completion queue
    crc_error = 264,                   ///< FI_ECRC: CRC error
    truncated = 265,                   ///< FI_ETRUNC: truncation error (data longer than the buffer)
    no_key = 266,                      ///< FI_ENOKEY: required key not available
    no_address_vector = 267,           ///< FI_ENOAV: missing or unavailable address vector
    overrun = 268,                     ///< FI_EOVERRUN: queue has been overrun
    receiver_not_ready = 269,          ///< FI_ENORX: receiver not ready, no receive buffers available
    no_memory_region = 270,            ///< FI_ENOMR: no more memory registrations available
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
