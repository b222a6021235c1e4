// loom/plugins/endpoint_manager.hpp — the runtime's public face for hosts and standalone
// programs: one manager per local device (or virtual device of several NICs), send endpoints
// opened towards a peer's receive endpoint, receive endpoints that peers connect to, one-sided
// operations on a send endpoint's peer, and events delivered by poll() (or a progress thread).
//
//   auto mgr = endpoint_manager::create({.on_event = handle}).value();
//   auto rx = mgr->open_receive_endpoint({}, &my_state).value();     // its address:
//   auto addr = mgr->address_of(rx).value();                         // give it to the peer
//   ...                                                              // on the peer:
//   auto tx = mgr->open_send_endpoint(addr, {}, &my_peer).value();   // event::connected later
//   mgr->send(tx, bytes);                                            // buffered: copied, coalesced
//   while (running) mgr->poll();                                     // events arrive in `handle`
//
// Every call but poll() returns quickly; errc::again means "no room now, poll and retry".
#pragma once

#include <loom/plugins/config.hpp>
#include <loom/plugins/manager_messages.hpp>
#include <loom/plugins/match_bits.hpp>
#include <loom/plugins/memory_key.hpp>
#include <loom/plugins/wire.hpp>

#include <loom/error.hpp>
#include <loom/gpu/memory.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace loom::plugins {

struct memory_handle;

/// How a send endpoint moves data.
enum class send_mode : std::uint8_t {
    /// Messages are copied into pre-registered buffers; several share one network message.
    buffered,
    /// The caller's registered buffer goes out as it is, preceded by a small header (a slot).
    zero_copy,
};

/// How a send endpoint is opened.
struct connection_parameters {
    send_mode mode{send_mode::buffered};  ///< buffered or zero-copy
    /// buffered: bytes per coalescing buffer (the largest batch; a message takes 8 bytes more).
    std::size_t buffer_size{std::size_t{64} * 1024};
    /// buffered: coalescing buffers; zero_copy: header slots (zero-copy messages in flight).
    std::size_t buffer_count{16};
    /// buffered: a partly filled buffer leaves at the first poll() this long after its first
    /// message (0: at the next poll). flush() sends it at once.
    std::chrono::microseconds flush_interval{0};
};

/// How a receive endpoint takes messages.
enum class receive_mode : std::uint8_t {
    /// Into buffers of the endpoint's own pool, handed to the event handler and reused after it.
    pool,
    /// Zero-copy messages into buffers the caller posts (post_receive), in posting order.
    /// Batches of buffered senders still land in the endpoint's own buffers. One peer only.
    posted,
};

/// How a receive endpoint is opened.
struct receive_parameters {
    receive_mode mode{receive_mode::pool};  ///< its own pool, or buffers the caller posts
    /// Largest batch (at least the senders' buffer_size) and, in pool mode, largest zero-copy message.
    std::size_t buffer_size{std::size_t{64} * 1024};
    /// Receives of each kind kept posted per connected sender (at most max_receive_buffers).
    std::size_t buffer_count{8};
};
/// The most receives of each kind a receive endpoint keeps posted per sender.
inline constexpr std::size_t max_receive_buffers = 10;
/// The largest immediate value a one-sided write may carry (46 bits).
inline constexpr std::uint64_t max_immediate_value = immediate::max_user_value;

/// When a one-sided write reports write_complete: once the local buffer may be reused
/// (transmitted), or once the data is visible in the peer's memory (delivered: what a message
/// sent after the completion may announce). Delivered writes carry no immediate data.
enum class write_completion : std::uint8_t {
    transmitted,  ///< once the local buffer may be reused
    delivered     ///< once the data is visible in the peer's memory (no immediate data)
};

/// Opaque handles; 0 is never a valid one. A closed endpoint's handle stays invalid.
enum class send_endpoint_id : std::uint64_t {};
/// The handle of a receive endpoint; 0 is never valid.
enum class receive_endpoint_id : std::uint64_t {};

