// loom/fabric_query.hpp — discovery requirements stated as types: capability descriptors,
// combined at compile time into the hints a query sends to fi_getinfo.
#pragma once

#include <loom/fabric_info.hpp>
#include <loom/flags.hpp>

#include <concepts>
#include <functional>
#include <optional>
#include <type_traits>
#include <vector>

namespace loom {

/// A capability descriptor: the capabilities an application needs and, optionally, the
/// endpoint type they need (endpoint_types::unspecified: any). Applications define their own
/// with the same two members to ask for only the directions they use.
template <class D>
concept capability_descriptor = requires {
    { D::caps } -> std::convertible_to<capability>;
    { D::ep_type } -> std::convertible_to<endpoint_types>;
};

/// Tagged and untagged messages on reliable-datagram endpoints.
struct rdm_tagged_messaging {
    static constexpr capability caps = capability::msg | capability::tagged;  ///< FI_MSG and FI_TAGGED
    static constexpr endpoint_types ep_type = endpoint_types::rdm;            ///< reliable datagram
};
/// RMA writes, initiated and received.
struct rdma_write_ops {
    /// FI_RMA with both write directions.
    static constexpr capability caps = capability::rma | capability::write | capability::remote_write;
    static constexpr endpoint_types ep_type = endpoint_types::unspecified;  ///< any type
};
/// RMA reads, initiated and served.
struct rdma_read_ops {
    /// FI_RMA with both read directions.
    static constexpr capability caps = capability::rma | capability::read | capability::remote_read;
    static constexpr endpoint_types ep_type = endpoint_types::unspecified;  ///< any type
};
/// Atomic operations in every direction (whether an operation, datatype and count are
/// supported is still asked with atomic::is_valid and its kin).
struct atomic_ops {
    static constexpr capability caps = capability::atomic;                  ///< FI_ATOMIC
    static constexpr endpoint_types ep_type = endpoint_types::unspecified;  ///< any type
};
/// RMA to and from device memory (FI_HMEM): the provider registers GPU buffers itself.
struct gpu_direct_rdma {
    static constexpr capability caps = capability::rma | capability::hmem;  ///< FI_RMA and FI_HMEM
    static constexpr endpoint_types ep_type = endpoint_types::unspecified;  ///< any type
};

namespace detail {
/// The endpoint type the descriptors name (unspecified when none names one).
template <capability_descriptor... Ds>
consteval auto named_endpoint_type() -> endpoint_types {
    endpoint_types found = endpoint_types::unspecified;
    for (const endpoint_types t : {endpoint_types::unspecified, Ds::ep_type...})
        if (t != endpoint_types::unspecified) found = t;
    return found;
}
/// True when no two descriptors name different endpoint types.
template <capability_descriptor... Ds>
consteval auto endpoint_types_agree() -> bool {
    const endpoint_types named = named_endpoint_type<Ds...>();
    for (const endpoint_types t : {endpoint_types::unspecified, Ds::ep_type...})
        if (t != endpoint_types::unspecified && t != named) return false;
    return true;
}
}  // namespace detail

/// A query for providers that meet every descriptor's requirements.
template <capability_descriptor... Descriptors>
class fabric_query {
    static_assert(sizeof...(Descriptors) > 0, "fabric_query needs at least one capability descriptor");
    static_assert(detail::endpoint_types_agree<Descriptors...>(),
                  "the capability descriptors name different endpoint types");

public:
    /// The endpoint type the descriptors name (unspecified when none names one).
    [[nodiscard]] static constexpr auto get_endpoint_type() noexcept -> endpoint_types {
        return detail::named_endpoint_type<Descriptors...>();
    }
    /// Every capability the descriptors require.
    [[nodiscard]] static constexpr auto get_required_caps() noexcept -> capability {
        return (capability::none | ... | Descriptors::caps);
    }
    /// The hints query() sends; add a provider name, progress or threading to them and call
    /// query_all for what the descriptors do not say.
    [[nodiscard]] static constexpr auto hints() noexcept -> fabric_hints {
        return {.capabilities = get_required_caps(), .ep_type = get_endpoint_type()};
    }
    /// Every matching provider entry, in libfabric's preference order; errc::no_data when none.
    [[nodiscard]] static auto query(std::pmr::memory_resource* mr = nullptr) -> result<provider_range> {
        return query_all(hints(), mr);
    }
    /// The preferred match, or nullopt when no provider matches (other failures are errors).
    [[nodiscard]] static auto query_first(std::pmr::memory_resource* mr = nullptr)
        -> result<std::optional<fabric_info>> {
        auto all = query(mr);
        if (!all) {
            if (all.error() == make_error_code(errc::no_data)) return std::optional<fabric_info>{};
            return std::unexpected(all.error());
        }
        return all->first();
    }
};

/// fabric_query<Descriptors...>::query().
template <capability_descriptor... Descriptors>
[[nodiscard]] auto query_providers() -> result<provider_range> {
    return fabric_query<Descriptors...>::query();
}

/// The matches for which `keep(info)` is true, in preference order (possibly none); the
/// predicate states a policy the hints cannot, e.g. a negotiated progress mode.
template <capability_descriptor... Descriptors, std::predicate<const fabric_info&> Predicate>
[[nodiscard]] auto query_providers(Predicate&& keep) -> result<std::vector<fabric_info>> {
    auto all = fabric_query<Descriptors...>::query();
    std::vector<fabric_info> kept;
    if (!all) {
        if (all.error() == make_error_code(errc::no_data)) return kept;
        return std::unexpected(all.error());
    }
    for (fabric_info info : *all)
        if (std::invoke(keep, std::as_const(info))) kept.push_back(std::move(info));
    return kept;
}

}  // namespace loom
