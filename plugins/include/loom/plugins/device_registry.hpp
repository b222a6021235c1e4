// loom/plugins/device_registry.hpp — the devices a host library sees: NICs of the chosen
// provider, discovered once and ranked (provider_facts), and virtual devices that fuse several
// NICs into rails. Each device's engine is opened on first use and kept until close_engines().
#pragma once

#include <loom/plugins/config.hpp>
#include <loom/plugins/topology.hpp>

#include <loom/error.hpp>
#include <loom/fabric_info.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace loom::plugins {

class engine;

/// One NIC: a provider's domain (interface).
struct nic {
    fabric_info info;             ///< the provider's discovery result for the domain
    std::string name;             ///< domain name (interface), or the provider for shm-like ones
    std::string provider;         ///< the provider's name
    nic_topology topo;            ///< where the NIC sits (PCI path, NUMA node)
    bool rma{false};              ///< RMA write + remote CQ data: the rendezvous path is available
    std::size_t eager_max{0};     ///< largest message sent eagerly (LOOM_EAGER_MAX, or the provider's default)
    std::uint64_t guid{0};        ///< identifier: a hash of the provider and domain names, and the NIC's index
    std::size_t max_msg_size{0};  ///< largest message the provider takes
    int speed_mbps{0};            ///< the interface's, or what provider_facts assumes
};

/// The RDM entries `hints` selects, asked for as an engine uses them: with FI_THREAD_DOMAIN and
/// FI_PROGRESS_CONTROL_UNIFIED (every call comes under the engine lock), and again without
/// FI_THREAD_DOMAIN from a provider that cannot offer it. Sets hints' endpoint type, threading
/// and control progress.
[[nodiscard]] auto query_for_engine(fabric_hints hints) -> result<provider_range>;

/// The NICs of the best-ranked provider present (or of cfg.provider), filtered by cfg.iface.
/// An empty list when nothing usable is found.
[[nodiscard]] auto discover_nics(const config& cfg) -> result<std::vector<nic>>;

/// Whether received data can be read back on this NIC (the flush): RMA, and an AV that takes
/// the endpoint's own address.
[[nodiscard]] auto supports_flush_reads(const nic& n) noexcept -> bool;

/// Device memory a NIC can take, given the GPU runtime loaded in this process.
struct device_memory_support {
    bool cuda{false};    ///< CUDA device pointers (FI_HMEM, a driver with devices, flush reads)
    bool dmabuf{false};  ///< DMA-BUF registrations reaching hardware (every GPU exports them)
};
/// The device memory `n` can take in this process.
[[nodiscard]] auto device_memory_support_of(const nic& n) -> device_memory_support;

/// The process's devices: the NICs discovered, and virtual devices fused from them, each with its engine opened on
/// first use.
class device_registry {
public:
    /// Discovers the NICs cfg selects.
    [[nodiscard]] static auto discover(const config& cfg) -> result<device_registry>;
    device_registry() noexcept;
    /// Moves the devices and their engines.
    device_registry(device_registry&&) noexcept;
    /// Moves the devices and their engines.
    auto operator=(device_registry&&) noexcept -> device_registry&;
    ~device_registry();

    /// Physical devices (NICs); virtual devices follow them, numbered from nic_count().
    [[nodiscard]] auto nic_count() const noexcept -> int { return static_cast<int>(nics_.size()); }
    /// Devices: the NICs, then the virtual devices.
    [[nodiscard]] auto device_count() const noexcept -> int { return nic_count() + static_cast<int>(virtuals_.size()); }
    /// True for a device number in range.
    [[nodiscard]] auto contains(int dev) const noexcept -> bool { return dev >= 0 && dev < device_count(); }
    /// True for a virtual device.
    [[nodiscard]] auto is_virtual(int dev) const noexcept -> bool { return dev >= nic_count() && contains(dev); }
    /// The NIC carrying device `dev`'s control and eager traffic (a virtual device's first member).
    [[nodiscard]] auto primary_nic(int dev) const noexcept -> const nic*;
    /// The NICs of `dev`: itself, or a virtual device's members in rail order.
    [[nodiscard]] auto members(int dev) const -> std::vector<int>;
    /// "eth0", or "eth0+eth1" for a virtual device.
    [[nodiscard]] auto name(int dev) const -> const std::string&;

    /// Fuses NICs into a new virtual device: its number. invalid_argument for an empty list,
    /// more than `max_members`, an unknown NIC or one named twice.
    [[nodiscard]] auto make_virtual(std::span<const int> nics, int max_members) -> result<int>;

    /// The engine of `dev`, opened on first use. invalid_argument for an unknown device.
    [[nodiscard]] auto engine_for(int dev) -> result<engine*>;
    /// Closes every engine and forgets the virtual devices (the NICs stay discovered).
    void close_engines() noexcept;

    /// Called with each engine as it opens.
    using engine_hook = void (*)(engine&) noexcept;
    /// Called for every engine when it is opened (adaptors install their release hooks).
    void on_engine_open(engine_hook h) noexcept { on_open_ = h; }

private:
    struct virtual_device {
        std::vector<int> members;
        std::string name;
    };
    config cfg_{};
    std::vector<nic> nics_{};
    std::vector<virtual_device> virtuals_{};
    std::vector<std::unique_ptr<engine>> engines_{};  ///< per device, nullptr until first use
    engine_hook on_open_{nullptr};
};

/// Hash identifying this host (boot id + hostname); peers compare it to know they share a host.
[[nodiscard]] auto this_host_id() noexcept -> std::uint64_t;

}  // namespace loom::plugins
