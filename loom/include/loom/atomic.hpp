// loom/atomic.hpp — remote atomic operations with datatype deduction (fi_atomic family).
#pragma once

#include <loom/context.hpp>
#include <loom/endpoint.hpp>
#include <loom/memory_region.hpp>

#include <rdma/fi_atomic.h>

#include <complex>
#include <concepts>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>

/// Remote atomic operations (fi_atomic family) with the datatype deduced from the C++ type.
namespace loom::atomic {

/// Atomic operations (fi_op), same values.
enum class operation : int {
    min = 0,       ///< FI_MIN: minimum (target = min(target, operand))
    max,           ///< FI_MAX: maximum (target = max(target, operand))
    sum,           ///< FI_SUM: sum (target = target + operand)
    prod,          ///< FI_PROD: product (target = target * operand)
    lor,           ///< FI_LOR: logical OR (target = target || operand)
    land,          ///< FI_LAND: logical AND (target = target && operand)
    bor,           ///< FI_BOR: bitwise OR (target = target | operand)
    band,          ///< FI_BAND: bitwise AND (target = target & operand)
    lxor,          ///< FI_LXOR: logical exclusive OR (true when exactly one of target and operand is true)
    bxor,          ///< FI_BXOR: bitwise exclusive OR (target = target ^ operand)
    atomic_read,   ///< FI_ATOMIC_READ: read the target atomically (result = target); fetch family only
    atomic_write,  ///< FI_ATOMIC_WRITE: write the operand atomically (target = operand)
    cswap,         ///< FI_CSWAP: compare and swap; target = operand if compare == target
    cswap_ne,      ///< FI_CSWAP_NE: target = operand if compare != target
    cswap_le,      ///< FI_CSWAP_LE: target = operand if compare <= target
    cswap_lt,      ///< FI_CSWAP_LT: target = operand if compare < target
    cswap_ge,      ///< FI_CSWAP_GE: target = operand if compare >= target
    cswap_gt,      ///< FI_CSWAP_GT: target = operand if compare > target
    mswap,         ///< FI_MSWAP: masked swap; the target bits set in compare take the operand's bits
};
/// Atomic datatypes (fi_datatype), same values.
enum class datatype : int {
    int8 = 0,             ///< FI_INT8: signed 8-bit integer (std::int8_t)
    uint8,                ///< FI_UINT8: unsigned 8-bit integer (std::uint8_t)
    int16,                ///< FI_INT16: signed 16-bit integer (std::int16_t)
    uint16,               ///< FI_UINT16: unsigned 16-bit integer (std::uint16_t)
    int32,                ///< FI_INT32: signed 32-bit integer (std::int32_t)
    uint32,               ///< FI_UINT32: unsigned 32-bit integer (std::uint32_t)
    int64,                ///< FI_INT64: signed 64-bit integer (std::int64_t)
    uint64,               ///< FI_UINT64: unsigned 64-bit integer (std::uint64_t)
    float32,              ///< FI_FLOAT: single-precision IEEE 754 floating point (float)
    float64,              ///< FI_DOUBLE: double-precision IEEE 754 floating point (double)
    float_complex,        ///< FI_FLOAT_COMPLEX: complex of two floats (std::complex<float>)
    double_complex,       ///< FI_DOUBLE_COMPLEX: complex of two doubles (std::complex<double>)
    long_double,          ///< FI_LONG_DOUBLE: extended precision float (long double); format is platform specific
    long_double_complex,  ///< FI_LONG_DOUBLE_COMPLEX: complex of two long doubles (std::complex<long double>)
    int128,               ///< FI_INT128: signed 128-bit integer (__int128)
    uint128,              ///< FI_UINT128: unsigned 128-bit integer (unsigned __int128)
};
/// Which libfabric interface an operation belongs to: base (fi_atomic), fetch
/// (fi_fetch_atomic: base + atomic_read), compare (fi_compare_atomic: cswap* and mswap).
enum class family {
    base,    ///< fi_atomic: min to bxor and atomic_write; no result returned
    fetch,   ///< fi_fetch_atomic: the base operations and atomic_read, returning the target's prior value
    compare  ///< fi_compare_atomic: cswap, the cswap_* variants and mswap
};

/// True for an enumerator of operation (a value cast from an int may be none).
[[nodiscard]] constexpr auto is_known(operation op) noexcept -> bool {
    return static_cast<int>(op) >= 0 && static_cast<int>(op) <= static_cast<int>(operation::mswap);
}
/// True for an enumerator of datatype.
[[nodiscard]] constexpr auto is_known(datatype dt) noexcept -> bool {
    return static_cast<int>(dt) >= 0 && static_cast<int>(dt) <= static_cast<int>(datatype::uint128);
}
/// True when `op` belongs to family `f` (atomic_read: fetch only; cswap* and mswap: compare only).
[[nodiscard]] constexpr auto in_family(operation op, family f) noexcept -> bool {
    if (!is_known(op)) return false;
    const bool compare = static_cast<int>(op) >= static_cast<int>(operation::cswap);
    switch (f) {
        case family::base: return !compare && op != operation::atomic_read;
        case family::fetch: return !compare;
        case family::compare: return compare;
    }
    return false;
}

template <class T>
struct datatype_traits;  // undefined: no libfabric datatype for T
#define LOOM_DETAIL_DT(T, v)                           \
    /** T's libfabric datatype. */                     \
    template <>                                        \
    struct datatype_traits<T> {                        \
        /** The datatype enumerator for T. */          \
        static constexpr datatype value = datatype::v; \
    };
LOOM_DETAIL_DT(std::int8_t, int8)
LOOM_DETAIL_DT(std::uint8_t, uint8)
LOOM_DETAIL_DT(std::int16_t, int16)
LOOM_DETAIL_DT(std::uint16_t, uint16)
LOOM_DETAIL_DT(std::int32_t, int32)
LOOM_DETAIL_DT(std::uint32_t, uint32)
LOOM_DETAIL_DT(std::int64_t, int64)
LOOM_DETAIL_DT(std::uint64_t, uint64)
LOOM_DETAIL_DT(float, float32)
LOOM_DETAIL_DT(double, float64)
LOOM_DETAIL_DT(std::complex<float>, float_complex)
LOOM_DETAIL_DT(std::complex<double>, double_complex)
LOOM_DETAIL_DT(long double, long_double)
LOOM_DETAIL_DT(std::complex<long double>, long_double_complex)
LOOM_DETAIL_DT(__int128, int128)
LOOM_DETAIL_DT(unsigned __int128, uint128)
#undef LOOM_DETAIL_DT

/// A type with a libfabric datatype (datatype_traits has a specialization for it).
template <class T>
concept atomic_value = requires { datatype_traits<std::remove_cv_t<T>>::value; };
/// The libfabric datatype of T (cv-qualifiers ignored).
template <atomic_value T>
inline constexpr datatype datatype_of = datatype_traits<std::remove_cv_t<T>>::value;

/// Provider support for (op, type): true and *count = the largest element count when valid.
/// False — with *count untouched — for unknown enums, an operation of another family, or
/// when the provider says no.
[[nodiscard]] auto is_valid(const endpoint& ep, operation op, datatype dt, std::size_t* count) noexcept -> bool;
/// is_valid for the fetch family (fi_fetch_atomicvalid).
[[nodiscard]] auto is_fetch_valid(const endpoint& ep, operation op, datatype dt, std::size_t* count) noexcept -> bool;
/// is_valid for the compare family (fi_compare_atomicvalid).
[[nodiscard]] auto is_compare_valid(const endpoint& ep, operation op, datatype dt, std::size_t* count) noexcept -> bool;

/// One operand/result/compare buffer with its (optional) registration.
struct buffer_ref {
    const void* data{nullptr};         ///< first byte
    std::size_t bytes{0};              ///< length in bytes
    const memory_region* mr{nullptr};  ///< its registration; null when the provider needs none
};

namespace detail {
struct request {
    family fam{};
    operation op{};
    datatype dt{};
    std::size_t count{0};
    std::size_t element_size{0};
    buffer_ref operand{}, compare{}, result{};
    fabric_addr peer{};
    remote_memory remote{};
    void* context{nullptr};
};
/// Checks (all before the provider) and submits; `flags` nullopt: the plain call (endpoint
/// defaults apply natively), otherwise the msg form with exactly these flags.
auto submit(endpoint& ep, const request& r, const op_flag* flags) noexcept -> void_result;
auto submit_inject(endpoint& ep, const request& r) noexcept -> void_result;
template <class T>
auto ref(std::span<T> s, const memory_region* mr) noexcept -> buffer_ref {
    return {s.data(), s.size_bytes(), mr};
}
[[nodiscard]] inline auto desc_of(const buffer_ref& b) noexcept -> void* { return b.mr ? b.mr->descriptor() : nullptr; }
/// One buffer of a request: present, `bytes` long and, when it has a registration, covered by
/// it (memory_region::covers).
[[nodiscard]] LOOM_SUBMIT_INLINE auto buffer_fits(const buffer_ref& b, std::size_t bytes, const endpoint& ep) noexcept
    -> bool {
    return b.data != nullptr && b.bytes == bytes && (b.mr == nullptr || b.mr->covers(ep, b.data, bytes));
}
/// submit()'s argument checks, inline so that what the call site knows (family, operation,
/// datatype, count) folds away: known operation of the family and datatype, a count whose bytes
/// do not overflow, a destination (`names_peer`: detail::names_a_peer of the caller's
/// destination), the buffers the family uses, a remote range long enough.
[[nodiscard]] LOOM_SUBMIT_INLINE auto arguments_fit(const endpoint& ep, const request& r, bool names_peer) noexcept
    -> bool {
    if (!in_family(r.op, r.fam) || !is_known(r.dt) || r.count == 0 ||
        r.count > std::numeric_limits<std::size_t>::max() / r.element_size)
        return false;
    const std::size_t bytes = r.count * r.element_size;
    if (!names_peer) return false;  // the full checks decide
    if (r.op != operation::atomic_read && !buffer_fits(r.operand, bytes, ep)) return false;
    if (r.fam != family::base && !buffer_fits(r.result, bytes, ep)) return false;
    if (r.fam == family::compare && !buffer_fits(r.compare, bytes, ep)) return false;
    return r.remote.holds(bytes);
}
/// submit() without flags (`peer`: the destination as the caller gave it): when the
/// arguments fit, straight to the endpoint's atomic gate
/// (which refuses for the endpoint's state, capability, context, size and provider quirks);
/// otherwise the full checks, which say why.
template <destination Dest>
LOOM_SUBMIT_INLINE auto submit_now(endpoint& ep, const request& r, Dest peer) noexcept -> void_result {
    if (!arguments_fit(ep, r, loom::detail::names_a_peer(peer))) [[unlikely]]
        return submit(ep, r, nullptr);
    ::fid_ep* gate = ep.send_gate(capability::atomic);
    const auto fop = static_cast<::fi_op>(r.op);
    const auto fdt = static_cast<::fi_datatype>(r.dt);
    // Atomic reads have no source operand, but providers still read the pointer: use the result.
    const buffer_ref& src = r.op == operation::atomic_read ? r.result : r.operand;
    switch (r.fam) {
        case family::base:
            return check_native(::fi_atomic(gate, src.data, r.count, desc_of(src), r.peer.get(), r.remote.addr,
                                            r.remote.key, fdt, fop, r.context));
        case family::fetch:
            return check_native(::fi_fetch_atomic(gate, src.data, r.count, desc_of(src),
                                                  const_cast<void*>(r.result.data), desc_of(r.result), r.peer.get(),
                                                  r.remote.addr, r.remote.key, fdt, fop, r.context));
        case family::compare:
            return check_native(::fi_compare_atomic(gate, src.data, r.count, desc_of(src), r.compare.data,
                                                    desc_of(r.compare), const_cast<void*>(r.result.data),
                                                    desc_of(r.result), r.peer.get(), r.remote.addr, r.remote.key, fdt,
                                                    fop, r.context));
    }
    return make_unexpected(errc::invalid_argument);
}
}  // namespace detail

// ---------------------------------------------------------------- base interface
/// Runs `op` with `operand` on `remote` at `peer` (fi_atomic); completes on the transmit queue.
template <atomic_value T, destination Dest = fabric_addr>
LOOM_SUBMIT_INLINE auto execute_to(endpoint& ep, std::span<const T> operand, const memory_region* operand_mr, Dest peer,
                                   const remote_memory& remote, operation op, context_ptr<void> ctx = {}) noexcept
    -> void_result {
    return detail::submit_now(ep,
                              {family::base,
                               op,
                               datatype_of<T>,
                               operand.size(),
                               sizeof(T),
                               detail::ref(operand, operand_mr),
                               {},
                               {},
                               peer,
                               remote,
                               ctx.get()},
                              peer);
}
/// execute_to with exactly these flags (fi_atomicmsg); D decides whether the endpoint's defaults join them.
template <operation_defaults D = operation_defaults::replace, atomic_value T>
auto execute_to(endpoint& ep, std::span<const T> operand, const memory_region* operand_mr, fabric_addr peer,
                const remote_memory& remote, operation op, op_flag flags, context_ptr<void> ctx) noexcept
    -> void_result {
    const auto f = effective_flags<D>(flags, ep.tx_op_flags());
    return detail::submit(ep,
                          {family::base,
                           op,
                           datatype_of<T>,
                           operand.size(),
                           sizeof(T),
                           detail::ref(operand, operand_mr),
                           {},
                           {},
                           peer,
                           remote,
                           ctx.get()},
                          &f);
}
/// No completion; the operand is reusable on return.
template <atomic_value T>
auto inject_to(endpoint& ep, std::span<const T> operand, fabric_addr peer, const remote_memory& remote,
               operation op) noexcept -> void_result {
    return detail::submit_inject(ep, {family::base,
                                      op,
                                      datatype_of<T>,
                                      operand.size(),
                                      sizeof(T),
                                      detail::ref(operand, nullptr),
                                      {},
                                      {},
                                      peer,
                                      remote,
                                      nullptr});
}

// ---------------------------------------------------------------- fetch interface
/// Runs `op` on `remote` and fetches the values it held before into `result` (fi_fetch_atomic).
template <atomic_value T, destination Dest = fabric_addr>
LOOM_SUBMIT_INLINE auto fetch_to(endpoint& ep, std::span<const T> operand, const memory_region* operand_mr,
                                 std::span<T> result, const memory_region* result_mr, Dest peer,
                                 const remote_memory& remote, operation op, context_ptr<void> ctx = {}) noexcept
    -> void_result {
    if (operand.size() != result.size() && !(op == operation::atomic_read && operand.empty()))
        return make_unexpected(errc::invalid_argument);
    return detail::submit_now(ep,
                              {family::fetch,
                               op,
                               datatype_of<T>,
                               result.size(),
                               sizeof(T),
                               detail::ref(operand, operand_mr),
                               {},
                               detail::ref(result, result_mr),
                               peer,
                               remote,
                               ctx.get()},
                              peer);
}
/// fetch_to with exactly these flags (fi_fetch_atomicmsg); D decides whether the endpoint's defaults join them.
template <operation_defaults D = operation_defaults::replace, atomic_value T>
auto fetch_to(endpoint& ep, std::span<const T> operand, const memory_region* operand_mr, std::span<T> result,
              const memory_region* result_mr, fabric_addr peer, const remote_memory& remote, operation op,
              op_flag flags, context_ptr<void> ctx) noexcept -> void_result {
    if (operand.size() != result.size() && !(op == operation::atomic_read && operand.empty()))
        return make_unexpected(errc::invalid_argument);
    const auto f = effective_flags<D>(flags, ep.tx_op_flags());
    return detail::submit(ep,
                          {family::fetch,
                           op,
                           datatype_of<T>,
                           result.size(),
                           sizeof(T),
                           detail::ref(operand, operand_mr),
                           {},
                           detail::ref(result, result_mr),
                           peer,
                           remote,
                           ctx.get()},
                          &f);
}

// ---------------------------------------------------------------- compare interface
/// Compare-and-swap family (cswap*, mswap) on `remote`; `result` gets the values held before (fi_compare_atomic).
template <atomic_value T, destination Dest = fabric_addr>
LOOM_SUBMIT_INLINE auto compare_swap_to(endpoint& ep, std::span<const T> compare, const memory_region* compare_mr,
                                        std::span<const T> desired, const memory_region* desired_mr,
                                        std::span<T> result, const memory_region* result_mr, Dest peer,
                                        const remote_memory& remote, operation op = operation::cswap,
                                        context_ptr<void> ctx = {}) noexcept -> void_result {
    if (compare.size() != desired.size() || result.size() != desired.size())
        return make_unexpected(errc::invalid_argument);
    return detail::submit_now(
        ep,
        {family::compare, op, datatype_of<T>, desired.size(), sizeof(T), detail::ref(desired, desired_mr),
         detail::ref(compare, compare_mr), detail::ref(result, result_mr), peer, remote, ctx.get()},
        peer);
}
/// compare_swap_to with exactly these flags (fi_compare_atomicmsg); D decides whether the endpoint's defaults join
/// them.
template <operation_defaults D = operation_defaults::replace, atomic_value T>
auto compare_swap_to(endpoint& ep, std::span<const T> compare, const memory_region* compare_mr,
                     std::span<const T> desired, const memory_region* desired_mr, std::span<T> result,
                     const memory_region* result_mr, fabric_addr peer, const remote_memory& remote, operation op,
                     op_flag flags, context_ptr<void> ctx) noexcept -> void_result {
    if (compare.size() != desired.size() || result.size() != desired.size())
        return make_unexpected(errc::invalid_argument);
    const auto f = effective_flags<D>(flags, ep.tx_op_flags());
    return detail::submit(
        ep,
        {family::compare, op, datatype_of<T>, desired.size(), sizeof(T), detail::ref(desired, desired_mr),
         detail::ref(compare, compare_mr), detail::ref(result, result_mr), peer, remote, ctx.get()},
        &f);
}

// ---------------------------------------------------------------- typed single-value helpers
// Arguments are borrowed until completion: temporaries are rejected at compile time.
/// Adds one `value` to the remote element.
template <atomic_value T, destination Dest = fabric_addr>
LOOM_SUBMIT_INLINE auto add_to(endpoint& ep, const T& value, const memory_region* value_mr, Dest peer,
                               const remote_memory& remote, context_ptr<void> ctx = {}) noexcept -> void_result {
    return execute_to<T>(ep, std::span<const T>{&value, 1}, value_mr, peer, remote, operation::sum, ctx);
}
template <atomic_value T>
auto add_to(endpoint&, const T&&, const memory_region*, fabric_addr, const remote_memory&, context_ptr<void> = {})
    -> void_result = delete;

/// Adds `increment` to the remote element; `*previous` gets the value it held before.
template <atomic_value T, destination Dest = fabric_addr>
LOOM_SUBMIT_INLINE auto fetch_add_to(endpoint& ep, const T& increment, T* previous, const memory_region* input_mr,
                                     const memory_region* result_mr, Dest peer, const remote_memory& remote,
                                     context_ptr<void> ctx = {}) noexcept -> void_result {
    if (previous == nullptr) return make_unexpected(errc::invalid_argument);
    return fetch_to<T>(ep, std::span<const T>{&increment, 1}, input_mr, std::span<T>{previous, 1}, result_mr, peer,
                       remote, operation::sum, ctx);
}
template <atomic_value T>
auto fetch_add_to(endpoint&, const T&&, T*, const memory_region*, const memory_region*, fabric_addr,
                  const remote_memory&, context_ptr<void> = {}) -> void_result = delete;

/// Stores `desired` in the remote element if it equals `expected`; `*result` gets the value it held before.
template <atomic_value T, destination Dest = fabric_addr>
LOOM_SUBMIT_INLINE auto cas_to(endpoint& ep, const T& expected, const memory_region* expected_mr, const T& desired,
                               const memory_region* desired_mr, T* result, const memory_region* result_mr, Dest peer,
                               const remote_memory& remote, context_ptr<void> ctx = {}) noexcept -> void_result {
    if (result == nullptr) return make_unexpected(errc::invalid_argument);
    return compare_swap_to<T>(ep, std::span<const T>{&expected, 1}, expected_mr, std::span<const T>{&desired, 1},
                              desired_mr, std::span<T>{result, 1}, result_mr, peer, remote, operation::cswap, ctx);
}

// ---------------------------------------------------------------- connected endpoints
// The original single-value helpers: no destination (fabric_addrs::unspecified), for connected
// (MSG) endpoints; an RDM endpoint refuses them with invalid_argument. Arguments are borrowed
// until completion, as above.
/// add_to without a destination, for a connected endpoint.
template <atomic_value T>
LOOM_SUBMIT_INLINE auto add(endpoint& ep, const T& value, const remote_memory& remote,
                            context_ptr<void> ctx = {}) noexcept -> void_result {
    return add_to<T>(ep, value, nullptr, fabric_addrs::unspecified, remote, ctx);
}
template <atomic_value T>
auto add(endpoint&, const T&&, const remote_memory&, context_ptr<void> = {}) -> void_result = delete;

/// fetch_add_to without a destination, for a connected endpoint.
template <atomic_value T>
LOOM_SUBMIT_INLINE auto fetch_add(endpoint& ep, const T& increment, T* previous, const memory_region& result_mr,
                                  const remote_memory& remote, context_ptr<void> ctx = {}) noexcept -> void_result {
    return fetch_add_to<T>(ep, increment, previous, nullptr, &result_mr, fabric_addrs::unspecified, remote, ctx);
}
template <atomic_value T>
auto fetch_add(endpoint&, const T&&, T*, const memory_region&, const remote_memory&, context_ptr<void> = {})
    -> void_result = delete;

/// cas_to without a destination, for a connected endpoint.
template <atomic_value T>
LOOM_SUBMIT_INLINE auto cas(endpoint& ep, const T& expected, const T& desired, T* previous,
                            const memory_region& result_mr, const remote_memory& remote,
                            context_ptr<void> ctx = {}) noexcept -> void_result {
    return cas_to<T>(ep, expected, nullptr, desired, nullptr, previous, &result_mr, fabric_addrs::unspecified, remote,
                     ctx);
}
template <atomic_value T>
auto cas(endpoint&, const T&&, const T&, T*, const memory_region&, const remote_memory&, context_ptr<void> = {})
    -> void_result = delete;
template <atomic_value T>
auto cas(endpoint&, const T&, const T&&, T*, const memory_region&, const remote_memory&, context_ptr<void> = {})
    -> void_result = delete;

/// Any fetch-family operation on `count` elements (atomic_read takes a null operand).
template <atomic_value T>
LOOM_SUBMIT_INLINE auto fetch(endpoint& ep, operation op, const T* operand, T* result, std::size_t count,
                              const memory_region* operand_mr, const memory_region* result_mr,
                              const remote_memory& remote, context_ptr<void> ctx = {}) noexcept -> void_result {
    if (result == nullptr || (operand == nullptr && op != operation::atomic_read))
        return make_unexpected(errc::invalid_argument);
    return fetch_to<T>(ep, std::span<const T>{operand, operand == nullptr ? 0 : count}, operand_mr,
                       std::span<T>{result, count}, result_mr, fabric_addrs::unspecified, remote, op, ctx);
}

}  // namespace loom::atomic
