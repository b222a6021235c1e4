// tools/bench/nixl_capi.hpp — the part of NIXL's C API (libnixl_capi.so, as the nixl-cu13 1.4.1
// wheel ships it) the nixl paths call, declared here from NIXL's published interface and
// resolved with dlsym: the tool links no NIXL library and builds without one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace loom::bench::nixl_capi {

// Status codes: 0 success, 1 in progress, negative errors.
inline constexpr int success = 0;
inline constexpr int in_progress = 1;

// Memory type and transfer operation enums.
inline constexpr int mem_dram = 0;
inline constexpr int op_read = 0;
inline constexpr int op_write = 1;

// Opaque handles.
using agent = struct agent_s*;
using params = struct params_s*;
using mem_list = struct mem_list_s*;
using backend = struct backend_s*;
using opt_args = struct opt_args_s*;
using xfer_dlist = struct xfer_dlist_s*;
using reg_dlist = struct reg_dlist_s*;
using xfer_req = struct xfer_req_s*;
using notif_map = struct notif_map_s*;

/// The agent configuration of nixl_capi_create_configured_agent (40 bytes in 1.4.1). Only the
/// two thread switches and the progress delay are set; the rest stays zero (no listener, no
/// thread synchronisation, no telemetry).
struct agent_config {
    bool enable_prog_thread{false};
    bool enable_listen_thread{false};
    int listen_port{0};  // at offset 4 in 1.4.1 (later releases narrowed it)
    int thread_sync{0};
    unsigned num_workers{0};
    std::uint64_t pthr_delay_us{0};
    std::uint64_t lthr_delay_us{0};
    bool capture_telemetry{false};
};
static_assert(sizeof(agent_config) == 40);

/// The entry points, resolved once from the library.
struct api {
    int (*create_configured_agent)(const char* name, const agent_config* cfg, agent* out);
    int (*destroy_agent)(agent a);
    int (*get_plugin_params)(agent a, const char* plugin, mem_list* mems, params* p);
    int (*destroy_mem_list)(mem_list m);
    int (*destroy_params)(params p);
    int (*create_backend)(agent a, const char* plugin, params p, backend* out);
    int (*create_opt_args)(opt_args* out);
    int (*destroy_opt_args)(opt_args o);
    int (*opt_args_add_backend)(opt_args o, backend b);
    int (*create_reg_dlist)(int mem_type, reg_dlist* out);
    int (*destroy_reg_dlist)(reg_dlist d);
    int (*reg_dlist_add_desc)(reg_dlist d, std::uintptr_t addr, std::size_t len, std::uint64_t dev, const void* meta,
                              std::size_t meta_len);
    int (*register_mem)(agent a, reg_dlist d, opt_args o);
    int (*deregister_mem)(agent a, reg_dlist d, opt_args o);
    int (*get_local_md)(agent a, void** data, std::size_t* len);                     ///< data: malloc'd
    int (*load_remote_md)(agent a, const void* data, std::size_t len, char** name);  ///< name: malloc'd
    int (*invalidate_remote_md)(agent a, const char* remote);
    int (*make_connection)(agent a, const char* remote, opt_args o);
    int (*create_xfer_dlist)(int mem_type, xfer_dlist* out);
    int (*destroy_xfer_dlist)(xfer_dlist d);
    int (*xfer_dlist_add_desc)(xfer_dlist d, std::uintptr_t addr, std::size_t len, std::uint64_t dev);
    int (*create_xfer_req)(agent a, int op, xfer_dlist local, xfer_dlist remote, const char* remote_agent,
                           xfer_req* out, opt_args o);
    int (*post_xfer_req)(agent a, xfer_req r, opt_args o);
    int (*get_xfer_status)(agent a, xfer_req r);
    int (*release_xfer_req)(agent a, xfer_req r);
    int (*destroy_xfer_req)(xfer_req r);
    int (*create_notif_map)(notif_map* out);
    int (*destroy_notif_map)(notif_map m);
    int (*get_notifs)(agent a, notif_map m, opt_args o);
    int (*notif_map_get_notifs_size)(notif_map m, const char* agent_name, std::size_t* size);
    int (*notif_map_clear)(notif_map m);
    int (*gen_notif)(agent a, const char* remote, const void* data, std::size_t len, opt_args o);
};

/// Loads `library` (dlopen, kept loaded for the process) and resolves every entry point;
/// nullptr with `error` set when the library or a symbol is missing. Before the first call,
/// NIXL_PLUGIN_DIR must name the directory NIXL loads its backends from.
[[nodiscard]] auto load(const std::string& library, std::string& error) -> const api*;

}  // namespace loom::bench::nixl_capi
