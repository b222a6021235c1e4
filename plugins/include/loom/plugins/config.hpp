// loom/plugins/config.hpp — the runtime's LOOM_* configuration (one table in the README).
#pragma once

#include <loom/error.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace loom::plugins {

/// A switch with an automatic default.
enum class tristate : std::uint8_t {
    automatic,  ///< "auto": the runtime decides (see each setting)
    off,        ///< forced off
    on          ///< forced on
};

/// The runtime's settings, from the LOOM_* environment variables.
struct config {
    std::string provider{};                            ///< LOOM_PROVIDER: exact provider name; empty = ranked choice
    std::string iface{};                               ///< LOOM_IFACE: comma-separated domain/interface names
    std::optional<std::size_t> eager_max{};            ///< LOOM_EAGER_MAX: largest eager message; unset = per provider
    std::chrono::milliseconds eagain_timeout{10000};   ///< LOOM_EAGAIN_TIMEOUT_MS
    std::chrono::milliseconds peer_timeout{5000};      ///< LOOM_PEER_TIMEOUT_MS
    std::chrono::milliseconds connect_timeout{60000};  ///< LOOM_CONNECT_TIMEOUT_MS
    bool progress_thread{false};                       ///< LOOM_PROGRESS_THREAD
    /// LOOM_LIVENESS_ENDPOINT: pings and pongs go through an endpoint of their own, so that
    /// they do not queue behind the data on the provider's connection to the peer — auto:
    /// where the provider's facts say it pays (provider_facts::own_liveness_endpoint).
    tristate liveness_endpoint{tristate::automatic};
    std::string log_level{};  ///< LOOM_LOG_LEVEL (trace|debug|info|warn|error|off)
    /// LOOM_MR_CACHE_ENTRIES: idle host registrations kept per device for reuse. Unset: all of
    /// them where the provider does not pin pages at registration, none where it does (the
    /// cache watches no allocator, so a freed and reused buffer must not meet an old pin).
    std::optional<std::size_t> mr_cache_entries{};
    std::size_t cq_size{4096};  ///< LOOM_CQ_SIZE: entries of each completion queue
    /// LOOM_HMEM: open providers with FI_HMEM (device memory) — auto: when a GPU runtime loads.
    tristate hmem{tristate::automatic};
    /// LOOM_FLUSH: iflush by an RMA read of the received data — auto: for device memory only;
    /// 1: for every buffer; 0: never.
    tristate flush{tristate::automatic};

    /// Reads the process environment. Malformed values are errors naming the variable.
    [[nodiscard]] static auto from_env() -> result<config>;
    /// The same over an explicit lookup (tests): `get(name)` returns the value or nullptr.
    template <class Get>
    [[nodiscard]] static auto from(Get&& get) -> result<config>;

    /// Text of the last error from from_env()/from() (which variable, what was wrong).
    [[nodiscard]] static auto last_error() -> std::string;
};

/// Settings a host passes in place of LOOM_* variables (e.g. a host's backend parameters). What is
/// set replaces the variable at the runtime's first acquire; a later acquire that sets a
/// different value is refused: one process, one provider and one set of devices.
struct config_overrides {
    std::optional<std::string> provider{};   ///< as LOOM_PROVIDER
    std::optional<std::string> iface{};      ///< as LOOM_IFACE
    std::optional<std::size_t> eager_max{};  ///< as LOOM_EAGER_MAX

    /// Applies what is set to `c`.
    void apply_to(config& c) const;
    /// Empty when `c` already has every value set here, else which setting differs (for the
    /// error text).
    [[nodiscard]] auto conflict_with(const config& c) const -> std::string;
};

/// Idle host registrations a device's cache keeps under `c`: LOOM_MR_CACHE_ENTRIES when set;
/// else every one (SIZE_MAX) where the provider does not pin pages at registration, and none
/// where it does (`pins_pages`: its domain requires FI_MR_ALLOCATED, as verbs and EFA do).
[[nodiscard]] auto idle_registrations_kept(const config& c, bool pins_pages) noexcept -> std::size_t;

/// Parses a non-negative decimal with an optional k/m/g (binary) suffix.
[[nodiscard]] auto parse_size(std::string_view text) -> std::optional<std::size_t>;
/// Parses 0/1/true/false/yes/no/on/off.
[[nodiscard]] auto parse_bool(std::string_view text) -> std::optional<bool>;
/// Splits a comma-separated list, dropping empty items.
[[nodiscard]] auto split_list(std::string_view text) -> std::vector<std::string>;

namespace detail {
auto parse_config(const char* (*get)(const char*, void*), void* state) -> result<config>;
}

template <class Get>
auto config::from(Get&& get) -> result<config> {
    return detail::parse_config(
        [](const char* name, void* s) -> const char* { return (*static_cast<std::remove_reference_t<Get>*>(s))(name); },
        &get);
}

}  // namespace loom::plugins
