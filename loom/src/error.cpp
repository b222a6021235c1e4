#include "loom/error.hpp"

#include <rdma/fi_errno.h>

#include <string>

namespace loom {
namespace {

class fabric_error_category final : public std::error_category {
public:
    [[nodiscard]] auto name() const noexcept -> const char* override { return "libfabric"; }
    [[nodiscard]] auto message(int code) const -> std::string override { return ::fi_strerror(code); }
    [[nodiscard]] auto default_error_condition(int code) const noexcept -> std::error_condition override {
        // The POSIX-range codes are errno values: compare equal to std::errc.
        if (code > 0 && code < FI_ERRNO_OFFSET) return {code, std::generic_category()};
        return {code, *this};
    }
};

static_assert(static_cast<int>(errc::again) == FI_EAGAIN);
static_assert(static_cast<int>(errc::invalid_argument) == FI_EINVAL);
static_assert(static_cast<int>(errc::not_supported) == FI_EOPNOTSUPP);
static_assert(static_cast<int>(errc::not_implemented) == FI_ENOSYS);
static_assert(static_cast<int>(errc::canceled) == FI_ECANCELED);
static_assert(static_cast<int>(errc::timed_out) == FI_ETIMEDOUT);
static_assert(static_cast<int>(errc::remote_io) == FI_EREMOTEIO);
static_assert(static_cast<int>(errc::key_rejected) == FI_EKEYREJECTED);
static_assert(static_cast<int>(errc::other) == FI_EOTHER);
static_assert(static_cast<int>(errc::truncated) == FI_ETRUNC);
static_assert(static_cast<int>(errc::no_memory_region) == FI_ENOMR);
static_assert(static_cast<int>(errc::error_available) == FI_EAVAIL);
static_assert(static_cast<int>(errc::message_too_long) == FI_EMSGSIZE);

// Constant-initialized: usable from any static initializer, and fabric_category() needs no guard.
constinit const fabric_error_category category_object{};

}  // namespace

const std::error_category* const detail::fabric_category_object = &category_object;

auto errc_name(errc e) noexcept -> const char* {
    switch (e) {
#define LOOM_ERRC_CASE(x) \
    case errc::x: return #x;
        LOOM_ERRC_CASE(success)
        LOOM_ERRC_CASE(operation_not_permitted)
        LOOM_ERRC_CASE(no_entry)
        LOOM_ERRC_CASE(interrupted)
        LOOM_ERRC_CASE(io_error)
        LOOM_ERRC_CASE(argument_list_too_long)
        LOOM_ERRC_CASE(bad_file_descriptor)
        LOOM_ERRC_CASE(again)
        LOOM_ERRC_CASE(no_memory)
        LOOM_ERRC_CASE(permission_denied)
        LOOM_ERRC_CASE(bad_address)
        LOOM_ERRC_CASE(busy)
        LOOM_ERRC_CASE(no_device)
        LOOM_ERRC_CASE(invalid_argument)
        LOOM_ERRC_CASE(too_many_files)
        LOOM_ERRC_CASE(no_space)
        LOOM_ERRC_CASE(not_implemented)
        LOOM_ERRC_CASE(no_message)
        LOOM_ERRC_CASE(no_data)
        LOOM_ERRC_CASE(protocol_error)
        LOOM_ERRC_CASE(value_too_large)
        LOOM_ERRC_CASE(message_too_long)
        LOOM_ERRC_CASE(protocol_option_unavailable)
        LOOM_ERRC_CASE(not_supported)
        LOOM_ERRC_CASE(address_in_use)
        LOOM_ERRC_CASE(address_not_available)
        LOOM_ERRC_CASE(network_down)
        LOOM_ERRC_CASE(network_unreachable)
        LOOM_ERRC_CASE(connection_aborted)
        LOOM_ERRC_CASE(connection_reset)
        LOOM_ERRC_CASE(no_buffer_space)
        LOOM_ERRC_CASE(already_connected)
        LOOM_ERRC_CASE(not_connected)
        LOOM_ERRC_CASE(shutdown)
        LOOM_ERRC_CASE(timed_out)
        LOOM_ERRC_CASE(connection_refused)
        LOOM_ERRC_CASE(host_down)
        LOOM_ERRC_CASE(host_unreachable)
        LOOM_ERRC_CASE(already_in_progress)
        LOOM_ERRC_CASE(in_progress)
        LOOM_ERRC_CASE(canceled)
        LOOM_ERRC_CASE(key_rejected)
        LOOM_ERRC_CASE(remote_io)
        LOOM_ERRC_CASE(other)
        LOOM_ERRC_CASE(too_small)
        LOOM_ERRC_CASE(bad_state)
        LOOM_ERRC_CASE(error_available)
        LOOM_ERRC_CASE(bad_flags)
        LOOM_ERRC_CASE(no_event_queue)
        LOOM_ERRC_CASE(invalid_domain)
        LOOM_ERRC_CASE(no_completion_queue)
        LOOM_ERRC_CASE(crc_error)
        LOOM_ERRC_CASE(truncated)
        LOOM_ERRC_CASE(no_key)
        LOOM_ERRC_CASE(no_address_vector)
        LOOM_ERRC_CASE(overrun)
        LOOM_ERRC_CASE(receiver_not_ready)
        LOOM_ERRC_CASE(no_memory_region)
#undef LOOM_ERRC_CASE
    }
    return "unknown";
}

}  // namespace loom
