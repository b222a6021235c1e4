// loom/contract_endpoint.hpp — endpoints checked once against a capability profile: the
// factory refuses a configuration that breaks the profile, and the operations then skip the
// checks the profile guarantees.
#pragma once

#include <loom/detail/endpoint_contract.hpp>
#include <loom/endpoint.hpp>
#include <loom/provider_traits.hpp>

#include <cstddef>
#include <span>
#include <utility>

namespace loom {

/// Selects reliable datagram (RDM) endpoints for a profile.
struct rdm_endpoint_tag {
    static constexpr endpoint_types type = endpoint_types::rdm;  ///< endpoint_types::rdm
};
/// Selects connected (msg) endpoints for a profile.
struct msg_endpoint_tag {
    static constexpr endpoint_types type = endpoint_types::msg;  ///< endpoint_types::msg
};
/// Selects unreliable datagram endpoints for a profile.
struct dgram_endpoint_tag {
    static constexpr endpoint_types type = endpoint_types::dgram;  ///< endpoint_types::dgram
};

/// A message endpoint of type EndpointTag whose injects carry up to InjectBound bytes (0: no
/// inject). Requires FI_MSG; FI_TAGGED is used when offered. Accepts no mode obligations. A
/// custom profile is any type with the same members; it may add `threading`,
/// `control_progress` and `data_progress` (checked against the opened domain) and declare
/// `supported_modes` it satisfies for every operation.
template <class EndpointTag, std::size_t InjectBound>
struct message_endpoint_profile {
    static constexpr endpoint_types ep_type = EndpointTag::type;     ///< the endpoint type required
    static constexpr capability required_caps = capability::msg;     ///< capabilities the configuration must offer
    static constexpr capability optional_caps = capability::tagged;  ///< capabilities used when offered
    static constexpr mode_flags supported_modes = mode_flags::none;  ///< mode obligations the program meets; none
    /// Largest inject the contract guarantees (0: no inject)
    static constexpr std::size_t inject_bound = InjectBound;
    /// As a capability descriptor: fabric_query<Profile> finds configurations to try.
    static constexpr capability caps = required_caps;
};

/// What contract_endpoint needs of a profile.
template <class P>
concept endpoint_profile = requires {
    { P::ep_type } -> std::convertible_to<endpoint_types>;
    { P::required_caps } -> std::convertible_to<capability>;
    { P::optional_caps } -> std::convertible_to<capability>;
    { P::supported_modes } -> std::convertible_to<mode_flags>;
    { P::inject_bound } -> std::convertible_to<std::size_t>;
};

/// An endpoint whose configuration was checked against Profile at creation and is checked
/// again at every bind and at enable. Move-only; a failed revalidation refuses every later
/// submission (bad_state).
template <endpoint_profile Profile>
class contract_endpoint {
public:
    /// The profile the endpoint was checked against.
    using profile = Profile;
    /// Largest inject the contract guarantees.
    static constexpr std::size_t inject_bound = Profile::inject_bound;

    contract_endpoint() = default;

    /// not_supported when `info` or the domain's attributes break the profile (endpoint type,
    /// required capabilities, mode obligations, inject bound, threading, progress) — before
    /// any endpoint is opened; otherwise what endpoint::create reports.
    [[nodiscard]] static auto create(domain& dom, const fabric_info& info, std::pmr::memory_resource* mr = nullptr)
        -> result<contract_endpoint> {
        if (!dom.valid() || !info.valid()) return make_unexpected(errc::invalid_argument);
        if (const auto ec = detail::check_profile(info, dom.info(), requirements())) return std::unexpected(ec);
        auto ep = endpoint::create(dom, info, mr);
        if (!ep) return std::unexpected(ep.error());
        contract_endpoint out(std::move(*ep));
        if (const auto ec = out.revalidate()) return std::unexpected(ec);
        return out;
    }

    // ------------------------------------------------------------ set-up (each revalidates)
    /// endpoint::bind_cq, then the contract checked again.
    auto bind_cq(completion_queue& cq, cq_bind flags) noexcept -> void_result {
        return checked(ep_.bind_cq(cq, flags));
    }
    /// endpoint::bind_av, then the contract checked again.
    auto bind_av(address_vector& av) noexcept -> void_result { return checked(ep_.bind_av(av)); }
    /// endpoint::bind_counter, then the contract checked again.
    auto bind_counter(counter& c, counter_bind flags) noexcept -> void_result {
        return checked(ep_.bind_counter(c, flags));
    }
    /// endpoint::enable, then the contract checked again.
    auto enable() noexcept -> void_result { return checked(ep_.enable()); }

