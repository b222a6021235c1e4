// loom/rma.hpp — one-sided reads and writes (fi_read / fi_write / fi_writedata and msg forms).
#pragma once

#include <loom/context.hpp>
#include <loom/detail/inline_vector.hpp>
#include <loom/endpoint.hpp>
#include <loom/memory_region.hpp>

#include <rdma/fi_rma.h>

#include <sys/uio.h>
#include <span>

/// One-sided reads and writes of registered remote memory (fi_read, fi_write, ...).
namespace loom::rma {

/// Flags that only make sense for writes; a read with any of them is invalid_argument.
inline constexpr op_flag write_only_flags = op_flag::inject | op_flag::transmit_complete | op_flag::delivery_complete |
                                            op_flag::remote_cq_data | op_flag::inject_complete |
                                            op_flag::commit_complete;

namespace detail {
/// 0 or an FI_E* code: the checks every RMA submission makes before the provider.
[[nodiscard]] auto check(const endpoint& ep, std::span<const std::byte> local, const memory_region* mr,
                         fabric_addr peer, const remote_memory& remote, context_ptr<void> ctx) noexcept -> int;
[[nodiscard]] auto check_vector(const endpoint& ep, std::span<const ::iovec> local, std::span<void* const> desc,
                                fabric_addr peer, std::span<const remote_memory> remote, context_ptr<void> ctx) noexcept
    -> int;
[[nodiscard]] inline auto fail(int e) noexcept -> void_result { return std::unexpected(native_error(e)); }

/// 0 when a one-buffer read or write may go to the endpoint's RMA gate (which refuses for the
/// endpoint's state, capability, context and size): inline, `local` inside `mr`, `mr` of the
/// endpoint's domain and `remote` long enough without wrapping; otherwise check() says why.
template <destination Dest>
LOOM_SUBMIT_INLINE auto precheck(const endpoint& ep, std::span<const std::byte> local, const memory_region& mr,
                                 Dest peer, const remote_memory& remote, context_ptr<void> ctx) noexcept -> int {
    if (loom::detail::names_a_peer(peer) && mr.covers(ep, local) && remote.holds(local.size())) [[likely]]
        return 0;
    return check(ep, local, &mr, peer, remote, ctx);
}
template <destination Dest>
LOOM_SUBMIT_INLINE auto read_one(endpoint& ep, std::span<std::byte> local, const memory_region& mr, Dest peer,
                                 const remote_memory& remote, context_ptr<void> ctx) noexcept -> void_result {
    if (const int e = precheck(ep, local, mr, peer, remote, ctx)) [[unlikely]]
        return fail(e);
    return check_native(::fi_read(ep.send_gate(capability::rma), local.data(), local.size(), mr.descriptor(),
                                  peer.get(), remote.addr, remote.key, ctx.get()));
}
template <destination Dest>
LOOM_SUBMIT_INLINE auto write_one(endpoint& ep, std::span<const std::byte> local, const memory_region& mr, Dest peer,
                                  const remote_memory& remote, context_ptr<void> ctx) noexcept -> void_result {
    if (const int e = precheck(ep, local, mr, peer, remote, ctx)) [[unlikely]]
        return fail(e);
    return check_native(::fi_write(ep.send_gate(capability::rma), local.data(), local.size(), mr.descriptor(),
                                   peer.get(), remote.addr, remote.key, ctx.get()));
}
template <destination Dest>
LOOM_SUBMIT_INLINE auto write_data_one(endpoint& ep, std::span<const std::byte> local, const memory_region& mr,
                                       Dest peer, const remote_memory& remote, std::uint64_t data,
                                       context_ptr<void> ctx) noexcept -> void_result {
    if (const int e = precheck(ep, local, mr, peer, remote, ctx)) [[unlikely]]
        return fail(e);
    return check_native(::fi_writedata(ep.send_gate(capability::rma), local.data(), local.size(), mr.descriptor(), data,
                                       peer.get(), remote.addr, remote.key, ctx.get()));
}
auto submit_msg(endpoint& ep, bool is_read, std::span<const ::iovec> local, std::span<void* const> desc,
                fabric_addr peer, std::span<const remote_memory> remote, std::uint64_t data, op_flag flags,
                void* ctx) noexcept -> void_result;
}  // namespace detail

// ---------------------------------------------------------------- explicit peer
// With a peer_addr (what address_vector::insert returns) no destination check is made; with a
// plain fabric_addr it must not be fabric_addrs::unspecified on a connectionless endpoint.
// State, capability, context and size are the endpoint's RMA gate's (endpoint::send_gate).

/// Reads local.size() bytes from `remote` (which must be at least that long) into `local`.
LOOM_SUBMIT_INLINE auto read_to(endpoint& ep, std::span<std::byte> local, const memory_region& local_mr,
                                fabric_addr peer, const remote_memory& remote, context_ptr<void> ctx = {}) noexcept
    -> void_result {
    return detail::read_one(ep, local, local_mr, peer, remote, ctx);
}
/// The same from a peer_addr, with no destination check.
LOOM_SUBMIT_INLINE auto read_to(endpoint& ep, std::span<std::byte> local, const memory_region& local_mr, peer_addr peer,
                                const remote_memory& remote, context_ptr<void> ctx = {}) noexcept -> void_result {
    return detail::read_one(ep, local, local_mr, peer, remote, ctx);
}
/// Writes `local` to `remote` (which must be at least that long).
LOOM_SUBMIT_INLINE auto write_to(endpoint& ep, std::span<const std::byte> local, const memory_region& local_mr,
                                 fabric_addr peer, const remote_memory& remote, context_ptr<void> ctx = {}) noexcept
    -> void_result {
    return detail::write_one(ep, local, local_mr, peer, remote, ctx);
}
/// The same to a peer_addr, with no destination check.
LOOM_SUBMIT_INLINE auto write_to(endpoint& ep, std::span<const std::byte> local, const memory_region& local_mr,
                                 peer_addr peer, const remote_memory& remote, context_ptr<void> ctx = {}) noexcept
    -> void_result {
    return detail::write_one(ep, local, local_mr, peer, remote, ctx);
}
/// A write whose completion at the target carries `data` (remote CQ data).
LOOM_SUBMIT_INLINE auto write_data_to(endpoint& ep, std::span<const std::byte> local, const memory_region& local_mr,
                                      fabric_addr peer, const remote_memory& remote, std::uint64_t data,
                                      context_ptr<void> ctx = {}) noexcept -> void_result {
    return detail::write_data_one(ep, local, local_mr, peer, remote, data, ctx);
}
/// The same to a peer_addr, with no destination check.
LOOM_SUBMIT_INLINE auto write_data_to(endpoint& ep, std::span<const std::byte> local, const memory_region& local_mr,
                                      peer_addr peer, const remote_memory& remote, std::uint64_t data,
                                      context_ptr<void> ctx = {}) noexcept -> void_result {
    return detail::write_data_one(ep, local, local_mr, peer, remote, data, ctx);
}

/// Explicit flags: replace the endpoint's transmit defaults, or extend them with
/// operation_defaults::inherit. Reads drop write-only defaults and reject write-only flags.
template <operation_defaults D = operation_defaults::replace>
auto read_to(endpoint& ep, std::span<std::byte> local, const memory_region& local_mr, fabric_addr peer,
             const remote_memory& remote, op_flag flags, context_ptr<void> ctx) noexcept -> void_result {
    if (flags.any(write_only_flags)) return detail::fail(FI_EINVAL);
    if (const int e = detail::check(ep, local, &local_mr, peer, remote, ctx)) return detail::fail(e);
    const ::iovec iov{local.data(), local.size()};
    void* desc = local_mr.descriptor();
    const remote_memory exact{remote.addr, remote.key, local.size()};  // the IOV totals must match
    return detail::submit_msg(ep, true, {&iov, 1}, {&desc, 1}, peer, {&exact, 1}, 0,
                              effective_flags<D>(flags, ep.tx_op_flags()).without(write_only_flags), ctx.get());
}
/// write_to with explicit flags: they replace the endpoint's transmit defaults unless D inherits them.
template <operation_defaults D = operation_defaults::replace>
auto write_to(endpoint& ep, std::span<const std::byte> local, const memory_region& local_mr, fabric_addr peer,
              const remote_memory& remote, op_flag flags, context_ptr<void> ctx) noexcept -> void_result {
    if (const int e = detail::check(ep, local, &local_mr, peer, remote, ctx)) return detail::fail(e);
    const ::iovec iov{const_cast<std::byte*>(local.data()), local.size()};
    void* desc = local_mr.descriptor();
    const remote_memory exact{remote.addr, remote.key, local.size()};  // the IOV totals must match
    return detail::submit_msg(ep, false, {&iov, 1}, {&desc, 1}, peer, {&exact, 1}, 0,
                              effective_flags<D>(flags, ep.tx_op_flags()), ctx.get());
}

/// Vectored forms: one descriptor per local IOV, any number of remote segments (within
/// iov_limits().rma); local and remote byte totals must be equal.
template <operation_defaults D = operation_defaults::replace>
auto readv_to(endpoint& ep, std::span<const ::iovec> local, std::span<void* const> desc, fabric_addr peer,
              std::span<const remote_memory> remote, op_flag flags, context_ptr<void> ctx) noexcept -> void_result {
    if (flags.any(write_only_flags)) return detail::fail(FI_EINVAL);
    if (const int e = detail::check_vector(ep, local, desc, peer, remote, ctx)) return detail::fail(e);
    return detail::submit_msg(ep, true, local, desc, peer, remote, 0,
                              effective_flags<D>(flags, ep.tx_op_flags()).without(write_only_flags), ctx.get());
}
/// Vectored write: one descriptor per local IOV; local and remote byte totals must be equal.
template <operation_defaults D = operation_defaults::replace>
auto writev_to(endpoint& ep, std::span<const ::iovec> local, std::span<void* const> desc, fabric_addr peer,
               std::span<const remote_memory> remote, op_flag flags, context_ptr<void> ctx) noexcept -> void_result {
    if (const int e = detail::check_vector(ep, local, desc, peer, remote, ctx)) return detail::fail(e);
    return detail::submit_msg(ep, false, local, desc, peer, remote, 0, effective_flags<D>(flags, ep.tx_op_flags()),
                              ctx.get());
}
/// readv_to with the endpoint's transmit defaults.
inline auto readv_to(endpoint& ep, std::span<const ::iovec> local, std::span<void* const> desc, fabric_addr peer,
                     std::span<const remote_memory> remote, context_ptr<void> ctx = {}) noexcept -> void_result {
    return readv_to<operation_defaults::inherit>(ep, local, desc, peer, remote, op_flag{}, ctx);
}
/// writev_to with the endpoint's transmit defaults.
inline auto writev_to(endpoint& ep, std::span<const ::iovec> local, std::span<void* const> desc, fabric_addr peer,
                      std::span<const remote_memory> remote, context_ptr<void> ctx = {}) noexcept -> void_result {
    return writev_to<operation_defaults::inherit>(ep, local, desc, peer, remote, op_flag{}, ctx);
}

// ---------------------------------------------------------------- connected endpoints
/// The peer is the endpoint's connection (fabric_addrs::unspecified): for connected
/// endpoints only; an RDM endpoint needs the _to forms (invalid_argument otherwise).
inline auto read(endpoint& ep, std::span<std::byte> local, const memory_region& local_mr, const remote_memory& remote,
                 context_ptr<void> ctx = {}) noexcept -> void_result {
    return read_to(ep, local, local_mr, fabric_addrs::unspecified, remote, ctx);
}
/// write_to on a connected endpoint.
inline auto write(endpoint& ep, std::span<const std::byte> local, const memory_region& local_mr,
                  const remote_memory& remote, context_ptr<void> ctx = {}) noexcept -> void_result {
    return write_to(ep, local, local_mr, fabric_addrs::unspecified, remote, ctx);
}
/// write_data_to on a connected endpoint.
inline auto write_data(endpoint& ep, std::span<const std::byte> local, const memory_region& local_mr,
                       const remote_memory& remote, std::uint64_t data, context_ptr<void> ctx = {}) noexcept
    -> void_result {
    return write_data_to(ep, local, local_mr, fabric_addrs::unspecified, remote, data, ctx);
}

}  // namespace loom::rma
