// loom/detail/receive_submission.hpp — receive checks and submission shared by endpoints and
// shared receive contexts (any receive_target).
#pragma once

#include <loom/address.hpp>
#include <loom/context.hpp>
#include <loom/detail/hot.hpp>
#include <loom/error.hpp>
#include <loom/flags.hpp>

#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <sys/uio.h>
#include <cstddef>
#include <cstdint>
#include <span>

namespace loom::detail {

/// A positive FI_E* code as an error result.
[[nodiscard]] inline auto fail_code(int code) noexcept -> void_result { return std::unexpected(native_error(code)); }
/// Receive-side pre-submission checks, shared by endpoints and shared receive contexts:
/// 0 or a positive FI_E* code. `ready`: enabled endpoint / open SRX.
[[nodiscard]] constexpr auto check_receive(bool ready, capability caps, bool needs_context, capability family,
                                           fabric_addr src, context_ptr<void> ctx) noexcept -> int {
    if (!ready) return FI_EOPBADSTATE;
    if (!caps.any(family)) return FI_EINVAL;  // wrong object type for this operation
    if (needs_context && !ctx) return FI_EINVAL;
    if (src != fabric_addrs::unspecified && !caps.any(capability::directed_recv)) return FI_EINVAL;
    return 0;
}
[[nodiscard]] constexpr auto check_receive_iov(bool ready, capability caps, bool needs_context, std::size_t iov_limit,
                                               capability family, std::span<const ::iovec> iov,
                                               std::span<void* const> desc, fabric_addr src,
                                               context_ptr<void> ctx) noexcept -> int {
    if (!desc.empty() && desc.size() != iov.size()) return FI_EINVAL;
    if (!ready) return FI_EOPBADSTATE;
    if (iov.size() > iov_limit) return FI_EINVAL;
    return check_receive(ready, caps, needs_context, family, src, ctx);
}
[[nodiscard]] inline auto desc_or_null(std::span<void* const> desc) noexcept -> void** {
    return desc.empty() ? nullptr : const_cast<void**>(desc.data());
}

// Receive submission for any receive target (endpoint or shared receive context): through
// the target's receive gate (op_gates: state, capability and a missing context are refused
// there), after the target's full checks only for a source filter. Inline and allocation-free.
template <class T>
LOOM_SUBMIT_INLINE auto post_recv(T& t, std::span<std::byte> buffer, fabric_addr src, void* desc,
                                  context_ptr<void> ctx) noexcept -> void_result {
    if (src != fabric_addrs::unspecified) [[unlikely]]
        if (const int e = t.check_rx(capability::msg, src, ctx)) return fail_code(e);
    return check_native(
        ::fi_recv(t.receive_gate(capability::msg), buffer.data(), buffer.size(), desc, src.get(), ctx.get()));
}
template <class T>
auto post_recvv(T& t, std::span<const ::iovec> iov, std::span<void* const> desc, fabric_addr src,
                context_ptr<void> ctx) noexcept -> void_result {
    if (const int e = t.check_rx_iov(capability::msg, iov, desc, src, ctx)) [[unlikely]]
        return fail_code(e);
    return check_native(::fi_recvv(t.native(), iov.data(), desc_or_null(desc), iov.size(), src.get(), ctx.get()));
}
template <class T>
LOOM_SUBMIT_INLINE auto post_tagged_recv(T& t, std::span<std::byte> buffer, std::uint64_t tag, std::uint64_t ignore,
                                         fabric_addr src, void* desc, context_ptr<void> ctx) noexcept -> void_result {
    if (src != fabric_addrs::unspecified) [[unlikely]]
        if (const int e = t.check_rx(capability::tagged, src, ctx)) return fail_code(e);
    return check_native(::fi_trecv(t.receive_gate(capability::tagged), buffer.data(), buffer.size(), desc, src.get(),
                                   tag, ignore, ctx.get()));
}
template <class T>
auto post_tagged_recvv(T& t, std::span<const ::iovec> iov, std::span<void* const> desc, std::uint64_t tag,
                       std::uint64_t ignore, fabric_addr src, context_ptr<void> ctx) noexcept -> void_result {
    if (const int e = t.check_rx_iov(capability::tagged, iov, desc, src, ctx)) [[unlikely]]
        return fail_code(e);
    return check_native(
        ::fi_trecvv(t.native(), iov.data(), desc_or_null(desc), iov.size(), src.get(), tag, ignore, ctx.get()));
}

}  // namespace loom::detail
