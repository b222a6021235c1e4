#include <loom/fabric_info.hpp>
#include <loom/provider_facts.hpp>

#include <rdma/fabric.h>

#include <array>

namespace loom {
namespace {

constexpr std::array<std::string_view, 7> ranking{"cxi", "efa", "verbs;ofi_rxm", "psm3", "opx", "tcp", "tcp;ofi_rxm"};

auto preference_of(std::string_view p) noexcept -> int {
    for (std::size_t i = 0; i < ranking.size(); ++i)
        if (ranking[i] == p) return static_cast<int>(i) + 1;
    return 0;
}

}  // namespace

auto provider_facts_for(std::string_view p) noexcept -> provider_facts {
    provider_facts f;
    const bool rxm = p.ends_with("ofi_rxm");
    const bool rxd = p.ends_with("ofi_rxd");
    f.preference = preference_of(p);
    f.host_local = p == "shm" || p == "sm2";
    // Eager limits, measured with loom-bench over loopback (LOOM_EAGER_MAX swept): on shm and
    // native tcp eager sends match raw libfabric up to 256 KiB, where the rendezvous' extra
    // round trip costs 1.2-1.5x; on tcp;ofi_rxm the RMA-write rendezvous wins from 16 KiB (rxm's
    // own protocol switches there too). Hardware NICs keep 64 KiB, untuned here.
    if (p == "shm" || p == "tcp")
        f.eager_max = 262144;
    else if (p == "tcp;ofi_rxm")
        f.eager_max = 16384;
    f.assumed_speed_mbps = f.host_local ? 100000 : 10000;
    f.hardware_registrations = p == "efa" || p == "cxi" || p.starts_with("verbs");
    f.own_liveness_endpoint = p == "tcp" || p == "tcp;ofi_rxm";
    if (p == "tcp;ofi_rxm") f.liveness_provider = "tcp";
    f.sent_data_outlives_sender = !f.host_local;
    f.getopt_needs_enable = p == "shm";
    // shm (2.1) segfaults in smr_generic_inject when the peer endpoint was closed by the same
    // process (two engines of one process, torn down in either order).
    f.unsafe_close_with_local_peers = p == "shm";
    // libfabric 2.1's rxd sends fetch/compare atomics with an uninitialised segment count
    // (rxd_tx_entry_init_atomic) and looks up the peer of fi_inject_atomic with the remote
    // address (rxd_atomic_inject): results are garbage, hangs or endless EAGAIN.
    const bool old_rxd = rxd && ::fi_version() < FI_VERSION(2, 2);
    f.broken_fetch_atomics = old_rxd;
    f.broken_atomic_inject = old_rxd;
    // rxm (seen with 2.1) segfaults in rxm_get_addr when an endpoint's own address is inserted
    // into an AV that already holds peers.
    f.broken_self_insert = rxm;
    // These register through libfabric's utility MR map, which turns a DMA-BUF into its mapped
    // range (they never hand the descriptor to hardware).
    f.translates_dmabuf = p == "tcp" || p == "tcp;ofi_rxm" || p == "sockets" || p == "udp;ofi_rxd";
    f.srx_cancel_crashes = p == "tcp";
    return f;
}

auto provider_facts_for(const fabric_info& info) noexcept -> provider_facts {
    return provider_facts_for(info.provider_name());
}

auto ranked_providers() noexcept -> std::span<const std::string_view> { return ranking; }

}  // namespace loom
