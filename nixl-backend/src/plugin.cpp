// libplugin_LOOM.so's entry points: the plugin table NIXL's agent finds by nixl_plugin_init.
#include "engine.hpp"
#include "options.hpp"

#include <loom/plugins/log.hpp>

namespace loom::nixl_backend {
namespace {

auto create_engine(const nixlBackendInitParams* params) -> nixlBackendEngine* {
    if (params == nullptr || params->customParams == nullptr) return nullptr;
    try {
        return new engine(params);  // a failed set-up sets initErr: the agent reports and destroys it
    } catch (const std::exception& e) {
        LOOM_LOG(spdlog::level::err, "nixl LOOM backend: {}", e.what());
    } catch (...) {
    }
    return nullptr;
}

void destroy_engine(nixlBackendEngine* e) { delete e; }
auto plugin_name() -> const char* { return "LOOM"; }
auto plugin_version() -> const char* { return "0.1.0"; }
auto backend_options() -> nixl_b_params_t { return default_options(); }
// What the plugin can handle; an engine offers VRAM_SEG only where CUDA memory can be registered.
auto backend_mems() -> nixl_mem_list_t { return {DRAM_SEG, VRAM_SEG}; }

nixlBackendPlugin table{1,  // the plugin API version NIXL 1.4 and 1.5 accept
                        create_engine,
                        destroy_engine,
                        plugin_name,
                        plugin_version,
                        backend_options,
                        backend_mems};

}  // namespace
}  // namespace loom::nixl_backend

extern "C" __attribute__((visibility("default"))) nixlBackendPlugin* nixl_plugin_init() {
    return &loom::nixl_backend::table;
}
extern "C" __attribute__((visibility("default"))) void nixl_plugin_fini() {}
