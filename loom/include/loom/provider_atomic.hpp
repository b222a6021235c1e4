// loom/provider_atomic.hpp — provider-aware atomics: operation descriptors and a context that
// submits them through libfabric's atomic interface whatever the provider's kind of atomics.
//
// Every path submits one provider atomic (fi_fetch_atomicmsg and its siblings): the provider
// supplies the atomicity, in the NIC or at the target's progress. No path emulates an atomic
// with an RMA read, a local update and an RMA write, which another initiator could interleave.
#pragma once

#include <loom/atomic.hpp>
#include <loom/domain.hpp>
#include <loom/provider_traits.hpp>

#include <array>
#include <cstddef>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>

namespace loom {

/// The bytes that hold one operation's operands in a staging area (the context's own, or a
/// staging region's).
inline constexpr std::size_t atomic_staging_slot = 64;

// ---------------------------------------------------------------- operation descriptors
// Each descriptor holds its operands by value. execute_native() submits them from the
// descriptor itself, which then stays borrowed until the operation completes;
// execute_staged() copies them into a registered staging buffer, which stays borrowed instead.
// provider_atomic_context::execute() copies them into its own storage, so a temporary
// descriptor serves. Results, their registrations and the context are borrowed until
// completion. Every path requests a completion and keeps the endpoint's transmit flags.
// `peer` names the destination on RDM endpoints; left unspecified, it serves connected ones.
// submit_from() is the common step: the operation with its operands read from `operands`
// (operand_count of them, registered by `operands_mr` or by nothing).

/// Fetch-and-add of one value; the previous value lands in *result.
template <atomic::atomic_value T>
struct fetch_add_op {
    endpoint* ep;                                 ///< submits the operation
    T operand;                                    ///< value added
    T* result;                                    ///< receives the previous value
    memory_region* mr_result;                     ///< registration of *result
    remote_memory remote;                         ///< the target element
    void* context;                                ///< operation context (the completion's op_context)
    fabric_addr peer{fabric_addrs::unspecified};  ///< destination on an RDM endpoint; unspecified for a connected one

    /// The element type.
    using value_type = T;
    /// Operands the operation reads (copied into a staging slot).
    static constexpr std::size_t operand_count = 1;
    /// Submits with the operand read from the descriptor itself, borrowed until completion.
    [[nodiscard]] auto execute_native() const noexcept -> void_result { return submit_from(&operand, nullptr); }
    /// Copies the operand into `staging_buffer` (registered by `staging_mr`) and submits from there.
    [[nodiscard]] auto execute_staged(memory_region& staging_mr, std::span<std::byte> staging_buffer) const noexcept
        -> void_result;
    /// Writes the operand_count operands to `out`.
    void copy_operands(T* out) const noexcept { out[0] = operand; }
    /// Submits with the operands read from `operands` (registered by `operands_mr`, or by nothing).
    [[nodiscard]] auto submit_from(const T* operands, const memory_region* operands_mr) const noexcept -> void_result;
};

/// Add without fetching. `mr`, when set, is this operation's own staging region:
/// execute_native() then stages the operand in its first bytes (borrowed until completion).
template <atomic::atomic_value T>
struct atomic_add_op {
    endpoint* ep;                                 ///< submits the operation
    T operand;                                    ///< value added
    memory_region* mr;                            ///< the operation's own staging region, or null
    remote_memory remote;                         ///< the target element
    void* context;                                ///< operation context (the completion's op_context)
    fabric_addr peer{fabric_addrs::unspecified};  ///< destination on an RDM endpoint; unspecified for a connected one

