// loom/plugins/rail.hpp — one NIC's objects in an engine: fabric, domain, queue, AV, endpoint
// and registration caches.
#pragma once

#include <loom/plugins/device_registry.hpp>

#include <loom/address.hpp>
#include <loom/address_vector.hpp>
#include <loom/completion_queue.hpp>
#include <loom/domain.hpp>
#include <loom/endpoint.hpp>
#include <loom/fabric.hpp>
#include <loom/mr_cache.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace loom::plugins {

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
    /// Rail 0 only (LOOM_LIVENESS_ENDPOINT): the AV of the liveness endpoint. Its own: ofi_rxm
    /// crashes inserting into an AV two of its endpoints share.
    address_vector live_av{};
    /// Rail 0 only: the endpoint for pings and pongs, on the same queue, so that they have a
    /// provider connection of their own; closed when absent.
    endpoint live_ep{};
    address live_self{};                                           ///< its address
    std::map<std::string, fabric_addr, std::less<>> live_peers{};  ///< raw address bytes → live_av handle
    bool virt_addr{true};                                     ///< remote addresses are virtual addresses (else offsets)
    std::size_t max_write{0};                                 ///< largest single RMA write
    std::map<std::string, fabric_addr, std::less<>> peers{};  ///< raw address bytes → AV handle
    std::uint64_t writes{0};                                  ///< RMA writes issued on it
    std::uint64_t one_sided{0};                               ///< foreign operations submitted on this rail
};

}  // namespace loom::plugins
