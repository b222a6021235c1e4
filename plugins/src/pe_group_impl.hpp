// The PE group's state, shared by pe_group.cpp (set-up, connections, memory, events, the
// staged atomics' target side) and pe_group_operations.cpp (put, get, atomics, quiet).
// Guarded by impl::mu; the endpoint manager's handler takes it too, so poll() is never called
// while holding it.
#pragma once

#include "poll_until.hpp"

#include <loom/plugins/config.hpp>
#include <loom/plugins/endpoint_manager.hpp>
#include <loom/plugins/manager_messages.hpp>
#include <loom/plugins/pe_group.hpp>
#include <loom/plugins/region_descriptor.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace loom::plugins {

/// Records of the staged atomics (a component's kinds, see manager_messages.hpp).
inline constexpr std::uint16_t amo_request_record = first_component_kind + 16;
inline constexpr std::uint16_t amo_reply_record = first_component_kind + 17;
/// Operations in flight per group; a full pool makes a call progress until one ends.
inline constexpr std::size_t pe_op_pool_size = 1024;
/// Sources and destinations up to this size that are not registered go through a
/// registered bounce slot of the operation.
inline constexpr std::size_t pe_bounce_size = 256;

struct pe_region {
    memory_handle* mh{nullptr};
    std::span<std::byte> range{};
    gpu::memory_kind kind{gpu::memory_kind::host};
    std::size_t in_flight{0};
};

/// One operation in flight: the provider's (or the staged reply's) context.
struct pe_op {
    std::uint32_t index{0};
    std::uint32_t generation{0};
    bool busy{false};
    bool done{false};
    bool waited{false};          ///< a blocking caller frees it once done
    bool awaiting_reply{false};  ///< a staged atomic: its target's answer ends it
    int slot{0};                 ///< pe * queues + queue
    std::error_code error{};
    memory_handle* temporary{nullptr};  ///< registered for this operation only
    pe_region* region{nullptr};         ///< the local registration it uses
    void* result{nullptr};              ///< fetching atomic: where the old value goes
    std::size_t result_size{0};
    std::uint64_t previous{0};  ///< native atomic's old value
    std::byte* bounce{nullptr};
    std::byte* copy_back{nullptr};  ///< get through the bounce slot: the caller's destination
    std::size_t copy_size{0};
};

struct pe_connection {
    send_endpoint_id tx{};
    bool connected{false};
    std::error_code failure{};
};

class pe_group::impl {
public:
    impl(pe_group_options o, config c) : opts(std::move(o)), cfg(std::move(c)) {}

    pe_group_options opts;
    config cfg;
    mutable std::mutex mu;
    std::vector<pe_connection> connections;  ///< [pe * queues + queue]
    std::size_t incoming{0};                 ///< senders connected to our receive endpoint (every PE's queues)
    std::size_t incoming_ended{0};           ///< of them, those that closed (said goodbye) or were lost
    std::unordered_map<std::uint64_t, int> slot_of_tx;
    std::vector<std::size_t> outstanding;          ///< per slot
    std::vector<std::error_code> first_error;      ///< per slot, cleared by quiet
    std::map<std::uintptr_t, pe_region*> regions;  ///< by start address
    std::vector<pe_op> ops;
    std::vector<std::uint32_t> free_ops;
    std::vector<std::byte> bounce_memory;
    pe_region* bounce_region{nullptr};
    struct reply {
        int pe{0};
        std::array<std::byte, 24> bytes{};
    };
    std::vector<reply> replies;  ///< staged answers the network could not take yet
    bool staged{true};
    std::unique_ptr<endpoint_manager> mgr;  ///< after the tables: destroyed first
    receive_endpoint_id rx{};
    handle_bytes my_address{};
    std::jthread progress_thread;

    void on_event(const event& ev);
    void serve_amo(std::span<const std::byte> request);
    void take_reply(std::span<const std::byte> payload);
    void send_replies();
    /// Ends `o` (under mu): accounting, temporary registration, bounce copy, pool.
    void finish(pe_op& o, std::error_code error);
    void fail_slot(int slot, std::error_code why);
    [[nodiscard]] auto find_region(const void* p, std::size_t n) -> pe_region*;
    [[nodiscard]] auto check_target(int pe, int queue) const -> void_result;
    /// An operation from the pool (progressing while it is empty), its local memory chosen.
    [[nodiscard]] auto acquire(int pe, int queue) -> result<pe_op*>;
    [[nodiscard]] auto attach_local(pe_op& o, std::span<std::byte> local, bool is_source)
        -> result<std::pair<std::span<std::byte>, memory_handle*>>;
    void release(pe_op& o);
    /// Retries `submit` after progress while the network says again (up to the peer timeout).
    template <class Submit>
    [[nodiscard]] auto submit_retrying(Submit submit) -> void_result;
    /// Polls outside mu until `done()` (under mu) or the deadline.
    template <class Done>
    [[nodiscard]] auto wait_until(Done done, std::chrono::milliseconds limit) -> bool;
    auto progress_once() -> std::size_t;
    [[nodiscard]] auto wait_op(pe_op& o) -> void_result;
    [[nodiscard]] auto rma(int pe, int queue, std::span<std::byte> local, std::span<const std::byte> remote,
                           std::uint64_t address, bool is_write, bool blocking) -> void_result;
    [[nodiscard]] auto staged_amo(int pe, int queue, const amo_request& r, std::uint64_t address, bool blocking)
        -> void_result;
    [[nodiscard]] auto native_amo(int pe, int queue, const amo_request& r, const remote_view& v, std::uint64_t address)
        -> void_result;
    [[nodiscard]] auto native_step(int pe, int queue, bool cas, std::uint64_t operand, std::uint64_t compare,
                                   const remote_view& v, std::uint64_t offset) -> result<std::uint64_t>;
};

template <class Done>
auto pe_group::impl::wait_until(Done done, std::chrono::milliseconds limit) -> bool {
    return poll_until(mu, done, [this] { progress_once(); }, limit);
}

template <class Submit>
auto pe_group::impl::submit_retrying(Submit submit) -> void_result {
    const auto deadline = std::chrono::steady_clock::now() + cfg.peer_timeout;
    for (;;) {
        auto r = submit();
        if (r || !is_again(r.error())) return r;
        if (std::chrono::steady_clock::now() >= deadline) return make_unexpected(errc::timed_out);
        progress_once();
    }
}

}  // namespace loom::plugins