/// What an event reports.
enum class event_kind : std::uint8_t {
    connected,          ///< a send endpoint's peer accepted it (context: the endpoint's)
    connection_failed,  ///< it never will (error says why); the endpoint stays open until closed
    peer_connected,     ///< a sender connected to a receive endpoint (peer: which one)
    peer_closed,        ///< a connected sender closed its send endpoint, after all it sent was delivered;
                        ///< or (sender set) the receiver closed before this send endpoint: its
                        ///< operations failed with shutdown
    peer_lost,          ///< a connection's peer is dead or unreachable; its operations failed
    message,            ///< a received message (data; header for zero-copy; kind for records)
    send_complete,      ///< a zero-copy send is done with the caller's buffer (context: the send's)
    write_complete,     ///< a one-sided write ended (context: the write's)
    read_complete,      ///< a one-sided read ended
    atomic_complete,    ///< a one-sided atomic ended (its old value is in the caller's result)
    remote_write,       ///< a peer's write with immediate data landed here (value: the data)
    error,              ///< an operation or a received message failed (error says why)
};

/// One event. Spans point into the manager's or the caller's buffers and are valid only during
/// the handler's call.
struct event {
    event_kind kind{};                    ///< what happened
    std::error_code error{};              ///< why, for failures; empty otherwise
    void* context{nullptr};               ///< the endpoint's (connection events, messages) or the operation's
    send_endpoint_id sender{};            ///< the send endpoint concerned, if any
    receive_endpoint_id receiver{};       ///< the receive endpoint concerned, if any
    std::uint32_t peer{0};                ///< receive side: which connected sender (from 1, per endpoint)
    std::uint16_t record{0};              ///< message: its record kind (0 for the user's; zero-copy: 0)
    std::span<const std::byte> data{};    ///< message: its bytes
    std::span<const std::byte> header{};  ///< zero-copy message: the sender's header
    void* buffer_context{nullptr};        ///< posted receive: the context given to post_receive
    std::uint64_t value{0};               ///< remote_write: the immediate data
};

/// The function the manager delivers events to.
using event_handler = std::function<void(const event&)>;

/// How an endpoint manager is created.
struct manager_options {
    /// The runtime's device (NIC, or virtual device from make_virtual); see loom-devices.
    int device{0};
    /// NICs fused into this manager's device: `device` (a NIC then) and the next rails − 1 of
    /// the runtime's device list. Large one-sided writes and reads are striped over them.
    int rails{1};
    event_handler on_event{};  ///< receives every event
    /// Any thread may call any function at any time; the handler runs on one thread at a time.
    bool thread_safe{false};
    /// A thread of the manager calls poll() continuously (implies thread_safe): the handler runs there.
    bool progress_thread{false};
    /// In place of LOOM_* variables (see runtime::acquire: the first user of the process's
    /// runtime sets them; a different value later is invalid_argument).
    config_overrides settings{};
};

/// Connections between processes over the plugin runtime: buffered or zero-copy messages, one-sided reads, writes and
/// atomics, delivered as events from poll().
class endpoint_manager {
public:
    /// Acquires the process's runtime (LOOM_* configuration, device discovery) and opens an
    /// engine of its own on `device`. invalid_argument for an unknown device, rails that do
    /// not exist (or above max_rails, or a virtual device with rails > 1) or no handler.
    [[nodiscard]] static auto create(manager_options options) -> result<std::unique_ptr<endpoint_manager>>;
    /// Closes every endpoint (outstanding operations end first, or are failed), then the engine.
    ~endpoint_manager();
    endpoint_manager(const endpoint_manager&) = delete;
    auto operator=(const endpoint_manager&) -> endpoint_manager& = delete;

