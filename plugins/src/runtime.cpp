#include <loom/plugins/log.hpp>
#include <loom/plugins/runtime.hpp>

namespace loom::plugins {

auto runtime::instance() -> runtime& {
    static auto* r = new runtime();  // NOLINT: must outlive the host's atexit teardown
    return *r;
}

auto runtime::acquire(std::optional<spdlog::level::level_enum> host_level, device_registry::engine_hook on_open,
                      const config_overrides& settings) -> void_result {
    std::lock_guard lock(mu_);
    if (discovered_) {
        if (auto conflict = settings.conflict_with(cfg_); !conflict.empty()) {
            LOOM_WARN("configuration: refused {}: the runtime is already set up", conflict);
            return make_unexpected(errc::invalid_argument);
        }
    } else {
        auto cfg = config::from_env();
        if (!cfg) {
            set_log_level("", std::nullopt);
            LOOM_WARN("configuration: {}", config::last_error());
            return make_unexpected(errc::invalid_argument);
        }
        cfg_ = *cfg;
        settings.apply_to(cfg_);
        set_log_level(cfg_.log_level, host_level);
        auto reg = device_registry::discover(cfg_);
        if (!reg) {
            LOOM_WARN("provider discovery failed: {}", reg.error().message());
            return std::unexpected(reg.error());
        }
        devices_ = std::move(*reg);
        devices_.on_engine_open(on_open);
        discovered_ = true;
        for (int d = 0; d < devices_.nic_count(); ++d) {
            const auto& n = *devices_.primary_nic(d);
            LOOM_INFO("device {}: provider {}, pci {}, numa {}, rma {}", n.name, n.provider,
                      n.topo.pci_path.empty() ? "-" : n.topo.pci_path, n.topo.numa_node, n.rma);
        }
        if (devices_.nic_count() == 0)
            LOOM_WARN("no usable provider{}{}", cfg_.provider.empty() ? "" : " named ", cfg_.provider);
    }
    ++refs_;
    return {};
}

auto runtime::release() -> void_result {
    std::lock_guard lock(mu_);
    if (refs_ == 0) return make_unexpected(errc::bad_state);
    // Last host gone and nothing open: give the NICs back (the host may unload us).
    if (--refs_ == 0 && open_.load(std::memory_order_relaxed) == 0) devices_.close_engines();
    return {};
}

}  // namespace loom::plugins
