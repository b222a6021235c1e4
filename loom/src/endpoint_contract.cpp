// The checks of contract_endpoint: a profile against a configuration and an open endpoint.
#include "loom/detail/endpoint_contract.hpp"

#include "loom/endpoint.hpp"

namespace loom::detail {
namespace {

auto refused() -> std::error_code { return make_error_code(errc::not_supported); }

auto progress_meets(progress_mode required, progress_mode offered) -> bool {
    return required == progress_mode::unspecified || required == offered;
}

}  // namespace

auto check_profile(const fabric_info& info, const fabric_info& domain_info, const profile_requirements& r) noexcept
    -> std::error_code {
    if (r.ep_type != endpoint_types::unspecified && info.ep_type() != r.ep_type) return refused();
    if (!info.capabilities().has(r.required_caps)) return refused();
    if ((info.mode() & ~r.supported_modes) != mode_flags::none) return refused();
    const auto tx = info.get_tx_attr();
    if (!tx) return make_error_code(errc::invalid_argument);
    if (tx->inject_size < r.inject_bound) return refused();
    const auto dom = domain_info.get_domain_attr();
    if (!dom) return make_error_code(errc::invalid_argument);
    if (r.threading != threading_mode::unspecified && dom->threading != r.threading) return refused();
    if (!progress_meets(r.control_progress, dom->control_progress)) return refused();
    if (!progress_meets(r.data_progress, dom->data_progress)) return refused();
    return {};
}

auto check_inject_bound(const endpoint& ep, std::size_t bound) noexcept -> std::error_code {
    if (bound == 0) return {};
    std::size_t size = 0;
    std::size_t length = sizeof(size);
    const auto asked = get_endpoint_option(ep, ep_opt::level_endpoint, ep_opt::inject_msg_size, &size, &length);
    // Not answered (an older provider, or one that may not be asked before enable): the
    // creation attribute stands.
    if (!asked) size = ep.inject_size();
    return size < bound ? refused() : std::error_code{};
}

}  // namespace loom::detail
