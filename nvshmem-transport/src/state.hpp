// The transport's state behind nvshmem_transport::state, shared by transport.cpp (init,
// connection, memory, teardown) and operations.cpp (rma, amo, ordering, progress).
#pragma once

#include "transport_abi.hpp"

#include <loom/plugins/pe_group.hpp>

#include <map>
#include <memory>
#include <mutex>

namespace loom::nvshmem {

inline constexpr std::uint32_t state_magic = 0x54504d4cU;  // "LMPT"

struct transport_state {
    std::uint32_t magic{state_magic};
    std::mutex mu;  ///< around the group's creation and the region table, not operations
    std::unique_ptr<plugins::pe_group> group;
    std::map<std::uintptr_t, plugins::pe_region*> regions;  ///< by base address
    plugins::region_descriptor first_local{};               ///< a registered region of ours (enforce_cst reads it)
    bool has_local{false};
    bool runtime_acquired{false};
    plugins::atomic_path atomics{plugins::atomic_path::automatic};
};

/// The state of `t`, or nullptr for a transport that is not ours or not initialized.
[[nodiscard]] auto state_of(abi::transport* t) noexcept -> transport_state*;
/// The group, or nullptr before connect_endpoints.
[[nodiscard]] auto group_of(abi::transport* t) noexcept -> plugins::pe_group*;
/// An NVSHMEM status for a runtime error.
[[nodiscard]] auto status_of(const std::error_code& e) noexcept -> int;
/// The queue for a qp_index (major 4) or is_proxy (major 3): -1 when out of range.
[[nodiscard]] auto queue_of(abi::transport* t, int qp) noexcept -> int;

// The host ops of operations.cpp.
auto transport_rma(abi::transport* t, int pe, abi::rma_verb verb, abi::rma_memdesc* remote, abi::rma_memdesc* local,
                   abi::rma_bytesdesc bytes, int qp) -> int;
auto transport_amo(abi::transport* t, int pe, void* curetptr, abi::amo_verb verb, abi::amo_memdesc* target,
                   abi::amo_bytesdesc bytes, int qp) -> int;
auto transport_quiet(abi::transport* t, int pe, int qp) -> int;
#if LOOM_NVSHMEM_MAJOR >= 4
auto transport_fence(abi::transport* t, int pe, int qp, int is_multi) -> int;
auto transport_put_signal(abi::transport* t, int pe, abi::rma_verb write_verb,
                          std::vector<abi::rma_memdesc>& write_remote, std::vector<abi::rma_memdesc>& write_local,
                          std::vector<abi::rma_bytesdesc>& write_bytes, abi::amo_verb sig_verb,
                          abi::amo_memdesc* sig_target, abi::amo_bytesdesc sig_bytes, int qp) -> int;
#else
auto transport_fence(abi::transport* t, int pe, int qp) -> int;
#endif
auto transport_progress(abi::transport* t) -> int;
auto transport_enforce_cst(abi::transport* t) -> int;

}  // namespace loom::nvshmem
