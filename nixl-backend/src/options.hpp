// The LOOM backend's options: what get_backend_options advertises and how the parameters an
// agent passes to create_backend become the transfer agent's options.
#pragma once

#include "nixl_abi.hpp"

#include <loom/plugins/transfer_agent.hpp>

#include <expected>
#include <string>

namespace loom::nixl_backend {

/// Names and defaults, as NIXL shows them (get_plugin_params / get_backend_params).
[[nodiscard]] auto default_options() -> nixl_b_params_t;

/// The agent's name and progress settings from NIXL's init parameters, then the custom
/// parameters: device (the runtime's device index, see loom-devices), progress_thread (0/1,
/// or NIXL's enableProgTh), progress_delay_us (or NIXL's pthrDelay). A malformed value is an
/// error naming it; an unknown key is an error too (a misspelt option must not pass unseen).
[[nodiscard]] auto parse_options(const nixlBackendInitParams& params)
    -> std::expected<plugins::agent_options, std::string>;

}  // namespace loom::nixl_backend
