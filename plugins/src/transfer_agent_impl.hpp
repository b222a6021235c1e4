// The transfer agent's state, shared by transfer_agent.cpp (set-up, peers, memory,
// notifications, events) and transfer_agent_transfers.cpp (prepare, post, check, release).
// Everything here is guarded by impl::mu; the endpoint manager's handler takes it too, so no
// call into the manager that delivers events (poll) is made while holding it.
#pragma once

#include "poll_until.hpp"

#include <loom/plugins/config.hpp>
#include <loom/plugins/endpoint_manager.hpp>
#include <loom/plugins/transfer_agent.hpp>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <vector>

namespace loom::plugins {

/// The largest piece of a segment one RMA operation carries.
inline constexpr std::size_t transfer_piece_max = std::size_t{64} << 20;

struct local_region {
    memory_handle* mh{nullptr};
    std::span<std::byte> range{};
    gpu::memory_kind kind{gpu::memory_kind::host};
};

struct remote_region {
    std::string peer{};
    public_data data{};
    memory_key key{};  ///< data.key, decoded
};

struct peer_state {
    std::string name{};
    handle_bytes address{};
    send_endpoint_id tx{};
    bool connected{false};
    std::error_code failure{};  ///< set once the connection failed or the peer was lost
};

struct piece {
    transfer* owner{nullptr};
    std::span<std::byte> local{};
    memory_handle* mh{nullptr};
    memory_key key{};  ///< the peer's, decoded once
    std::uint64_t offset{0};
};

struct transfer {
    transfer_op op{};
    std::string peer{};
    std::vector<piece> pieces{};
    std::size_t next{0};         ///< the first piece not posted yet
    std::size_t outstanding{0};  ///< posted, not ended
    bool in_flight{false};
    bool abandoned{false};       ///< released while in flight
    std::string notification{};  ///< encoded (its capacity kept for the next post)
    bool notify{false};          ///< `notification` is sent once the pieces are done
    std::error_code error{};
};

class transfer_agent::impl {
public:
    explicit impl(agent_options o, config c) : opts(std::move(o)), cfg(std::move(c)) {}

    agent_options opts;
    config cfg;
    mutable std::mutex mu;
    std::map<std::string, std::unique_ptr<peer_state>, std::less<>> peers;
    std::unordered_set<local_region*> locals;
    std::unordered_set<remote_region*> remotes;
    std::unordered_set<transfer*> transfers;
    std::unordered_set<transfer*> abandoned;  ///< released in flight: freed once their pieces ended
    std::vector<transfer*> active;            ///< in flight: pumped by check() and the progress thread
    std::vector<notification> inbox;
    std::unique_ptr<endpoint_manager> mgr;  ///< after the maps: destroyed first
    receive_endpoint_id rx{};
    std::string info;
    std::atomic<bool> stopping{false};
    std::jthread progress_thread;

    void on_event(const event& ev);
    /// Posts what the network takes of `t` and, once its pieces are done, its notification.
    /// Under mu.
    void pump(transfer& t);
    void pump_active();
    /// One round of progress: the manager's events (outside mu), then every active transfer.
    auto progress_once() -> std::size_t;
    /// Why `name` cannot be used now (no_entry, or its connection's failure); none if usable.
    [[nodiscard]] auto peer_problem(std::string_view name) -> std::error_code;
    [[nodiscard]] auto find_peer(std::string_view name) -> peer_state*;
    /// The peer whose connection is the send endpoint `tx`; null when none (also for an event
    /// without a send endpoint, or when its peer was removed).
    [[nodiscard]] auto peer_of(send_endpoint_id tx) -> peer_state*;
    [[nodiscard]] auto open_peer(std::string_view name, const handle_bytes& address) -> void_result;
    /// Polls outside mu until `done()` (evaluated under mu) or the deadline.
    template <class Done>
    [[nodiscard]] auto wait_until(Done done, std::chrono::milliseconds limit) -> bool;
    void run_progress(const std::stop_token& stop);
};

template <class Done>
auto transfer_agent::impl::wait_until(Done done, std::chrono::milliseconds limit) -> bool {
    return poll_until(mu, done, [this] { progress_once(); }, limit);
}

}  // namespace loom::plugins