    /// The element type.
    using value_type = T;
    /// Operands the operation reads (copied into a staging slot).
    static constexpr std::size_t operand_count = 1;
    /// Submits from `mr`'s first bytes when it is set, else from the descriptor itself (borrowed until completion).
    [[nodiscard]] auto execute_native() const noexcept -> void_result;
    /// Copies the operand into `staging_buffer` (registered by `staging_mr`) and submits from there.
    [[nodiscard]] auto execute_staged(memory_region& staging_mr, std::span<std::byte> staging_buffer) const noexcept
        -> void_result;
    /// Writes the operand_count operands to `out`.
    void copy_operands(T* out) const noexcept { out[0] = operand; }
    /// Submits with the operands read from `operands` (registered by `operands_mr`, or by nothing).
    [[nodiscard]] auto submit_from(const T* operands, const memory_region* operands_mr) const noexcept -> void_result;
};

/// Compare-and-swap: swap_value is written when the target equals compare_value; the previous
/// value lands in *old_value either way. Its operands are the comparand, then the replacement.
template <atomic::atomic_value T>
struct compare_swap_op {
    endpoint* ep;                                 ///< submits the operation
    T compare_value;                              ///< value the target must hold
    T swap_value;                                 ///< value written when it does
    T* old_value;                                 ///< receives the previous value
    memory_region* mr_old;                        ///< registration of *old_value
    remote_memory remote;                         ///< the target element
    void* context;                                ///< operation context (the completion's op_context)
    fabric_addr peer{fabric_addrs::unspecified};  ///< destination on an RDM endpoint; unspecified for a connected one

    /// The element type.
    using value_type = T;
    /// Operands the operation reads (copied into a staging slot).
    static constexpr std::size_t operand_count = 2;
    /// Submits with the operands read from the descriptor itself, borrowed until completion.
    [[nodiscard]] auto execute_native() const noexcept -> void_result;
    /// Copies the operands into `staging_buffer` (registered by `staging_mr`) and submits from there.
    [[nodiscard]] auto execute_staged(memory_region& staging_mr, std::span<std::byte> staging_buffer) const noexcept
        -> void_result;
    /// Writes the operand_count operands to `out`: the comparand, then the replacement.
    void copy_operands(T* out) const noexcept {
        out[0] = compare_value;
        out[1] = swap_value;
    }
    /// Submits with the operands read from `operands` (registered by `operands_mr`, or by nothing).
    [[nodiscard]] auto submit_from(const T* operands, const memory_region* operands_mr) const noexcept -> void_result;
};

/// Any fetch-family operation (sum, min, max, bitwise and logical operations, atomic_read,
/// atomic_write) on one value; the previous value lands in *result.
template <atomic::atomic_value T>
struct generic_fetch_op {
    endpoint* ep;                                 ///< submits the operation
    atomic::operation op;                         ///< the fetch-family operation
    T operand;                                    ///< its operand (unused by atomic_read)
    T* result;                                    ///< receives the previous value
    memory_region* mr_result;                     ///< registration of *result
    remote_memory remote;                         ///< the target element
    void* context;                                ///< operation context (the completion's op_context)
    fabric_addr peer{fabric_addrs::unspecified};  ///< destination on an RDM endpoint; unspecified for a connected one

    /// The element type.
    using value_type = T;
    /// Operands the operation reads (copied into a staging slot).
    static constexpr std::size_t operand_count = 1;
    /// Submits with the operand read from the descriptor itself, borrowed until completion.
    [[nodiscard]] auto execute_native() const noexcept -> void_result { return submit_from(&operand, nullptr); }
    /// Copies the operand into `staging_buffer` (registered by `staging_mr`) and submits from there.
    [[nodiscard]] auto execute_staged(memory_region& staging_mr, std::span<std::byte> staging_buffer) const noexcept
        -> void_result;
    /// Writes the operand_count operands to `out`.
    void copy_operands(T* out) const noexcept { out[0] = operand; }
    /// Submits with the operands read from `operands` (registered by `operands_mr`, or by nothing).
    [[nodiscard]] auto submit_from(const T* operands, const memory_region* operands_mr) const noexcept -> void_result;
};

/// Submits atomic operation descriptors for the endpoints of one domain of provider P.
///
/// Needs no staging buffer: it copies each operation's operands into storage of its own
/// (kept in place: the context is neither copied nor moved), which holds the operands of
/// `inline_slots` operations in flight. A staging region (the legacy constructor or
/// set_staging_mr) gives operands a registered home instead, for providers that want
/// registered operands; it holds size() / atomic_staging_slot operations in flight. Slots are
/// used in turn. Not thread-safe.
template <provider_tag P>
class provider_atomic_context {
public:
    /// Operations in flight that the context's own storage holds operands for.
    static constexpr std::size_t inline_slots = 16;

