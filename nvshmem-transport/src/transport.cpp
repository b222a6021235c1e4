// nvshmem_transport_libfabric.so.<major>: NVSHMEM's remote transport over the runtime's PE
// group. This file: nvshmemt_init, reachability, connection (addresses through the bootstrap's
// allgather), memory handles, information and teardown. The data path is in operations.cpp.
#include "state.hpp"

#include <loom/plugins/limits.hpp>
#include <loom/plugins/log.hpp>
#include <loom/plugins/runtime.hpp>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace lp = loom::plugins;

namespace loom::nvshmem {

auto state_of(abi::transport* t) noexcept -> transport_state* {
    if (t == nullptr || t->state == nullptr) return nullptr;
    auto* s = static_cast<transport_state*>(t->state);
    return s->magic == state_magic ? s : nullptr;
}

auto group_of(abi::transport* t) noexcept -> lp::pe_group* {
    auto* s = state_of(t);
    return s == nullptr ? nullptr : s->group.get();
}

auto status_of(const std::error_code& e) noexcept -> int {
    if (!e) return abi::success;
    if (e == make_error_code(errc::invalid_argument)) return abi::error_invalid_value;
    if (e == make_error_code(errc::not_supported)) return abi::error_not_supported;
    if (e == make_error_code(errc::no_memory)) return abi::error_out_of_memory;
    return abi::error_internal;
}

auto queue_of(abi::transport* t, int qp) noexcept -> int {
    auto* g = group_of(t);
    if (g == nullptr) return -1;
#if LOOM_NVSHMEM_MAJOR >= 4
    return qp >= 0 && qp < g->queues() ? qp : -1;
#else
    return qp == 0 ? 0 : (qp == 1 ? 1 : -1);  // is_proxy
#endif
}

namespace {

auto atomics_from_env() -> result<lp::atomic_path> {
    const char* v = std::getenv("LOOM_ATOMICS");
    if (v == nullptr || *v == '\0' || std::strcmp(v, "auto") == 0) return lp::atomic_path::automatic;
    if (std::strcmp(v, "staged") == 0) return lp::atomic_path::staged;
    if (std::strcmp(v, "native") == 0) return lp::atomic_path::native;
    LOOM_WARN("LOOM_ATOMICS={} is not auto, staged or native", v);
    return make_unexpected(errc::invalid_argument);
}

int can_reach_peer(int* access, abi::pe_info* peer, abi::transport* t) {
    if (access == nullptr || peer == nullptr || state_of(t) == nullptr) return abi::error_invalid_value;
    if (peer->pe < 0 || peer->pe >= t->n_pes) return abi::error_invalid_value;
    // Every PE is reached through the network (itself by loopback); device-initiated traffic
    // goes through NVSHMEM's proxy thread, so the CPU capabilities are the ones to report.
    *access = abi::cap_cpu_read | abi::cap_cpu_write | abi::cap_cpu_atomics;
    return abi::success;
}

/// The NICs NVSHMEM selected, as the runtime's device and rails: consecutive NICs of the
/// device list fuse into rails (large puts and gets stripe over them); otherwise the first.
struct nic_choice {
    int device{-1};
    int rails{1};
};
auto choose_nics(abi::transport* t, const int* selected, int n) -> nic_choice {
    if (n <= 0 || selected == nullptr) return {0, 1};
    for (int i = 0; i < n; ++i)
        if (selected[i] < 0 || selected[i] >= t->n_devices) return {};
    int rails = 1;
    while (rails < n && rails < lp::max_rails && selected[rails] == selected[0] + rails) ++rails;
    if (rails < n) LOOM_INFO("transport: NICs beyond {} of the {} selected are not consecutive: not used", rails, n);
    return {selected[0], rails};
}

auto connect_group(abi::transport* t, nic_choice nics, int queues) -> int {
    auto* s = state_of(t);
    if (s == nullptr || t->boot_handle == nullptr || t->boot_handle->allgather == nullptr)
        return abi::error_invalid_value;
    if (t->n_pes < 1 || t->my_pe < 0 || t->my_pe >= t->n_pes) return abi::error_invalid_value;
    std::lock_guard lock(s->mu);
    if (s->group) return abi::success;  // connected before: nothing to do
    auto g = lp::pe_group::create({.pe = t->my_pe,
                                   .pes = t->n_pes,
                                   .queues = queues,
                                   .device = nics.device,
                                   .rails = nics.rails,
                                   .atomics = s->atomics});
    if (!g) {
        LOOM_WARN("transport: no PE group on device {} ({} rails): {}", nics.device, nics.rails, g.error().message());
        return status_of(g.error());
    }
    const auto mine = (*g)->address();
    std::vector<lp::handle_bytes> all(static_cast<std::size_t>(t->n_pes));
    if (t->boot_handle->allgather(mine.data(), all.data(), static_cast<int>(mine.size()), t->boot_handle) != 0) {
        LOOM_WARN("transport: the bootstrap's allgather of addresses failed");
        return abi::error_internal;
    }
    auto* boot = t->boot_handle;
    auto barrier = [boot] { return boot->barrier == nullptr || boot->barrier(boot) == 0; };
    if (auto ok = (*g)->connect(all, barrier); !ok) {
        LOOM_WARN("transport: connecting {} PEs failed: {}", t->n_pes, ok.error().message());
        return status_of(ok.error());
    }
    s->group = std::move(*g);
    LOOM_INFO("transport: PE {} of {} connected, {} queues, {} rails, {} atomics", t->my_pe, t->n_pes, queues,
              nics.rails, s->group->stages_atomics() ? "staged" : "native");
    return abi::success;
}

#if LOOM_NVSHMEM_MAJOR >= 4
int connect_endpoints(abi::transport* t, int* selected, int n_selected, int* out_qp_indices, int num_qps) {
    const auto nics = choose_nics(t, selected, n_selected);
    if (nics.device < 0 || num_qps < 0 || num_qps > 8 || (num_qps > 0 && out_qp_indices == nullptr))
        return abi::error_invalid_value;
    const int queues = num_qps < 2 ? 2 : num_qps;  // host and proxy at least
    if (auto rc = connect_group(t, nics, queues); rc != abi::success) return rc;
    for (int i = 0; i < num_qps; ++i) out_qp_indices[i] = i;
    return abi::success;
}
#else
int connect_endpoints(abi::transport* t, int* selected, int n_selected) {
    const auto nics = choose_nics(t, selected, n_selected);
    if (nics.device < 0) return abi::error_invalid_value;
    return connect_group(t, nics, 2);  // host-initiated and proxy
}
#endif

int get_mem_handle(abi::mem_handle* handle, void* buf, std::size_t size, abi::transport* t, bool /*local_only*/) {
    auto* s = state_of(t);
    if (handle == nullptr || buf == nullptr || size == 0 || s == nullptr) return abi::error_invalid_value;
    auto* g = s->group.get();
    if (g == nullptr) return abi::error_invalid_value;  // connect_endpoints comes first
    const auto kind = gpu::classify(buf);
    auto region = g->register_memory({static_cast<std::byte*>(buf), size}, kind);
    if (!region) {
        LOOM_WARN("transport: registering {} bytes at {} failed: {}", size, buf, region.error().message());
        return status_of(region.error());
    }
    auto d = g->describe(*region);
    if (!d) {
        (void)g->deregister(*region);
        return status_of(d.error());
    }
    std::memset(handle->reserved, 0, sizeof handle->reserved);
    std::memcpy(handle->reserved, d->data(), d->size());
    std::lock_guard lock(s->mu);
    s->regions[reinterpret_cast<std::uintptr_t>(buf)] = *region;
    if (!s->has_local) {
        s->first_local = *d;
        s->has_local = true;
    }
    return abi::success;
}

int release_mem_handle(abi::mem_handle* handle, abi::transport* t) {
    auto* s = state_of(t);
    if (handle == nullptr || s == nullptr || s->group == nullptr) return abi::error_invalid_value;
    const auto bytes = std::as_bytes(std::span(handle->reserved));
    auto base = lp::region_base(bytes, t->my_pe);
    if (!base) return abi::error_invalid_value;  // corrupted, foreign, or another PE's
    std::lock_guard lock(s->mu);
    auto it = s->regions.find(*base);
    if (it == s->regions.end()) return abi::error_invalid_value;  // released before
    if (auto ok = s->group->deregister(it->second); !ok) return status_of(ok.error());
    if (s->has_local && std::memcmp(s->first_local.data(), handle->reserved, s->first_local.size()) == 0)
        s->has_local = false;
    s->regions.erase(it);
    return abi::success;
}

int show_info(abi::transport* t, int /*style*/) {
    auto* s = state_of(t);
    if (s == nullptr) return abi::error_invalid_value;
    if (s->group)
        LOOM_INFO("transport: PE {}/{}, {} queues, {} atomics, {} operations outstanding, {} registrations",
                  s->group->pe(), s->group->pes(), s->group->queues(), s->group->stages_atomics() ? "staged" : "native",
                  s->group->outstanding(), s->regions.size());
    else
        LOOM_INFO("transport: initialized, not connected");
    return abi::success;
}

int add_device_remote_mem_handles(abi::transport* t, int stride, abi::mem_handle* handles, std::uint64_t /*offset*/,
                                  std::size_t size) {
    // Device-side handle tables serve transports the GPU drives itself; this one is driven by
    // the proxy thread, whose operations carry the handles. The arguments are still checked.
    if (state_of(t) == nullptr || stride <= 0 || (handles == nullptr && size != 0)) return abi::error_invalid_value;
    return abi::success;
}

int finalize(abi::transport* t) {
    auto* s = state_of(t);
    if (s == nullptr) return abi::error_invalid_value;
    {
        std::lock_guard lock(s->mu);
        if (s->group) {
            if (auto ok = s->group->quiet(-1, -1); !ok)
                LOOM_WARN("transport: operations failed before finalize: {}", ok.error().message());
            for (auto& [base, r] : s->regions) (void)s->group->deregister(r);
            s->regions.clear();
            s->group.reset();
        }
    }
    if (t->device_pci_paths != nullptr) {
        for (int i = 0; i < t->n_devices; ++i) std::free(t->device_pci_paths[i]);
        std::free(t->device_pci_paths);
    }
    if (s->runtime_acquired) (void)lp::runtime::instance().release();
    s->magic = 0;
    delete s;
    std::free(t);
    return abi::success;
}

/// The runtime's NICs as NVSHMEM's device list (PCI paths, so its core can rank them).
auto list_devices(abi::transport* t) -> bool {
    auto& rt = lp::runtime::instance();
    auto lock = rt.guard();
    auto& reg = rt.devices();
    const int n = reg.nic_count();
    t->device_pci_paths = static_cast<char**>(std::calloc(static_cast<std::size_t>(n > 0 ? n : 1), sizeof(char*)));
    if (t->device_pci_paths == nullptr) return false;
    for (int i = 0; i < n; ++i) {
        const auto* nic = reg.primary_nic(i);
        std::string path = nic->topo.pci_path.empty() ? "/sys/devices/virtual/net/" + nic->name : nic->topo.pci_path;
        t->device_pci_paths[i] = strdup(path.c_str());
        if (t->device_pci_paths[i] == nullptr) return false;
        t->n_devices = i + 1;
    }
    return n > 0;
}

void fill_ops(abi::host_ops& ops) {
    ops.can_reach_peer = can_reach_peer;
    ops.connect_endpoints = connect_endpoints;
    ops.get_mem_handle = get_mem_handle;
    ops.release_mem_handle = release_mem_handle;
    ops.finalize = finalize;
    ops.show_info = show_info;
    ops.progress = transport_progress;
    ops.rma = transport_rma;
    ops.amo = transport_amo;
    ops.fence = transport_fence;
    ops.quiet = transport_quiet;
#if LOOM_NVSHMEM_MAJOR >= 4
    ops.put_signal = transport_put_signal;
#endif
    ops.enforce_cst = transport_enforce_cst;
    ops.enforce_cst_at_target = transport_enforce_cst;
    ops.add_device_remote_mem_handles = add_device_remote_mem_handles;
}

auto init(abi::transport** out, int api_version) -> int {
    if (out == nullptr) return abi::error_invalid_value;
    if (abi::major_of(api_version) != abi::plugin_major) {
        LOOM_WARN("transport: built for interface major {}, the host speaks {}: not loaded", abi::plugin_major,
                  abi::major_of(api_version));
        return abi::error_not_supported;
    }
    auto atomics = atomics_from_env();
    if (!atomics) return abi::error_invalid_value;
    if (auto ok = lp::runtime::instance().acquire(std::nullopt); !ok) {
        LOOM_WARN("transport: the runtime found no usable device: {}", ok.error().message());
        return status_of(ok.error());
    }
    auto* t = static_cast<abi::transport*>(std::calloc(1, sizeof(abi::transport)));
    auto* s = t == nullptr ? nullptr : new (std::nothrow) transport_state;
    if (s == nullptr) {
        std::free(t);
        (void)lp::runtime::instance().release();
        return abi::error_out_of_memory;
    }
    s->runtime_acquired = true;
    s->atomics = *atomics;
    t->state = s;
    if (!list_devices(t)) {
        (void)finalize(t);
        return abi::error_internal;
    }
    t->api_version = api_version < abi::interface_version ? api_version : abi::interface_version;
    t->type = abi::lib_code_none;
    t->attr = abi::attr_connected;
    t->atomics_complete_on_quiet = true;
    t->no_proxy = false;
    t->max_op_len = lp::max_rma_chunk;
    fill_ops(t->ops);
    t->is_successfully_initialized = true;
    *out = t;
    return abi::success;
}

}  // namespace
}  // namespace loom::nvshmem

extern "C" __attribute__((visibility("default"))) int nvshmemt_init(loom::nvshmem::abi::transport** t,
                                                                    void* /*cuda_table*/, int api_version) {
    try {
        return loom::nvshmem::init(t, api_version);
    } catch (...) {
        return loom::nvshmem::abi::error_internal;  // nothing crosses the plugin boundary
    }
}
