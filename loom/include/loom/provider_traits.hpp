// loom/provider_traits.hpp — what each libfabric base provider offers by default, known at
// compile time: for static dispatch and for defaults chosen before discovery.
//
// These are discovery defaults (libfabric 2.7 base providers; EFA's ordinary RDM profile), not
// a contract: layering (ofi_rxm), hints, environment variables and the device change what an
// opened domain returns, and the returned attributes govern. A checked endpoint
// (contract_endpoint) states a contract and checks it against the opened configuration.
#pragma once

#include <loom/flags.hpp>

#include <concepts>
#include <cstddef>
#include <string_view>

namespace loom {

/// Tags naming libfabric providers, for provider_traits.
namespace provider {
/// Any provider: behaviour follows the negotiated attributes only; the traits assume nothing.
struct generic_tag {};
struct verbs_tag {};      ///< InfiniBand / RoCE (verbs; RDM through ofi_rxm)
struct efa_tag {};        ///< AWS Elastic Fabric Adapter, RDM profile
struct tcp_tag {};        ///< native tcp (libfabric 2.x)
struct shm_tag {};        ///< shared memory between processes of one host
struct slingshot_tag {};  ///< HPE Slingshot (the cxi provider)
struct ucx_tag {};        ///< libfabric's ucx provider
}  // namespace provider

/// The traits of a provider tag. Only the tags above have them; the primary template is left
/// undefined so that an unknown tag fails to compile rather than assuming.
template <class ProviderTag>
struct provider_traits;

namespace detail {
/// The members every specialization has, with the generic (assume nothing) values.
struct provider_traits_base {
    static constexpr std::string_view name{};  ///< libfabric's provider name; empty: any
    /// Atomics carried out by the NIC.
    static constexpr bool supports_native_atomics = false;
    /// Atomics the provider carries out in software at the target (FI_ATOMIC is offered, the
    /// atomicity comes from the target's progress).
    static constexpr bool uses_staged_atomics = false;
    static constexpr progress_mode control_progress = progress_mode::manual;
    static constexpr progress_mode data_progress = progress_mode::manual;
    /// Data (and control) progress without the application polling.
    static constexpr bool supports_auto_progress = false;
    static constexpr std::size_t max_inject_size = 0;
    static constexpr bool supports_inject = false;
    /// The memory-registration modes the provider asks of an application by default.
    static constexpr mr_mode_flags mr_mode =
        mr_mode_flags::local | mr_mode_flags::virt_addr | mr_mode_flags::allocated | mr_mode_flags::prov_key;
};
}  // namespace detail

/// Any provider: the generic values of every member.
template <>
struct provider_traits<provider::generic_tag> : detail::provider_traits_base {};

/// verbs: NIC atomics, automatic progress, FI_MR_BASIC registration.
template <>
struct provider_traits<provider::verbs_tag> : detail::provider_traits_base {
    static constexpr std::string_view name{"verbs"};       ///< libfabric's provider name
    static constexpr bool supports_native_atomics = true;  ///< NIC atomics (IB: count 1, 64-bit)
    /// The provider progresses connections itself.
    static constexpr progress_mode control_progress = progress_mode::auto_progress;
    /// The provider progresses data transfers itself.
    static constexpr progress_mode data_progress = progress_mode::auto_progress;
    static constexpr bool supports_auto_progress = true;  ///< no polling needed for progress
    /// Default inject bound: the device's max_inline_data decides; 64 bytes is the common default.
    static constexpr std::size_t max_inject_size = 64;
    static constexpr bool supports_inject = true;  ///< fi_inject and FI_INJECT are offered
    /// Default registration modes; FI_MR_BASIC stands for virt_addr | allocated | prov_key.
    static constexpr mr_mode_flags mr_mode = mr_mode_flags::basic | mr_mode_flags::local | mr_mode_flags::prov_key;
};

/// efa (RDM profile): atomics emulated by its RDM protocol, manual progress.
template <>
struct provider_traits<provider::efa_tag> : detail::provider_traits_base {
    static constexpr std::string_view name{"efa"};     ///< libfabric's provider name
    static constexpr bool uses_staged_atomics = true;  ///< atomics emulated by the RDM protocol
    /// Default inject bound: the port's message size less the largest header, at most shm's 4 KiB.
    static constexpr std::size_t max_inject_size = 4096;
    static constexpr bool supports_inject = true;  ///< fi_inject and FI_INJECT are offered
    /// Default registration modes.
    static constexpr mr_mode_flags mr_mode =
        mr_mode_flags::virt_addr | mr_mode_flags::allocated | mr_mode_flags::prov_key;
};

/// tcp: automatic progress, no registration requirements.
template <>
struct provider_traits<provider::tcp_tag> : detail::provider_traits_base {
    static constexpr std::string_view name{"tcp"};  ///< libfabric's provider name
    /// The provider progresses connections itself.
    static constexpr progress_mode control_progress = progress_mode::auto_progress;
    /// The provider progresses data transfers itself.
    static constexpr progress_mode data_progress = progress_mode::auto_progress;
    static constexpr bool supports_auto_progress = true;  ///< no polling needed for progress
    static constexpr std::size_t max_inject_size = 128;   ///< default inject bound (FI_TCP_MAX_INJECT changes it)
    static constexpr bool supports_inject = true;         ///< fi_inject and FI_INJECT are offered
    /// Registration is not required.
    static constexpr mr_mode_flags mr_mode = mr_mode_flags::none;
};

/// shm: atomics applied by the target's progress, manual data progress.
template <>
struct provider_traits<provider::shm_tag> : detail::provider_traits_base {
    static constexpr std::string_view name{"shm"};     ///< libfabric's provider name
    static constexpr bool uses_staged_atomics = true;  ///< atomics applied by the target's progress
    /// The provider progresses connections itself.
    static constexpr progress_mode control_progress = progress_mode::auto_progress;
    /// Data moves only when the application polls.
    static constexpr progress_mode data_progress = progress_mode::manual;
    static constexpr std::size_t max_inject_size = 4096;  ///< default inject bound
    static constexpr bool supports_inject = true;         ///< fi_inject and FI_INJECT are offered
    /// Default registration modes.
    static constexpr mr_mode_flags mr_mode = mr_mode_flags::virt_addr;
};

/// cxi (HPE Slingshot): NIC atomics, manual progress.
template <>
struct provider_traits<provider::slingshot_tag> : detail::provider_traits_base {
    static constexpr std::string_view name{"cxi"};         ///< libfabric's provider name
    static constexpr bool supports_native_atomics = true;  ///< NIC atomics (Cassini AMOs)
    static constexpr std::size_t max_inject_size = 192;    ///< default inject bound (an unrestricted IDC payload)
    static constexpr bool supports_inject = true;          ///< fi_inject and FI_INJECT are offered
    /// Default registration modes.
    static constexpr mr_mode_flags mr_mode =
        mr_mode_flags::prov_key | mr_mode_flags::allocated | mr_mode_flags::endpoint;
};

/// ucx: manual data progress.
template <>
struct provider_traits<provider::ucx_tag> : detail::provider_traits_base {
    static constexpr std::string_view name{"ucx"};  ///< libfabric's provider name
    /// The provider progresses connections itself.
    static constexpr progress_mode control_progress = progress_mode::auto_progress;
    /// Data moves only when the application polls.
    static constexpr progress_mode data_progress = progress_mode::manual;
    static constexpr std::size_t max_inject_size = 1024;  ///< default inject bound (FI_UCX_INJECT_LIMIT changes it)
    static constexpr bool supports_inject = true;         ///< fi_inject and FI_INJECT are offered
    /// Default registration modes.
    static constexpr mr_mode_flags mr_mode =
        mr_mode_flags::virt_addr | mr_mode_flags::allocated | mr_mode_flags::prov_key | mr_mode_flags::raw;
};

/// A type with provider traits.
template <class T>
concept provider_tag = requires {
    { provider_traits<T>::name } -> std::convertible_to<std::string_view>;
    { provider_traits<T>::max_inject_size } -> std::convertible_to<std::size_t>;
};

/// P's NIC carries out atomics.
template <class P>
concept native_atomic_provider = provider_tag<P> && provider_traits<P>::supports_native_atomics;
/// P carries out atomics in software at the target.
template <class P>
concept staged_atomic_provider = provider_tag<P> && provider_traits<P>::uses_staged_atomics;
/// P offers inject with a non-zero bound.
template <class P>
concept inject_capable_provider =
    provider_tag<P> && provider_traits<P>::supports_inject && (provider_traits<P>::max_inject_size > 0);
/// P progresses without the application polling.
template <class P>
concept auto_progress_provider = provider_tag<P> && provider_traits<P>::supports_auto_progress;
/// The application must poll for control or data progress.
template <class P>
concept manual_progress_provider = provider_tag<P> && (provider_traits<P>::control_progress == progress_mode::manual ||
                                                       provider_traits<P>::data_progress == progress_mode::manual);

/// True when a message of `size` bytes fits the provider's default inject bound.
template <provider_tag P>
[[nodiscard]] constexpr auto can_inject(std::size_t size) noexcept -> bool {
    return provider_traits<P>::supports_inject && size <= provider_traits<P>::max_inject_size;
}
/// The registration modes P asks for by default.
template <provider_tag P>
[[nodiscard]] constexpr auto get_mr_mode() noexcept -> mr_mode_flags {
    return provider_traits<P>::mr_mode;
}
/// True when the application must poll P for control or data progress.
template <provider_tag P>
[[nodiscard]] constexpr auto requires_manual_progress() noexcept -> bool {
    return manual_progress_provider<P>;
}

}  // namespace loom
