// loom/detail/endpoint_contract.hpp — the checks behind contract_endpoint, written once for
// every profile.
#pragma once

#include <loom/fabric_info.hpp>
#include <loom/flags.hpp>

#include <concepts>
#include <cstddef>
#include <system_error>
#include <type_traits>

namespace loom {
class endpoint;
}

namespace loom::detail {

template <class T>
concept byte_like = std::same_as<std::remove_const_t<T>, std::byte>;

/// A profile's requirements as values (unspecified: not required).
struct profile_requirements {
    endpoint_types ep_type{endpoint_types::unspecified};
    capability required_caps{};
    mode_flags supported_modes{};
    std::size_t inject_bound{0};
    threading_mode threading{threading_mode::unspecified};
    progress_mode control_progress{progress_mode::unspecified};
    progress_mode data_progress{progress_mode::unspecified};
};

template <class P>
consteval auto requirements_of() -> profile_requirements {
    profile_requirements r{.ep_type = P::ep_type,
                           .required_caps = P::required_caps,
                           .supported_modes = P::supported_modes,
                           .inject_bound = P::inject_bound};
    if constexpr (requires { P::threading; }) r.threading = P::threading;
    if constexpr (requires { P::control_progress; }) r.control_progress = P::control_progress;
    if constexpr (requires { P::data_progress; }) r.data_progress = P::data_progress;
    return r;
}

/// not_supported when `info` (the endpoint's configuration) or `domain_info` (what the domain
/// was opened with) breaks `r`; no error otherwise.
[[nodiscard]] auto check_profile(const fabric_info& info, const fabric_info& domain_info,
                                 const profile_requirements& r) noexcept -> std::error_code;

/// not_supported when the endpoint's inject size for messages is below `bound`: the value of
/// FI_OPT_INJECT_MSG_SIZE where the provider answers it (and may be asked in the endpoint's
/// state), the creation attribute otherwise. A zero bound needs nothing.
[[nodiscard]] auto check_inject_bound(const endpoint& ep, std::size_t bound) noexcept -> std::error_code;

}  // namespace loom::detail