    // ---------------------------------------------------------------- receiving
    /// A receive endpoint; senders connect to it through address_of().
    [[nodiscard]] auto open_receive_endpoint(const receive_parameters& params, void* context = nullptr)
        -> result<receive_endpoint_id>;
    /// What a peer passes to open_send_endpoint (fixed size, validated by the peer).
    [[nodiscard]] auto address_of(receive_endpoint_id ep) const -> result<handle_bytes>;
    /// Closes a receive endpoint; its connections end and their senders are told so. Posted
    /// buffers come back as canceled, free to reuse: where a large message is being written
    /// into one, the call first waits until its bytes have landed, its sender has closed or
    /// failed, or none has landed for the peer timeout (at most 5 s). (The endpoint's own pool buffers
    /// are kept until the manager is gone instead.)
    [[nodiscard]] auto close_receive_endpoint(receive_endpoint_id ep) -> void_result;
    /// Posted mode: the next zero-copy message lands in `buffer` (registered through `mh`, or
    /// nullptr to let the manager look it up). The event carries `context` as buffer_context.
    [[nodiscard]] auto post_receive(receive_endpoint_id ep, std::span<std::byte> buffer, memory_handle* mh,
                                    void* context = nullptr) -> void_result;

    // ---------------------------------------------------------------- sending
    /// Starts connecting to the receive endpoint behind `peer_address`; event::connected (or
    /// connection_failed) follows from poll(). Sends before then fail with not_connected.
    [[nodiscard]] auto open_send_endpoint(std::span<const std::byte> peer_address, const connection_parameters& params,
                                          void* context = nullptr) -> result<send_endpoint_id>;
    /// Makes the peer behind `peer_address` known to the provider before anyone connects. A job
    /// that knows all its peers resolves every one of them, then (after its own barrier)
    /// connects: a provider may mishandle traffic from a peer it has not been told about
    /// (tcp;ofi_rxm of libfabric 2.1 crashes on it). invalid_argument for a bad address.
    [[nodiscard]] auto resolve(std::span<const std::byte> peer_address) -> void_result;
    /// Sends what is buffered, waits for outstanding operations (up to LOOM_PEER_TIMEOUT_MS),
    /// then closes the connection.
    [[nodiscard]] auto close_send_endpoint(send_endpoint_id ep) -> void_result;
    /// Free buffers (buffered) or header slots (zero-copy): the least seen since the last call.
    [[nodiscard]] auto available_buffers(send_endpoint_id ep) -> result<std::size_t>;
    /// Buffered: copies `message` into the current buffer (message_too_long when it cannot fit
    /// one; again when every buffer is in flight).
    [[nodiscard]] auto send(send_endpoint_id ep, std::span<const std::byte> message) -> void_result;
    /// Buffered: a record of a runtime component (first_component_kind ≤ kind ≤ last_component_kind).
    [[nodiscard]] auto send_record(send_endpoint_id ep, std::uint16_t kind, std::span<const std::byte> payload)
        -> void_result;
    /// Zero-copy: `data` (inside `mh`) and up to max_header_bytes of `header` (copied).
    /// event::send_complete with `context` once the buffer may be reused.
    [[nodiscard]] auto send(send_endpoint_id ep, std::span<const std::byte> data, memory_handle* mh,
                            std::span<const std::byte> header, void* context = nullptr) -> void_result;
    /// Buffered: sends the current buffer now.
    [[nodiscard]] auto flush(send_endpoint_id ep) -> void_result;
    /// Network messages a send endpoint has sent: batches (buffered), or zero-copy messages.
    [[nodiscard]] auto messages_sent(send_endpoint_id ep) -> result<std::uint64_t>;