    // ------------------------------------------------------------ inject within the bound
    /// A fixed span: its size is checked at compile time, and the contract guarantees the
    /// capability and the bound, so only the state and the peer are checked here.
    template <class T, std::size_t N>
        requires(detail::byte_like<T> && N != std::dynamic_extent && N <= inject_bound && inject_bound > 0)
    auto inject(std::span<T, N> data, fabric_addr dest = fabric_addrs::unspecified) noexcept -> void_result {
        if (const int e = ready_for(dest)) [[unlikely]]
            return endpoint::fail(e);
        return check_native(::fi_inject(ep_.native(), data.data(), N, dest.get()));
    }
    /// A fixed span larger than the bound does not compile.
    template <class T, std::size_t N>
        requires(detail::byte_like<T> && N != std::dynamic_extent && (N > inject_bound || inject_bound == 0))
    auto inject(std::span<T, N> data, fabric_addr dest = fabric_addrs::unspecified) noexcept -> void_result = delete;
    /// A dynamic span: invalid_argument above the bound, before the provider is asked.
    auto inject(std::span<const std::byte> data, fabric_addr dest = fabric_addrs::unspecified) noexcept -> void_result
        requires(inject_bound > 0)
    {
        if (data.size() > inject_bound) [[unlikely]]
            return make_unexpected(errc::invalid_argument);
        if (const int e = ready_for(dest)) [[unlikely]]
            return endpoint::fail(e);
        return check_native(::fi_inject(ep_.native(), data.data(), data.size(), dest.get()));
    }

    // ------------------------------------------------------------ the rest, as endpoint has them
    /// endpoint::send; bad_state once the contract is broken.
    template <class... A>
    auto send(A&&... a) noexcept -> void_result
        requires requires(endpoint& e) { e.send(std::forward<A>(a)...); }
    {
        if (broken_) [[unlikely]]
            return make_unexpected(errc::bad_state);
        return ep_.send(std::forward<A>(a)...);
    }
    /// endpoint::recv; bad_state once the contract is broken.
    template <class... A>
    auto recv(A&&... a) noexcept -> void_result
        requires requires(endpoint& e) { e.recv(std::forward<A>(a)...); }
    {
        if (broken_) [[unlikely]]
            return make_unexpected(errc::bad_state);
        return ep_.recv(std::forward<A>(a)...);
    }
    /// endpoint::tagged_send; bad_state once the contract is broken.
    template <class... A>
    auto tagged_send(A&&... a) noexcept -> void_result
        requires requires(endpoint& e) { e.tagged_send(std::forward<A>(a)...); }
    {
        if (broken_) [[unlikely]]
            return make_unexpected(errc::bad_state);
        return ep_.tagged_send(std::forward<A>(a)...);
    }
    /// endpoint::tagged_recv; bad_state once the contract is broken.
    template <class... A>
    auto tagged_recv(A&&... a) noexcept -> void_result
        requires requires(endpoint& e) { e.tagged_recv(std::forward<A>(a)...); }
    {
        if (broken_) [[unlikely]]
            return make_unexpected(errc::bad_state);
        return ep_.tagged_recv(std::forward<A>(a)...);
    }
    /// endpoint::cancel.
    auto cancel(context_ptr<void> ctx) noexcept -> void_result { return ep_.cancel(ctx); }
    /// endpoint::name.
    [[nodiscard]] auto name() const -> result<address> { return ep_.name(); }

    // ------------------------------------------------------------ the generic API
    /// A view of the endpoint (queries; no submission).
    [[nodiscard]] auto underlying() const noexcept -> const endpoint& { return ep_; }
    /// Back to the generic API; this object is left empty.
    [[nodiscard]] auto release() && noexcept -> endpoint {
        broken_ = true;
        return std::move(ep_);
    }
    /// True while the endpoint is open and the contract holds.
    [[nodiscard]] auto valid() const noexcept -> bool { return ep_.valid() && !broken_; }

    /// The profile as the checks see it.
    [[nodiscard]] static constexpr auto requirements() noexcept -> detail::profile_requirements {
        return detail::requirements_of<Profile>();
    }

private:
    explicit contract_endpoint(endpoint ep) noexcept : ep_(std::move(ep)) {}

    /// The bound against the endpoint's present inject size; a failure ends submissions.
    [[nodiscard]] auto revalidate() noexcept -> std::error_code {
        const std::error_code ec = detail::check_inject_bound(ep_, inject_bound);
        if (ec) broken_ = true;
        return ec;
    }
    auto checked(void_result r) noexcept -> void_result {
        if (!r) return r;
        if (const auto ec = revalidate()) return std::unexpected(ec);
        return {};
    }
    [[nodiscard]] auto ready_for(fabric_addr dest) const noexcept -> int {
        if (broken_ || !ep_.enabled()) return FI_EOPBADSTATE;
        if constexpr (Profile::ep_type != endpoint_types::msg) {
            if (dest == fabric_addrs::unspecified) return FI_EINVAL;  // connectionless: a peer is needed
        }
        return 0;
    }

    endpoint ep_;
    bool broken_{false};
};

/// The convenience spelling: a provider tag supplies only the default inject bound.
template <class Provider, std::size_t Bound = provider_traits<Provider>::max_inject_size,
          class EndpointTag = rdm_endpoint_tag>
using provider_endpoint = contract_endpoint<message_endpoint_profile<EndpointTag, Bound>>;
/// A verbs RDM endpoint with verbs' default inject bound.
using verbs_endpoint = provider_endpoint<provider::verbs_tag>;
/// An efa RDM endpoint with efa's default inject bound.
using efa_endpoint = provider_endpoint<provider::efa_tag>;
/// A tcp RDM endpoint with tcp's default inject bound.
using tcp_endpoint = provider_endpoint<provider::tcp_tag>;
/// A shm RDM endpoint with shm's default inject bound.
using shm_endpoint = provider_endpoint<provider::shm_tag>;
/// A cxi (Slingshot) RDM endpoint with cxi's default inject bound.
using slingshot_endpoint = provider_endpoint<provider::slingshot_tag>;

}  // namespace loom
