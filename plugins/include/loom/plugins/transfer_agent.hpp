// loom/plugins/transfer_agent.hpp — named agents that move lists of memory segments to and
// from each other by RMA, with notifications: what a transfer library's backend needs, over
// one endpoint manager.
//
//   auto a = transfer_agent::create({.name = "A"}).value();
//   auto info = a->connection_info();                       // give to the peers
//   b->add_peer("A", as_bytes_of(info));                    // on B: connects in the background
//   auto* mine = a->register_memory(buffer).value();        // on A
//   auto pub = a->public_data(mine).value();                // give to the peers
//   auto* theirs = b->load_remote("A", as_bytes_of(pub)).value();
//   auto* t = b->prepare(transfer_op::write, "A", segments)  // {local, lreg, remote_addr, theirs}....value();
//   b->post(t, "done");                                     // A gets ("B", "done") after the data
//   while (b->check(t).value() == transfer_state::in_progress) {}
//
// Calls never block without bound: what the network cannot take now is queued on the transfer
// and posted by later check() calls (or the progress thread); blocking calls give up after the
// runtime's LOOM_PEER_TIMEOUT_MS. A peer that dies fails its transfers with an error.
#pragma once

#include <loom/plugins/agent_messages.hpp>
#include <loom/plugins/config.hpp>

#include <loom/error.hpp>
#include <loom/gpu/memory.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace loom::plugins {

struct memory_handle;

/// How a transfer agent is created.
struct agent_options {
    std::string name{};                           ///< the agent's name, which its peers know it by
    int device{0};                                ///< the runtime's device (see loom-devices)
    int rails{1};                                 ///< NICs from `device` on (endpoint_manager)
    bool progress_thread{false};                  ///< a thread of the agent progresses transfers
    std::chrono::microseconds progress_delay{0};  ///< its pause when there was nothing to do
    config_overrides settings{};                  ///< in place of LOOM_* (endpoint_manager)
};

/// The direction of a transfer: read from the peer, or write to it.
enum class transfer_op : std::uint8_t {
    read,  ///< read from the peer's memory into the local segments
    write  ///< write the local segments to the peer's memory
};
/// Where a transfer stands.
enum class transfer_state : std::uint8_t {
    done,        ///< every segment has completed; the transfer may be posted again
    in_progress  ///< still in flight
};

/// A registration of this agent's memory.
struct local_region;
/// A peer's registration, known from its public data.
struct remote_region;
/// A prepared transfer; reusable once done.
struct transfer;

/// One piece of a transfer: local bytes and where they are in the peer's memory.
struct segment {
    std::span<std::byte> local{};                       ///< read: where the bytes land; write: what is sent
    const local_region* local_registration{nullptr};    ///< the registration `local` lies in
    std::uint64_t remote_address{0};                    ///< in the peer's address space
    const remote_region* remote_registration{nullptr};  ///< the peer's region it lies in
};

/// Moves data between named peers' registered memory with one-sided reads and writes, each write optionally followed by
/// a notification.
class transfer_agent {
public:
    /// Opens an endpoint manager on options.device and a receive endpoint for the peers.
    /// invalid_argument for an empty or too long name.
    [[nodiscard]] static auto create(agent_options options) -> result<std::unique_ptr<transfer_agent>>;
    /// Fails what is outstanding, closes every connection, then the manager.
    ~transfer_agent();
    transfer_agent(const transfer_agent&) = delete;
    auto operator=(const transfer_agent&) -> transfer_agent& = delete;

    /// The agent's name.
    [[nodiscard]] auto name() const noexcept -> const std::string&;

    // ---------------------------------------------------------------- peers
    /// This agent's name and receive address as a versioned, checksummed string.
    [[nodiscard]] auto connection_info() const -> std::string;
    /// Knows `name` by its connection info (which must name it) and starts connecting to it.
    /// Adding the same info again is nothing; other info for a known name is invalid_argument.
    [[nodiscard]] auto add_peer(std::string_view name, std::span<const std::byte> info) -> void_result;
    /// Waits (up to LOOM_CONNECT_TIMEOUT_MS) until the connection to `name` is up.
    [[nodiscard]] auto connect(std::string_view name) -> void_result;
    /// Closes the connection to `name` and forgets it (its remote regions stay loaded but
    /// unusable until the peer is added again). no_entry for an unknown name.
    [[nodiscard]] auto remove_peer(std::string_view name) -> void_result;
    /// True when `name` was added and not removed.
    [[nodiscard]] auto knows_peer(std::string_view name) const -> bool;
    /// Whether the connection to `name` is up (without waiting, unlike connect()).
    [[nodiscard]] auto is_connected(std::string_view name) const -> bool;

    // ---------------------------------------------------------------- memory
    /// Registers `buffer`, memory of `kind` (CUDA device memory needs FI_HMEM: see
    /// supports_memory; not_supported otherwise).
    [[nodiscard]] auto register_memory(std::span<std::byte> buffer, gpu::memory_kind kind = gpu::memory_kind::host)
        -> result<local_region*>;
    /// Whether memory of `kind` can be registered (endpoint_manager::supports_memory).
    [[nodiscard]] auto supports_memory(gpu::memory_kind kind) const -> bool;
    /// The kind `region` was registered as; invalid_argument for a region this agent does not hold.
    [[nodiscard]] auto memory_kind_of(const local_region* region) const -> result<gpu::memory_kind>;
    /// invalid_argument for a region this agent does not hold (stale or foreign).
    [[nodiscard]] auto deregister(local_region* region) -> void_result;
    /// Address, length and remote key of `region`, for the peers' load_remote.
    [[nodiscard]] auto public_data(const local_region* region) const -> result<std::string>;
    /// A peer's region from its public data (the peer must be known).
    [[nodiscard]] auto load_remote(std::string_view peer, std::span<const std::byte> data) -> result<remote_region*>;
    /// Forgets a peer's region; invalid_argument for a region this agent does not hold.
    [[nodiscard]] auto unload(remote_region* region) -> void_result;

    // ---------------------------------------------------------------- transfers
    /// Checks every segment (lengths equal, local inside its registration, remote inside a
    /// region of `peer`) and keeps them. The peer may be this agent (a local transfer).
    [[nodiscard]] auto prepare(transfer_op op, std::string_view peer, std::span<const segment> segments)
        -> result<transfer*>;
    /// Starts a prepared transfer that is not in flight; with a notification the peer gets
    /// (this agent's name, *notification) once every byte of a write has landed there.
    [[nodiscard]] auto post(transfer* t, std::optional<std::string_view> notification = std::nullopt)
        -> result<transfer_state>;
    /// Progresses (without a progress thread) and reports; a failed transfer reports its
    /// error until it is posted again.
    [[nodiscard]] auto check(transfer* t) -> result<transfer_state>;
    /// Forgets `t`; one in flight is abandoned: what is posted ends unseen, nothing more is
    /// posted and no notification is sent. invalid_argument for an unknown handle.
    [[nodiscard]] auto release(transfer* t) -> void_result;

    // ---------------------------------------------------------------- notifications
    /// Sends (this agent's name, message) to `peer` (waits for room up to LOOM_PEER_TIMEOUT_MS).
    [[nodiscard]] auto notify(std::string_view peer, std::string_view message) -> void_result;
    /// Notifications received since the last call, in arrival order per sender.
    [[nodiscard]] auto take_notifications() -> std::vector<notification>;

    /// One round of progress (what check() does without a progress thread).
    void progress();

    class impl;

private:
    explicit transfer_agent(std::unique_ptr<impl> p) noexcept;
    std::unique_ptr<impl> impl_;
};

}  // namespace loom::plugins
