// NVSHMEM's remote-transport plugin interface, declared from its published headers
// (NVIDIA/nvshmem: src/include/internal/host_transport/transport.h, device_host_transport/
// nvshmem_common_transport.h, nvshmemi_transport_defines.h, nvshmemi_bootstrap_defines.h) and
// checked against the transports of the 3.4.5 and 3.5.21 wheels (their mangled signatures,
// struct sizes 240 and 248, and the offsets nvshmemt_init stores into).
//
// LOOM_NVSHMEM_MAJOR selects the interface: 3 (NVSHMEM 3.4) or 4 (3.5). Major 4 adds
// put_signal, turns is_proxy into qp_index, gives fence is_multi and connect_endpoints its
// queue indices, and moves host_ops to the end of the transport.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#ifndef LOOM_NVSHMEM_MAJOR
#error "LOOM_NVSHMEM_MAJOR (3 or 4) must be defined"
#endif

namespace loom::nvshmem::abi {

inline constexpr int plugin_major = LOOM_NVSHMEM_MAJOR;
static_assert(plugin_major == 3 || plugin_major == 4, "only majors 3 and 4 are published");
/// major * 10000 + minor * 100 + patch.
inline constexpr int interface_version = plugin_major * 10000;
[[nodiscard]] constexpr auto major_of(int version) noexcept -> int { return version / 10000; }

// nvshmemx_status
inline constexpr int success = 0;
inline constexpr int error_invalid_value = 1;
inline constexpr int error_out_of_memory = 2;
inline constexpr int error_not_supported = 3;
inline constexpr int error_internal = 7;

// Capabilities (can_reach_peer) and attributes.
inline constexpr int cap_cpu_write = 1 << 4;
inline constexpr int cap_cpu_read = 1 << 5;
inline constexpr int cap_cpu_atomics = 1 << 6;
inline constexpr int cap_gpu_write = 1 << 7;
inline constexpr int cap_gpu_read = 1 << 8;
inline constexpr int cap_gpu_atomics = 1 << 9;
inline constexpr int attr_connected = 1 << 1;
inline constexpr int lib_code_none = 0;

// nvshmemi_op_t (major 4 adds the same verbs + 100 for queue-addressed channel operations).
inline constexpr int op_put = 1;
inline constexpr int op_p = 2;
inline constexpr int op_put_signal = 3;
inline constexpr int op_get = 4;
inline constexpr int op_g = 5;
inline constexpr int op_qp_offset = 100;

// nvshmemi_amo_t
enum amo_code : int {
    amo_ack = 1,
    amo_inc = 2,
    amo_set = 3,
    amo_add = 4,
    amo_and = 5,
    amo_or = 6,
    amo_xor = 7,
    amo_signal = 8,
    amo_signal_set = 9,
    amo_signal_add = 10,
    amo_end_of_nonfetch = 11,
    amo_fetch = 12,
    amo_fetch_inc = 13,
    amo_fetch_add = 14,
    amo_fetch_and = 15,
    amo_fetch_or = 16,
    amo_fetch_xor = 17,
    amo_swap = 18,
    amo_compare_swap = 19,
};

inline constexpr std::size_t mem_handle_size = 512;
struct mem_handle {
    char reserved[mem_handle_size];
};

struct pcie_id {
    int dev_id;
    int bus_id;
    int domain_id;
};

struct bootstrap_handle {
    int version;
    int pg_rank;
    int pg_size;
    int mype_node;
    int npes_node;
    int (*allgather)(const void* sendbuf, void* recvbuf, int bytes, bootstrap_handle* handle);
    int (*alltoall)(const void* sendbuf, void* recvbuf, int bytes, bootstrap_handle* handle);
    int (*barrier)(bootstrap_handle* handle);
    void (*global_exit)(int status);
    int (*finalize)(bootstrap_handle* handle);
    int (*show_info)(bootstrap_handle* handle, int style);
    void* pre_init_ops;
    void* comm_state;
};

struct pe_info {
    pcie_id pcie;
    int pe;
    std::uint64_t host_hash;
    unsigned char gpu_uuid[16];
};

struct rma_verb {
    int desc;
    int is_nbi;
    int is_stream;
    void* stream;
};

struct rma_memdesc {
    void* ptr;
    std::uint64_t offset;
    mem_handle* handle;
};

struct rma_bytesdesc {
    std::size_t nelems;
    int elembytes;
    std::ptrdiff_t srcstride;
    std::ptrdiff_t deststride;
};

struct amo_verb {
    int desc;
    int is_fetch;
    int is_val;
    int is_cmp;
};

struct amo_memdesc {
    rma_memdesc remote_memdesc;
    std::uint64_t retflag;
    void* retptr;
    void* valptr;
    void* cmpptr;
    std::uint64_t val;
    std::uint64_t cmp;
    mem_handle* ret_handle;
};

struct amo_bytesdesc {
    int name_type;
    int elembytes;
};

struct transport;

// The queue argument: is_proxy (0 host, 1 proxy) in major 3, qp_index in major 4.
using rma_fn = int (*)(transport* t, int pe, rma_verb verb, rma_memdesc* remote, rma_memdesc* local,
                       rma_bytesdesc bytes, int queue);
using amo_fn = int (*)(transport* t, int pe, void* curetptr, amo_verb verb, amo_memdesc* target, amo_bytesdesc bytes,
                       int queue);
using quiet_fn = int (*)(transport* t, int pe, int queue);
#if LOOM_NVSHMEM_MAJOR >= 4
using fence_fn = int (*)(transport* t, int pe, int queue, int is_multi);
using put_signal_fn = int (*)(transport* t, int pe, rma_verb write_verb, std::vector<rma_memdesc>& write_remote,
                              std::vector<rma_memdesc>& write_local, std::vector<rma_bytesdesc>& write_bytes,
                              amo_verb sig_verb, amo_memdesc* sig_target, amo_bytesdesc sig_bytes, int queue);
using connect_fn = int (*)(transport* t, int* selected_dev_ids, int num_selected, int* out_qp_indices, int num_qps);
#else
using fence_fn = int (*)(transport* t, int pe, int queue);
using connect_fn = int (*)(transport* t, int* selected_dev_ids, int num_selected);
#endif

struct host_ops {
    int (*can_reach_peer)(int* access, pe_info* peer, transport* t);
    connect_fn connect_endpoints;
    int (*get_mem_handle)(mem_handle* handle, void* buf, std::size_t size, transport* t, bool local_only);
    int (*release_mem_handle)(mem_handle* handle, transport* t);
    int (*finalize)(transport* t);
    int (*show_info)(transport* t, int style);
    int (*progress)(transport* t);
    rma_fn rma;
    amo_fn amo;
    fence_fn fence;
    quiet_fn quiet;
#if LOOM_NVSHMEM_MAJOR >= 4
    put_signal_fn put_signal;
#endif
    int (*enforce_cst)(transport* t);
    int (*enforce_cst_at_target)(transport* t);
    int (*add_device_remote_mem_handles)(transport* t, int transport_stride, mem_handle* handles,
                                         std::uint64_t heap_offset, std::size_t size);
};

struct transport {
    int api_version;
    int type;
    int* cap;
#if LOOM_NVSHMEM_MAJOR < 4
    host_ops ops;
#endif
    bootstrap_handle* boot_handle;
    void* state;
    void* type_specific_shared_state;
    void* cache_handle;
    char** device_pci_paths;
    int attr;
    int n_devices;
    bool atomics_complete_on_quiet;
    bool is_successfully_initialized;
    bool no_proxy;
    void* heap_base;
    std::size_t log2_cumem_granularity;
    std::uint64_t max_op_len;
    std::uint32_t atomic_host_endian_min_size;
    int index;
    int my_pe;
    int n_pes;
    std::unordered_map<void*, void*>* alias_va_map;
    std::unordered_map<void*, std::size_t>* egm_map;
#if LOOM_NVSHMEM_MAJOR >= 4
    host_ops ops;
#endif
};

#if LOOM_NVSHMEM_MAJOR >= 4
static_assert(sizeof(transport) == 248 && offsetof(transport, ops) == 128 && offsetof(transport, state) == 24);
#else
static_assert(sizeof(transport) == 240 && offsetof(transport, ops) == 16 && offsetof(transport, state) == 136);
#endif
static_assert(sizeof(amo_memdesc) == 80 && offsetof(amo_memdesc, ret_handle) == 72);
static_assert(sizeof(rma_verb) == 24 && sizeof(rma_bytesdesc) == 32 && sizeof(amo_verb) == 16);
static_assert(sizeof(bootstrap_handle) == 88);

/// The one symbol NVSHMEM resolves (the cuda table is not used: the transport needs no GPU).
using init_fn = int (*)(transport** t, void* cuda_table, int api_version);

}  // namespace loom::nvshmem::abi
