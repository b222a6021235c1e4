// Unit tests for loom/error.hpp: errc, the libfabric category, native-code mapping.
#include <loom/error.hpp>
#include <loom/fabric_info.hpp>

#include "unit_support.hpp"

#include <rdma/fi_errno.h>

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <set>
#include <string>
#include <system_error>

namespace {

using loom::errc;
using loom::test::error_of;

struct errc_row {
    errc e;
    int native;  // the FI_E* macro
    const char* name;
};

// Every enumerator of loom::errc, with the libfabric macro it stands for and its name.
constexpr std::array<errc_row, 57> all_errc{{
    {errc::success, FI_SUCCESS, "success"},
    {errc::operation_not_permitted, FI_EPERM, "operation_not_permitted"},
    {errc::no_entry, FI_ENOENT, "no_entry"},
    {errc::interrupted, FI_EINTR, "interrupted"},
    {errc::io_error, FI_EIO, "io_error"},
    {errc::argument_list_too_long, FI_E2BIG, "argument_list_too_long"},
    {errc::bad_file_descriptor, FI_EBADF, "bad_file_descriptor"},
    {errc::again, FI_EAGAIN, "again"},
    {errc::no_memory, FI_ENOMEM, "no_memory"},
    {errc::permission_denied, FI_EACCES, "permission_denied"},
    {errc::bad_address, FI_EFAULT, "bad_address"},
    {errc::busy, FI_EBUSY, "busy"},
    {errc::no_device, FI_ENODEV, "no_device"},
    {errc::invalid_argument, FI_EINVAL, "invalid_argument"},
    {errc::too_many_files, FI_EMFILE, "too_many_files"},
    {errc::no_space, FI_ENOSPC, "no_space"},
    {errc::not_implemented, FI_ENOSYS, "not_implemented"},
    {errc::no_message, FI_ENOMSG, "no_message"},
    {errc::no_data, FI_ENODATA, "no_data"},
    {errc::value_too_large, FI_EOVERFLOW, "value_too_large"},
    {errc::message_too_long, FI_EMSGSIZE, "message_too_long"},
    {errc::protocol_option_unavailable, FI_ENOPROTOOPT, "protocol_option_unavailable"},
    {errc::not_supported, FI_EOPNOTSUPP, "not_supported"},
    {errc::address_in_use, FI_EADDRINUSE, "address_in_use"},
    {errc::address_not_available, FI_EADDRNOTAVAIL, "address_not_available"},
    {errc::network_down, FI_ENETDOWN, "network_down"},
    {errc::network_unreachable, FI_ENETUNREACH, "network_unreachable"},
    {errc::connection_aborted, FI_ECONNABORTED, "connection_aborted"},
    {errc::connection_reset, FI_ECONNRESET, "connection_reset"},
    {errc::no_buffer_space, FI_ENOBUFS, "no_buffer_space"},
    {errc::already_connected, FI_EISCONN, "already_connected"},
    {errc::not_connected, FI_ENOTCONN, "not_connected"},
    {errc::shutdown, FI_ESHUTDOWN, "shutdown"},
    {errc::timed_out, FI_ETIMEDOUT, "timed_out"},
    {errc::connection_refused, FI_ECONNREFUSED, "connection_refused"},
    {errc::host_down, FI_EHOSTDOWN, "host_down"},
    {errc::host_unreachable, FI_EHOSTUNREACH, "host_unreachable"},
    {errc::already_in_progress, FI_EALREADY, "already_in_progress"},
    {errc::in_progress, FI_EINPROGRESS, "in_progress"},
    {errc::canceled, FI_ECANCELED, "canceled"},
    {errc::key_rejected, FI_EKEYREJECTED, "key_rejected"},
    {errc::remote_io, FI_EREMOTEIO, "remote_io"},
    {errc::other, FI_EOTHER, "other"},
    {errc::too_small, FI_ETOOSMALL, "too_small"},
    {errc::bad_state, FI_EOPBADSTATE, "bad_state"},
    {errc::error_available, FI_EAVAIL, "error_available"},
    {errc::bad_flags, FI_EBADFLAGS, "bad_flags"},
    {errc::no_event_queue, FI_ENOEQ, "no_event_queue"},
    {errc::invalid_domain, FI_EDOMAIN, "invalid_domain"},
    {errc::no_completion_queue, FI_ENOCQ, "no_completion_queue"},
    {errc::crc_error, FI_ECRC, "crc_error"},
    {errc::truncated, FI_ETRUNC, "truncated"},
    {errc::no_key, FI_ENOKEY, "no_key"},
    {errc::no_address_vector, FI_ENOAV, "no_address_vector"},
    {errc::overrun, FI_EOVERRUN, "overrun"},
    {errc::receiver_not_ready, FI_ENORX, "receiver_not_ready"},
    {errc::no_memory_region, FI_ENOMR, "no_memory_region"},
}};

TEST(Errc, EnumeratorsHaveTheLibfabricValues) {
    std::set<int> seen;
    for (const auto& row : all_errc) {
        EXPECT_EQ(static_cast<int>(row.e), row.native) << row.name;
        EXPECT_TRUE(seen.insert(row.native).second) << "duplicate value " << row.native;
    }
    // The libfabric-specific range is covered completely (FI_EOTHER .. FI_ERRNO_MAX-1).
    for (int code = FI_ERRNO_OFFSET; code < FI_ERRNO_MAX; ++code) EXPECT_TRUE(seen.contains(code)) << code;
}

TEST(Errc, MessageOfEveryEnumeratorIsFiStrerror) {
    for (const auto& row : all_errc) {
        const std::error_code ec = loom::make_error_code(row.e);
        EXPECT_EQ(ec.message(), std::string(::fi_strerror(row.native))) << row.name;
        EXPECT_FALSE(ec.message().empty()) << row.name;
    }
}

TEST(Errc, NamesOfEveryEnumerator) {
    for (const auto& row : all_errc) EXPECT_STREQ(loom::errc_name(row.e), row.name);
    EXPECT_STREQ(loom::errc_name(static_cast<errc>(9999)), "unknown");
    EXPECT_STREQ(loom::errc_name(static_cast<errc>(-1)), "unknown");
}

// Built during static initialization of this test program, before main: the category object is
// constant-initialized in libloom, so it is already there whatever the initialization order.
const std::error_code code_from_a_static_initializer = loom::make_error_code(errc::again);

TEST(ErrorCategory, ReadyBeforeMainAndTheSameObjectAcrossTheLibrary) {
    EXPECT_EQ(&code_from_a_static_initializer.category(), &loom::fabric_category());
    EXPECT_TRUE(loom::is_again(code_from_a_static_initializer));
    // An error made inside libloom (an out-of-line function) has the category the inline
    // fabric_category() gives here: codes compare equal across the library boundary.
    const auto r = loom::query_fabric({.threading = static_cast<loom::threading_mode>(99)});
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(&r.error().category(), &loom::fabric_category());
    EXPECT_EQ(r.error(), loom::make_error_code(errc::invalid_argument));
    EXPECT_EQ(r.error().message(), ::fi_strerror(FI_EINVAL));
}

TEST(ErrorCategory, NameAndIdentity) {
    EXPECT_STREQ(loom::fabric_category().name(), "libfabric");
    EXPECT_EQ(&loom::fabric_category(), &loom::fabric_category());
    const std::error_code ec = errc::truncated;  // via is_error_code_enum
    EXPECT_EQ(&ec.category(), &loom::fabric_category());
    EXPECT_EQ(ec.value(), FI_ETRUNC);
    EXPECT_NE(loom::fabric_category(), std::generic_category());
}

TEST(ErrorCategory, PosixRangeCodesCompareEqualToStdErrc) {
    EXPECT_EQ(loom::make_error_code(errc::again), std::errc::resource_unavailable_try_again);
    EXPECT_EQ(loom::make_error_code(errc::invalid_argument), std::errc::invalid_argument);
    EXPECT_EQ(loom::make_error_code(errc::timed_out), std::errc::timed_out);
    EXPECT_EQ(loom::make_error_code(errc::no_memory), std::errc::not_enough_memory);
    EXPECT_EQ(loom::make_error_code(errc::canceled), std::errc::operation_canceled);
    EXPECT_NE(loom::make_error_code(errc::again), std::errc::invalid_argument);
    EXPECT_NE(loom::make_error_code(errc::invalid_argument), std::errc::resource_unavailable_try_again);

    const auto cond = loom::make_error_code(errc::invalid_argument).default_error_condition();
    EXPECT_EQ(&cond.category(), &std::generic_category());
    EXPECT_EQ(cond.value(), EINVAL);
    // A loom code is still a different error_code from the std one (different categories).
    EXPECT_NE(loom::make_error_code(errc::invalid_argument), std::make_error_code(std::errc::invalid_argument));
}

TEST(ErrorCategory, LibfabricSpecificCodesMatchNoStdErrc) {
    for (const auto& row : all_errc) {
        if (row.native < FI_ERRNO_OFFSET) continue;
        const std::error_code ec = loom::make_error_code(row.e);
        const auto cond = ec.default_error_condition();
        EXPECT_EQ(&cond.category(), &loom::fabric_category()) << row.name;
        EXPECT_EQ(cond.value(), row.native) << row.name;
        // No generic condition of any value in a generous range compares equal.
        for (int v = 0; v < 512; ++v)
            ASSERT_NE(ec, std::error_condition(v, std::generic_category())) << row.name << " vs " << v;
    }
    EXPECT_NE(loom::make_error_code(errc::truncated), std::errc::value_too_large);
    EXPECT_NE(loom::make_error_code(errc::bad_state), std::errc::operation_not_permitted);
}

TEST(NativeError, NegativeAndPositiveCodesMapToTheSameErrc) {
    EXPECT_EQ(loom::native_error(-FI_EAGAIN), errc::again);
    EXPECT_EQ(loom::native_error(FI_EAGAIN), errc::again);
    EXPECT_EQ(loom::native_error(-FI_ETRUNC), errc::truncated);
    EXPECT_EQ(loom::native_error(-FI_EOPBADSTATE), errc::bad_state);
    EXPECT_EQ(&loom::native_error(-FI_EINVAL).category(), &loom::fabric_category());
    const auto u = loom::native_unexpected(-FI_ENOMEM);
    EXPECT_EQ(u.error(), errc::no_memory);

    const loom::result<int> r = loom::make_unexpected(errc::no_entry);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), errc::no_entry);
    EXPECT_EQ(r.error().value(), FI_ENOENT);
    EXPECT_EQ(&r.error().category(), &loom::fabric_category());
}

TEST(NativeError, IsAgainOnlyForAgain) {
    EXPECT_TRUE(loom::is_again(loom::native_error(-FI_EAGAIN)));
    EXPECT_TRUE(loom::is_again(loom::make_error_code(errc::again)));
    EXPECT_FALSE(loom::is_again(loom::make_error_code(errc::invalid_argument)));
    EXPECT_FALSE(loom::is_again(loom::make_error_code(errc::error_available)));
    EXPECT_FALSE(loom::is_again(std::error_code{}));
    // The std code with the same value is a different category.
    EXPECT_FALSE(loom::is_again(std::make_error_code(std::errc::resource_unavailable_try_again)));
}

TEST(NativeError, CheckNative) {
    EXPECT_TRUE(loom::check_native(0).has_value());
    EXPECT_TRUE(loom::check_native(42).has_value());  // byte/entry counts are successes
    EXPECT_EQ(error_of(loom::check_native(-FI_EINVAL)), errc::invalid_argument);
    EXPECT_EQ(error_of(loom::check_native(-FI_EAVAIL)), errc::error_available);
    EXPECT_EQ(error_of(loom::check_native(-FI_EAGAIN)), errc::again);
}

}  // namespace
