// loom/provider_facts.hpp — what loom knows of each libfabric provider, in one table: the
// defaults a runtime picks (preference, eager limit, link speed to assume) and the defects of
// the libfabric loom runs against that it steers around. Every layer asks here (the core's
// endpoint checks, the MR cache, the plugin runtime); nothing else compares provider names.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace loom {

class fabric_info;

/// What loom knows about a provider beyond its attributes: the plugin runtime's choices and defaults, and defects of
/// the libfabric linked that loom works around.
struct provider_facts {
    // ---- choice and defaults
    /// Place in the plugin runtime's preference (1 = first choice); 0: chosen only when named.
    int preference{0};
    /// Reaches only processes on this host (shm, sm2).
    bool host_local{false};
    /// Largest message the plugin runtime sends eagerly when LOOM_EAGER_MAX is not set
    /// (measured over loopback; see the project's docs/plugins.md).
    std::size_t eager_max{65536};
    /// Link speed to report when the interface states none (Mbit/s).
    int assumed_speed_mbps{10000};
    /// Registrations reach a NIC's hardware (verbs, efa, cxi): a DMA-BUF is handed to the device
    /// rather than mapped by libfabric's utility MR map.
    bool hardware_registrations{false};
    /// The plugin runtime gives liveness pings an endpoint of their own unless told otherwise:
    /// where connections are byte streams that queue them behind bulk data and an endpoint is
    /// cheap (tcp: about 0.2 MiB and one descriptor; an ofi_rxm endpoint costs about 140 MiB,
    /// hence `liveness_provider`).
    bool own_liveness_endpoint{false};
    /// The provider of that endpoint when not the data's own (empty: the data's): under
    /// ofi_rxm over tcp, a native tcp endpoint in a domain of its own costs about 17 MiB where
    /// an rxm endpoint costs about 140 MiB of pools.
    std::string_view liveness_provider{};
    /// What a peer sent may still be on its way after its process has ended (in kernel socket
    /// buffers, on the network): a peer on this host whose process is gone is not dead before
    /// its data is in. False where a message is in the receiver's queue once sent (shm).
    bool sent_data_outlives_sender{true};

    // ---- defects of the libfabric linked (libfabric 2.1 unless noted)
    bool getopt_needs_enable{false};   ///< shm: fi_getopt before fi_enable crashes
    bool broken_fetch_atomics{false};  ///< ofi_rxd < 2.2: fetch/compare atomics garbage or hang
    bool broken_atomic_inject{false};  ///< ofi_rxd < 2.2: fi_inject_atomic looks the peer up wrongly
    bool broken_self_insert{false};    ///< ofi_rxm: an endpoint's own address into an AV with peers segfaults
    bool translates_dmabuf{false};     ///< utility MR map: a DMA-BUF registers as its mapped range
    bool srx_cancel_crashes{false};    ///< tcp: fi_cancel on a shared receive context crashes
    /// shm: a send to an endpoint that was closed in the same process crashes the sender
    bool unsafe_close_with_local_peers{false};
};

/// The facts for a provider by its exact libfabric name ("tcp;ofi_rxm", "shm", "verbs;ofi_rxm");
/// an unknown provider gets the defaults above.
[[nodiscard]] auto provider_facts_for(std::string_view provider) noexcept -> provider_facts;
/// The facts for the provider of a discovery result.
[[nodiscard]] auto provider_facts_for(const fabric_info& info) noexcept -> provider_facts;

/// The providers a runtime chooses from when none is named, most preferred first: hardware
/// (cxi, efa, verbs;ofi_rxm, psm3, opx), then native tcp — which in libfabric 2.x offers
/// tagged messages, RMA and automatic progress on RDM endpoints and moved 32 KiB messages
/// 1.5x faster than tcp;ofi_rxm here — then tcp;ofi_rxm (atomics, and libfabric 1.x).
[[nodiscard]] auto ranked_providers() noexcept -> std::span<const std::string_view>;

}  // namespace loom
