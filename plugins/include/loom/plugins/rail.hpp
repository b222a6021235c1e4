// loom/plugins/rail.hpp — one NIC's objects in an engine: fabric, domain, queue, AV, endpoint
// and registration caches.
#pragma once

#include <loom/plugins/config.hpp>
#include <loom/plugins/device_registry.hpp>

#include <loom/address.hpp>
#include <loom/address_vector.hpp>
#include <loom/completion_queue.hpp>
#include <loom/domain.hpp>
#include <loom/endpoint.hpp>
#include <loom/fabric.hpp>
#include <loom/fabric_info.hpp>
#include <loom/mr_cache.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace loom::plugins {

/// A provider's fabric, its domain and a completion queue on it.
struct queue_domain {
    fabric fab{};           ///< the fabric
    domain dom{};           ///< its domain
    completion_queue cq{};  ///< the queue
};
/// An endpoint with an address vector of its own, bound to a queue and enabled.
struct bound_endpoint {
    address_vector av{};  ///< its AV
    endpoint ep{};        ///< the endpoint
    address self{};       ///< its address
};
/// The endpoint for liveness pings and pongs (LOOM_LIVENESS_ENDPOINT), so that they have a
/// provider connection of their own instead of waiting behind the data. It sits on the data's
/// domain and completion queue, or, where the provider facts name another provider
/// (`liveness_provider`), on a fabric, domain and queue of that provider. Members close in
/// reverse order: the endpoint before its AV, both before the queue.
struct liveness_link {
    queue_domain own{};  ///< another provider's fabric, domain and queue (none on the data's domain)
    /// The endpoint, with an AV of its own even on the data's domain: ofi_rxm crashes inserting
    /// into an AV two of its endpoints share. Closed when there is none.
    bound_endpoint end{};
    std::map<std::string, fabric_addr, std::less<>> peers{};  ///< raw address bytes → end.av handle

    /// There is an endpoint.
    [[nodiscard]] auto is_open() const noexcept -> bool { return end.ep.valid(); }
    /// It has a completion queue of its own, which the data's polling does not read.
    [[nodiscard]] auto has_own_queue() const noexcept -> bool { return own.cq.valid(); }
};

/// The fabric and domain `info` describes, with a tagged completion queue of `cq_size` entries.
[[nodiscard]] auto open_queue_domain(const fabric_info& info, std::size_t cq_size) -> result<queue_domain>;
/// An endpoint on `dom` as `info` describes it, with a new AV, its sends and receives completing
/// on `cq`.
[[nodiscard]] auto open_bound_endpoint(domain& dom, completion_queue& cq, const fabric_info& info)
    -> result<bound_endpoint>;

/// A link on `dom`, bound to `cq` (the data's own).
[[nodiscard]] auto open_liveness_link(domain& dom, completion_queue& cq, const nic& n) -> result<liveness_link>;
/// A link on `provider`'s domain of the same name as `n`'s (the interface), with its own queue.
[[nodiscard]] auto open_liveness_link(std::string_view provider, const nic& n) -> result<liveness_link>;

/// An additional NIC of a virtual device: its own endpoint, queue, AV and cache.
struct rail {
    nic n;                                  ///< the NIC
    fabric fab{};                           ///< its fabric
    domain dom{};                           ///< its domain
    completion_queue cq{};                  ///< its completion queue
    address_vector av{};                    ///< its address vector
    std::unique_ptr<mr_cache> cache{};      ///< host registrations
    std::unique_ptr<mr_cache> dev_cache{};  ///< device memory and DMA-BUFs: nothing kept once released
    endpoint ep{};                          ///< its endpoint
    address self{};                         ///< its address
    liveness_link live{};                   ///< rail 0 only, where LOOM_LIVENESS_ENDPOINT opens one
    bool virt_addr{true};                   ///< remote addresses are virtual addresses (else offsets)
    std::size_t max_write{0};               ///< largest single RMA write
    std::map<std::string, fabric_addr, std::less<>> peers{};  ///< raw address bytes → AV handle
    std::uint64_t writes{0};                                  ///< RMA writes issued on it
    std::uint64_t one_sided{0};                               ///< foreign operations submitted on this rail
};

/// The rail of NIC `n`: its objects and registration caches (cfg: queue size, idle registrations kept).
[[nodiscard]] auto open_rail(const nic& n, const config& cfg) -> result<std::unique_ptr<rail>>;

}  // namespace loom::plugins