    /// A context for `dom`'s endpoints that stages operands in its own storage.
    explicit provider_atomic_context(domain& dom) noexcept;
    /// The legacy form: operands staged in the registered `staging_mr` instead.
    provider_atomic_context(domain& dom, memory_region staging_mr) noexcept;
    provider_atomic_context(const provider_atomic_context&) = delete;
    auto operator=(const provider_atomic_context&) -> provider_atomic_context& = delete;

    /// Submits `op` with its operands copied into the next slot. invalid_argument for an
    /// endpoint of another domain and a staging region without a usable slot; not_supported
    /// when P names a provider the domain does not run; otherwise what the submission returns.
    template <class Op>
    [[nodiscard]] auto execute(const Op& op) noexcept -> void_result;

    /// Stages later operations' operands in the registered `mr`, starting at its first slot.
    void set_staging_mr(memory_region mr) noexcept {
        staging_mr_ = std::move(mr);
        next_slot_ = 0;
    }
    /// True when operands are staged in a registered region.
    [[nodiscard]] auto has_staging_mr() const noexcept -> bool { return staging_mr_.has_value(); }
    /// False for every provider: the provider's atomic interface is used, staged or not.
    [[nodiscard]] static constexpr auto requires_staging() noexcept -> bool { return false; }
    /// True when P's atomics are carried out by the target's software rather than the NIC.
    [[nodiscard]] static constexpr auto provider_stages_atomics() noexcept -> bool { return staged_atomic_provider<P>; }

private:
    domain* domain_;
    bool runs_provider_;  // the domain runs P's provider: decided once, not per operation
    std::optional<memory_region> staging_mr_;
    std::size_t next_slot_{0};
    alignas(atomic_staging_slot) std::array<std::byte, inline_slots * atomic_staging_slot> slots_{};
};

/// One-call atomics that build a descriptor and submit it through a provider_atomic_context.
namespace provider_atomic {
/// Fetch-and-add of `operand`; the previous value lands in *result (fetch_add_op).
template <provider_tag P, atomic::atomic_value T>
[[nodiscard]] auto fetch_add(provider_atomic_context<P>& ctx, endpoint& ep, const T& operand, T* result,
                             memory_region& mr_result, remote_memory remote, void* context = nullptr) noexcept
    -> void_result {
    return ctx.execute(fetch_add_op<T>{&ep, operand, result, &mr_result, remote, context});
}
/// Add without fetching (atomic_add_op).
template <provider_tag P, atomic::atomic_value T>
[[nodiscard]] auto add(provider_atomic_context<P>& ctx, endpoint& ep, const T& operand, memory_region* mr,
                       remote_memory remote, void* context = nullptr) noexcept -> void_result {
    return ctx.execute(atomic_add_op<T>{&ep, operand, mr, remote, context});
}
/// Compare-and-swap; the previous value lands in *old_value (compare_swap_op).
template <provider_tag P, atomic::atomic_value T>
[[nodiscard]] auto compare_swap(provider_atomic_context<P>& ctx, endpoint& ep, const T& compare_value,
                                const T& swap_value, T* old_value, memory_region& mr_old, remote_memory remote,
                                void* context = nullptr) noexcept -> void_result {
    return ctx.execute(compare_swap_op<T>{&ep, compare_value, swap_value, old_value, &mr_old, remote, context});
}
/// Any fetch-family operation `op`; the previous value lands in *result (generic_fetch_op).
template <provider_tag P, atomic::atomic_value T>
[[nodiscard]] auto fetch_op(provider_atomic_context<P>& ctx, endpoint& ep, atomic::operation op, const T& operand,
                            T* result, memory_region& mr_result, remote_memory remote, void* context = nullptr) noexcept
    -> void_result {
    return ctx.execute(generic_fetch_op<T>{&ep, op, operand, result, &mr_result, remote, context});
}
}  // namespace provider_atomic

}  // namespace loom

#include <loom/impl/provider_atomic.hpp>
