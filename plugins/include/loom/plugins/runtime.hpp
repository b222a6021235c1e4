// loom/plugins/runtime.hpp — the process's plugin runtime: the LOOM_* configuration read once,
// the device registry, and the counts that decide when the devices are given back (every host
// init acquires, every finalize releases; the engines close when the last host is gone and no
// object it opened is left).
#pragma once

#include <loom/plugins/config.hpp>
#include <loom/plugins/device_registry.hpp>

#include <loom/error.hpp>

#include <spdlog/common.h>

#include <atomic>
#include <mutex>
#include <optional>

/// The plugin runtime: the engines, devices and messages that every host library's plugin shares.
namespace loom::plugins {

/// The process's plugin runtime: configuration, devices, and the counts that decide when the engines close.
class runtime {
public:
    /// The one instance; never destroyed (hosts unload plugins from their own atexit handlers).
    [[nodiscard]] static auto instance() -> runtime&;

    /// At every host init. The first reads the configuration (the log level from LOOM_LOG_LEVEL,
    /// else `host_level`, the host's own verbosity) and discovers the devices; `on_open` is
    /// called for every engine opened; `settings` replace LOOM_* variables (a later acquire
    /// whose settings differ from the configuration in use is refused). invalid_argument for a
    /// malformed LOOM_* value or such a conflict (logged, with the variable's or setting's
    /// name); discovery's error otherwise.
    [[nodiscard]] auto acquire(std::optional<spdlog::level::level_enum> host_level,
                               device_registry::engine_hook on_open = nullptr, const config_overrides& settings = {})
        -> void_result;
    /// At every host finalize; the last one with no object open closes the engines (the NICs stay
    /// discovered). bad_state without a matching acquire.
    [[nodiscard]] auto release() -> void_result;

    /// Objects the hosts hold open (connections, listeners): the engines stay while any is.
    void opened() noexcept { open_.fetch_add(1, std::memory_order_relaxed); }
    /// A host object was closed (see opened()).
    void closed() noexcept { open_.fetch_sub(1, std::memory_order_relaxed); }

    /// The runtime's lock: held around every use of devices() and acquired().
    [[nodiscard]] auto guard() -> std::unique_lock<std::mutex> { return std::unique_lock(mu_); }
    /// True between a first acquire() and the last release().
    [[nodiscard]] auto acquired() const noexcept -> bool { return refs_ > 0; }
    /// The devices (under guard()).
    [[nodiscard]] auto devices() noexcept -> device_registry& { return devices_; }
    /// The configuration; fixed after the first acquire.
    [[nodiscard]] auto settings() const noexcept -> const config& { return cfg_; }

private:
    runtime() = default;
    std::mutex mu_;
    int refs_{0};
    bool discovered_{false};
    config cfg_{};
    device_registry devices_{};
    std::atomic<long> open_{0};
};

}  // namespace loom::plugins
