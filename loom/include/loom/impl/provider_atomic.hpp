// loom/impl/provider_atomic.hpp — bodies of loom/provider_atomic.hpp.
#pragma once

#include <cstdint>

namespace loom {
namespace detail {

/// What every descriptor submits with: a completion, the endpoint's transmit defaults kept.
/// (Not op_flag::inject: ofi_rxm then drops the completion of a fetching atomic.)
inline constexpr op_flag provider_atomic_flags = op_flag::completion;

/// `area` as storage for Op's operands (aligned, large enough), their values copied in; null
/// when it is not. `mr`, when given, must cover the operands for the operation's endpoint.
template <class T, class Op>
auto stage_operands(const Op& op, std::span<std::byte> area, const memory_region* mr) noexcept -> const T* {
    constexpr std::size_t bytes = Op::operand_count * sizeof(T);
    static_assert(bytes <= atomic_staging_slot);
    if (op.ep == nullptr || area.size() < bytes || reinterpret_cast<std::uintptr_t>(area.data()) % alignof(T) != 0 ||
        (mr != nullptr && !mr->covers(*op.ep, area.data(), bytes)))
        return nullptr;
    T values[Op::operand_count];
    op.copy_operands(values);
    std::memcpy(area.data(), values, bytes);
    return reinterpret_cast<const T*>(area.data());
}

/// Op submitted with its operands staged in `area` (registered by `mr`, or by nothing).
template <class T, class Op>
auto submit_staged(const Op& op, std::span<std::byte> area, const memory_region* mr) noexcept -> void_result {
    const T* operands = stage_operands<T>(op, area, mr);
    if (operands == nullptr) return make_unexpected(errc::invalid_argument);
    return op.submit_from(operands, mr);
}

/// A fetch-family submission of one value from `operand`.
template <class T>
auto provider_fetch(endpoint* ep, atomic::operation op, const T* operand, const memory_region* operand_mr, T* result,
                    const memory_region* result_mr, fabric_addr peer, const remote_memory& remote,
                    void* context) noexcept -> void_result {
    if (ep == nullptr || result == nullptr) return make_unexpected(errc::invalid_argument);
    const std::span<const T> in =
        op == atomic::operation::atomic_read ? std::span<const T>{} : std::span<const T>{operand, 1};
    return atomic::fetch_to<operation_defaults::inherit, T>(*ep, in, operand_mr, std::span<T>{result, 1}, result_mr,
                                                            peer, remote, op, provider_atomic_flags, context);
}

/// True when the domain runs the provider a tag names (any provider for an unnamed tag): the
/// name is one layer of the domain's provider chain ("tcp;ofi_rxm" runs tcp and ofi_rxm).
[[nodiscard]] inline auto runs_provider(std::string_view chain, std::string_view name) noexcept -> bool {
    if (name.empty()) return true;
    while (!chain.empty()) {
        const auto cut = chain.find(';');
        if (chain.substr(0, cut) == name) return true;
        if (cut == std::string_view::npos) break;
        chain.remove_prefix(cut + 1);
    }
    return false;
}

}  // namespace detail

// ---------------------------------------------------------------- fetch_add_op
template <atomic::atomic_value T>
auto fetch_add_op<T>::submit_from(const T* operands, const memory_region* operands_mr) const noexcept -> void_result {
    return detail::provider_fetch(ep, atomic::operation::sum, operands, operands_mr, result, mr_result, peer, remote,
                                  context);
}
template <atomic::atomic_value T>
auto fetch_add_op<T>::execute_staged(memory_region& staging_mr, std::span<std::byte> staging_buffer) const noexcept
    -> void_result {
    return detail::submit_staged<T>(*this, staging_buffer, &staging_mr);
}

// ---------------------------------------------------------------- atomic_add_op
template <atomic::atomic_value T>
auto atomic_add_op<T>::submit_from(const T* operands, const memory_region* operands_mr) const noexcept -> void_result {
    if (ep == nullptr) return make_unexpected(errc::invalid_argument);
    return atomic::execute_to<operation_defaults::inherit, T>(*ep, std::span<const T>{operands, 1}, operands_mr, peer,
                                                              remote, atomic::operation::sum,
                                                              detail::provider_atomic_flags, context);
}
template <atomic::atomic_value T>
auto atomic_add_op<T>::execute_native() const noexcept -> void_result {
    if (mr != nullptr) return execute_staged(*mr, std::span<std::byte>{mr->address(), mr->size()});
    return submit_from(&operand, nullptr);
}
template <atomic::atomic_value T>
auto atomic_add_op<T>::execute_staged(memory_region& staging_mr, std::span<std::byte> staging_buffer) const noexcept
    -> void_result {
    return detail::submit_staged<T>(*this, staging_buffer, &staging_mr);
}

// ---------------------------------------------------------------- compare_swap_op
template <atomic::atomic_value T>
auto compare_swap_op<T>::submit_from(const T* operands, const memory_region* operands_mr) const noexcept
    -> void_result {
    if (ep == nullptr || old_value == nullptr) return make_unexpected(errc::invalid_argument);
    return atomic::compare_swap_to<operation_defaults::inherit, T>(
        *ep, std::span<const T>{operands, 1}, operands_mr, std::span<const T>{operands + 1, 1}, operands_mr,
        std::span<T>{old_value, 1}, mr_old, peer, remote, atomic::operation::cswap, detail::provider_atomic_flags,
        context);
}
template <atomic::atomic_value T>
auto compare_swap_op<T>::execute_native() const noexcept -> void_result {
    if (ep == nullptr || old_value == nullptr) return make_unexpected(errc::invalid_argument);
    return atomic::compare_swap_to<operation_defaults::inherit, T>(
        *ep, std::span<const T>{&compare_value, 1}, nullptr, std::span<const T>{&swap_value, 1}, nullptr,
        std::span<T>{old_value, 1}, mr_old, peer, remote, atomic::operation::cswap, detail::provider_atomic_flags,
        context);
}
template <atomic::atomic_value T>
auto compare_swap_op<T>::execute_staged(memory_region& staging_mr, std::span<std::byte> staging_buffer) const noexcept
    -> void_result {
    return detail::submit_staged<T>(*this, staging_buffer, &staging_mr);
}

// ---------------------------------------------------------------- generic_fetch_op
template <atomic::atomic_value T>
auto generic_fetch_op<T>::submit_from(const T* operands, const memory_region* operands_mr) const noexcept
    -> void_result {
    return detail::provider_fetch(ep, op, operands, operands_mr, result, mr_result, peer, remote, context);
}
template <atomic::atomic_value T>
auto generic_fetch_op<T>::execute_staged(memory_region& staging_mr, std::span<std::byte> staging_buffer) const noexcept
    -> void_result {
    return detail::submit_staged<T>(*this, staging_buffer, &staging_mr);
}

// ---------------------------------------------------------------- provider_atomic_context
template <provider_tag P>
provider_atomic_context<P>::provider_atomic_context(domain& dom) noexcept
    : domain_(&dom), runs_provider_(detail::runs_provider(dom.info().provider_name(), provider_traits<P>::name)) {}

template <provider_tag P>
provider_atomic_context<P>::provider_atomic_context(domain& dom, memory_region staging_mr) noexcept
    : domain_(&dom),
      runs_provider_(detail::runs_provider(dom.info().provider_name(), provider_traits<P>::name)),
      staging_mr_(std::move(staging_mr)) {}

template <provider_tag P>
template <class Op>
auto provider_atomic_context<P>::execute(const Op& op) noexcept -> void_result {
    if (op.ep == nullptr || !domain_->valid() || op.ep->domain_native() != domain_->native())
        return make_unexpected(errc::invalid_argument);
    if (!runs_provider_) return make_unexpected(errc::not_supported);
    std::span<std::byte> area{slots_};
    const memory_region* mr = nullptr;
    if (staging_mr_) {
        mr = &*staging_mr_;
        area = staging_mr_->address() == nullptr ? std::span<std::byte>{}
                                                 : std::span<std::byte>{staging_mr_->address(), staging_mr_->size()};
    }
    const std::size_t slots = area.size() / atomic_staging_slot;
    if (slots == 0) return make_unexpected(errc::invalid_argument);
    const std::size_t slot = next_slot_ % slots;
    auto r = detail::submit_staged<typename Op::value_type>(
        op, area.subspan(slot * atomic_staging_slot, atomic_staging_slot), mr);
    if (r) next_slot_ = slot + 1;  // a refused submission leaves its slot free
    return r;
}

}  // namespace loom