    // ---------------------------------------------------------------- memory and one-sided operations
    /// A registration of `buffer`, which is memory of `kind` (host memory through the MR cache;
    /// CUDA device memory with FI_HMEM, exactly). not_supported for a kind this manager cannot
    /// register (see supports_memory); invalid_argument for CUDA memory that is not inside one
    /// device allocation. Registrations left when the manager is destroyed are deregistered then.
    [[nodiscard]] auto register_memory(std::span<std::byte> buffer, gpu::memory_kind kind = gpu::memory_kind::host)
        -> result<memory_handle*>;
    /// Whether memory of `kind` can be registered: host always; CUDA when the provider was
    /// opened with FI_HMEM and a CUDA driver loads; ROCm and Level Zero not yet.
    [[nodiscard]] auto supports_memory(gpu::memory_kind kind) const -> bool;
    /// Nothing for a stale handle or one this manager did not give.
    void deregister(memory_handle* mh) noexcept;
    /// What a peer needs to reach `mh` with write/read/atomics (not_supported without RMA).
    [[nodiscard]] auto remote_key_of(const memory_handle* mh) const -> result<remote_key_bytes>;
    /// Writes `local` to the peer's registration at `offset`; with `immediate` (at most
    /// max_immediate_value) the peer gets event::remote_write once the data is there. Writes
    /// and reads of at least stripe_min bytes per rail are striped over the rails both sides
    /// have (one event for the whole); a write with immediate data stays on the first rail.
    [[nodiscard]] auto write(send_endpoint_id ep, std::span<const std::byte> local, memory_handle* mh,
                             std::span<const std::byte> remote_key, std::uint64_t offset,
                             std::optional<std::uint64_t> immediate = std::nullopt, void* context = nullptr,
                             write_completion completion = write_completion::transmitted) -> void_result;
    /// Reads the peer's registration at `offset` into `local`; event::read_complete with `context` follows.
    [[nodiscard]] auto read(send_endpoint_id ep, std::span<std::byte> local, memory_handle* mh,
                            std::span<const std::byte> remote_key, std::uint64_t offset, void* context = nullptr)
        -> void_result;
    /// The same with a key decoded once (decode_remote_key) instead of its bytes every time.
    [[nodiscard]] auto write(send_endpoint_id ep, std::span<const std::byte> local, memory_handle* mh,
                             const memory_key& remote_key, std::uint64_t offset,
                             std::optional<std::uint64_t> immediate = std::nullopt, void* context = nullptr,
                             write_completion completion = write_completion::transmitted) -> void_result;
    /// The same with a key decoded once.
    [[nodiscard]] auto read(send_endpoint_id ep, std::span<std::byte> local, memory_handle* mh,
                            const memory_key& remote_key, std::uint64_t offset, void* context = nullptr) -> void_result;
    /// Native 64-bit atomics at `offset` (8-byte aligned); the old value lands in *previous.
    /// not_supported where the provider has no native atomics.
    [[nodiscard]] auto fetch_add(send_endpoint_id ep, std::uint64_t increment, std::uint64_t* previous,
                                 std::span<const std::byte> remote_key, std::uint64_t offset, void* context = nullptr)
        -> void_result;
    /// Native 64-bit compare-and-swap at `offset`: `desired` is stored when the value equals `expected`; the old value
    /// lands in *previous.
    [[nodiscard]] auto compare_swap(send_endpoint_id ep, std::uint64_t expected, std::uint64_t desired,
                                    std::uint64_t* previous, std::span<const std::byte> remote_key,
                                    std::uint64_t offset, void* context = nullptr) -> void_result;
    /// Whether the provider has native atomics (fetch_add, compare_swap).
    [[nodiscard]] auto supports_atomics() const noexcept -> bool;
    /// NICs of the manager's device.
    [[nodiscard]] auto rail_count() const noexcept -> int;
    /// One-sided operations (stripes of writes and reads, atomics) submitted on `rail` so far.
    [[nodiscard]] auto one_sided_operations(int rail) const -> std::uint64_t;
    /// Peers the engine has given up so far (silent, gone or unreachable); a peer that closed
    /// its side in order is not among them.
    [[nodiscard]] auto peers_declared_dead() const -> std::uint64_t;

    // ---------------------------------------------------------------- events
    /// Progresses the engine and delivers what happened to the handler, sequentially, outside
    /// the manager's lock (the handler may call the manager). The number of events delivered.
    auto poll() -> std::size_t;

    class impl;

private:
    explicit endpoint_manager(std::unique_ptr<impl> p) noexcept;
    std::unique_ptr<impl> impl_;
};

}  // namespace loom::plugins
