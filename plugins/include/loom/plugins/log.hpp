// loom/plugins/log.hpp — the runtime's logger: spdlog, forwarded to the host library's logger
// when the adaptor hands one over, stderr otherwise.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <optional>
#include <string_view>

namespace loom::plugins {

/// Receives each formatted record; `user` is what was registered with it.
using host_log_fn = void (*)(void* user, spdlog::level::level_enum level, const char* file, int line,
                             std::string_view message);

/// The process-wide plugin logger ("loom"). Never null.
[[nodiscard]] auto log() -> spdlog::logger&;

/// Routes records to `fn` (nullptr: back to stderr). Thread-safe.
void set_host_logger(host_log_fn fn, void* user) noexcept;

/// Sets the level: `loom_level` (LOOM_LOG_LEVEL) wins; otherwise the level the adaptor read
/// from its host library's own verbosity setting; otherwise warn.
void set_log_level(std::string_view loom_level, std::optional<spdlog::level::level_enum> host_level) noexcept;

}  // namespace loom::plugins

#define LOOM_LOG(lvl, ...) \
    ::loom::plugins::log().log(spdlog::source_loc{__FILE__, __LINE__, SPDLOG_FUNCTION}, lvl, __VA_ARGS__)
#define LOOM_WARN(...) LOOM_LOG(spdlog::level::warn, __VA_ARGS__)
#define LOOM_INFO(...) LOOM_LOG(spdlog::level::info, __VA_ARGS__)
#define LOOM_DEBUG(...) LOOM_LOG(spdlog::level::debug, __VA_ARGS__)
#define LOOM_TRACE(...) LOOM_LOG(spdlog::level::trace, __VA_ARGS__)
