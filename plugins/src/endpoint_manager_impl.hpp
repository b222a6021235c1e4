// The endpoint manager's state, shared by its source files (one per responsibility:
// endpoint_manager.cpp set-up, handles and event delivery; manager_send.cpp send endpoints;
// manager_receive.cpp receive endpoints; manager_one_sided.cpp memory, RMA and atomics).
// Everything here is touched under the engine lock only: the engine's watchdog thread may
// progress it (and so end one-sided operations) while the caller is elsewhere.
#pragma once

#include <loom/plugins/endpoint_manager.hpp>
#include <loom/plugins/engine.hpp>

#include <loom/memory_region.hpp>

#include <array>
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace loom::plugins {

inline constexpr std::size_t max_send_buffers = 64;
inline constexpr std::size_t one_sided_slots = 64;  ///< one-sided operations in flight per send endpoint
/// The engine's user tags a connection's messages travel on (each has its own sequence).
inline constexpr std::uint32_t tag_batch = 1;
inline constexpr std::uint32_t tag_zc_header = 2;
inline constexpr std::uint32_t tag_zc_data = 3;

struct send_ep;

/// One one-sided operation in flight; its operands and result live here, in memory the
/// endpoint registered (providers that need local registrations for atomics get one).
struct one_sided_op : foreign_op {
    enum class what : std::uint8_t { write, read, fetch_add, compare_swap } op{};
    endpoint_manager::impl* mgr{nullptr};
    send_ep* ep{nullptr};
    void* context{nullptr};
    std::span<std::byte> local{};
    const memory_region* local_mr{nullptr};
    remote_memory remote{};
    std::optional<std::uint64_t> immediate{};
    bool delivered{false};  ///< write: complete once visible at the peer (FI_DELIVERY_COMPLETE)
    alignas(8) std::uint64_t operand{0};
    std::uint64_t compare{0};
    std::uint64_t result{0};
    std::uint64_t* previous{nullptr};
    bool used{false};
    /// A striped operation is several pieces, one per rail: the first (the lead) ends the
    /// caller's operation once every piece has ended, with the first error any piece had.
    one_sided_op* lead{nullptr};
    int pieces_left{0};
    std::error_code first_error{};
    /// The lead's event went out early (peer lost, endpoint closed): the provider's completions
    /// only free the slots, which the provider may hold a while yet (or for good: shm).
    bool reported{false};
};

/// What a write or read carries besides its buffers.
struct rma_settings {
    std::optional<std::uint64_t> immediate{};
    bool delivered{false};
    void* context{nullptr};
};

/// A zero-copy send: its header slot's request and the data's.
struct zero_copy_send {
    send_request* header{nullptr};
    send_request* data{nullptr};
    void* context{nullptr};
    bool used{false};
};

enum class link_state : std::uint8_t { connecting, ready, failed };

struct send_ep {
    std::uint32_t gen{0};
    send_endpoint_id id{};
    connection_parameters params{};
    void* context{nullptr};
    handle_bytes peer_address{};
    sender* chan{nullptr};
    link_state state{link_state::connecting};
    bool lost_reported{false};
    /// buffered: the coalescing buffers; zero-copy: header slots; then room for the goodbye batch
    std::vector<std::byte> storage{};
    memory_handle* storage_mh{nullptr};
    // buffered
    std::vector<send_request*> in_flight{};  ///< per buffer: its batch on the wire, or nullptr
    std::vector<int> free_buffers{};
    int current{-1};  ///< the buffer being filled
    std::optional<batch_writer> writer{};
    clock::time_point first_message{};
    // zero-copy
    std::vector<zero_copy_send> zc{};
    std::size_t zc_free{0};
    std::size_t least_available{0};  ///< since the last available_buffers()
    std::uint64_t messages_sent{0};  ///< batches or zero-copy messages handed to the engine
    // one-sided
    std::array<one_sided_op, one_sided_slots> ops{};
    memory_handle* ops_mh{nullptr};
    std::size_t ops_in_flight{0};

    [[nodiscard]] auto buffer(int i) noexcept -> std::span<std::byte> {
        return std::span{storage}.subspan(static_cast<std::size_t>(i) * params.buffer_size, params.buffer_size);
    }
    [[nodiscard]] auto available() const noexcept -> std::size_t {
        return params.mode == send_mode::buffered ? free_buffers.size() : zc_free;
    }
};

/// A ring of receives kept posted into fixed buffers, handled in posting order.
struct receive_ring {
    std::vector<recv_request*> req{};  ///< per buffer: its receive, nullptr while not posted
    std::size_t head{0};               ///< the buffer whose message comes next
};

/// A sender connected to a receive endpoint.
struct recv_conn {
    receiver* chan{nullptr};
    std::uint32_t peer{0};
    bool lost{false};
    bool retiring{false};               ///< closed by its peer or lost: goes after the events are delivered
    std::optional<goodbye> farewell{};  ///< what the peer said it sent before closing
    std::uint64_t batches_taken{0}, zero_copy_taken{0};
    std::vector<std::byte> storage{};  ///< batch buffers, header slots, then (pool mode) data buffers
    memory_handle* storage_mh{nullptr};
    receive_ring batches{}, headers{}, data{};
    /// Posted mode: the caller's buffers, in posting order, with their receives once posted.
    struct posted_buffer {
        std::span<std::byte> buffer{};
        memory_handle* mh{nullptr};
        void* context{nullptr};
        recv_request* req{nullptr};
    };
    std::deque<posted_buffer> posted{};
};

struct recv_ep {
    std::uint32_t gen{0};
    receive_endpoint_id id{};
    receive_parameters params{};
    void* context{nullptr};
    listener* listen{nullptr};
    handle_bytes address{};
    std::uint32_t next_peer{1};
    std::vector<std::unique_ptr<recv_conn>> conns{};
    std::deque<recv_conn::posted_buffer> unclaimed{};  ///< posted before the peer connected
};

/// A buffer to post again once the handler has seen what landed in it.
struct repost {
    receive_endpoint_id ep{};
    recv_conn* conn{nullptr};
    receive_ring* ring{nullptr};
    std::size_t buffer{0};
};

class endpoint_manager::impl {
public:
    impl(manager_options o, std::unique_ptr<engine> e) noexcept;
    ~impl();

    // endpoint_manager.cpp
    auto lookup(send_endpoint_id id) noexcept -> send_ep*;
    auto lookup(receive_endpoint_id id) noexcept -> recv_ep*;
    /// f(endpoint) under the engine lock; invalid_argument for an unknown or closed handle.
    template <class Id, class F>
    auto with(Id id, F&& f) -> decltype(f(*lookup(id))) {
        std::lock_guard lock(eng->mutex());
        auto* e = lookup(id);
        if (e == nullptr) return make_unexpected(errc::invalid_argument);
        return f(*e);
    }
    void emit(const event& e) { pending_.push_back(e); }
    auto poll() -> std::size_t;
    void start_progress_thread();
    void close_all() noexcept;

    // manager_send.cpp
    auto open_send(std::span<const std::byte> peer, const connection_parameters& p, void* ctx)
        -> result<send_endpoint_id>;
    auto close_send(send_ep& s) -> void_result;
    auto send_buffered(send_ep& s, std::uint16_t kind, std::span<const std::byte> msg) -> void_result;
    auto send_zero_copy(send_ep& s, std::span<const std::byte> data, memory_handle* mh,
                        std::span<const std::byte> header, void* ctx) -> void_result;
    auto flush(send_ep& s) -> void_result;
    void say_goodbye(send_ep& s, clock::time_point deadline);
    template <class Busy>
    void wait_while(send_ep& s, Busy&& busy, clock::time_point deadline);
    void progress_send(send_ep& s);

    // manager_receive.cpp
    auto open_receive(const receive_parameters& p, void* ctx) -> result<receive_endpoint_id>;
    void close_receive(recv_ep& r) noexcept;
    auto post_receive(recv_ep& r, std::span<std::byte> buf, memory_handle* mh, void* ctx) -> void_result;
    void progress_receive(recv_ep& r);
    void connect_peer(recv_ep& r, receiver& chan);
    auto post_ring(recv_ep& r, recv_conn& c, receive_ring& ring, std::size_t b) -> bool;
    void post_waiting(recv_ep& r, recv_conn& c);
    void take_batches(recv_ep& r, recv_conn& c);
    void take_zero_copy(recv_ep& r, recv_conn& c);
    void repost_all();
    void retire_connections();
    /// Closes a connection and returns its posted buffers as canceled; keeps it (abandoned_receives)
    /// while its peer may still write into it.
    void end_connection(const recv_ep& r, std::unique_ptr<recv_conn>& c);
    void cancel_posted(const recv_ep& r, const recv_conn::posted_buffer& pb, std::uint32_t peer);
    void check_farewell(recv_ep& r, recv_conn& c);

    // manager_one_sided.cpp
    /// The checks every one-sided operation passes: the peer's key, decoded.
    auto check_one_sided(const send_ep& s, const memory_key& key, std::uint64_t offset, std::size_t length)
        -> void_result;
    /// A free slot set up for `length` bytes at `offset` of the peer's registration, on `rail`.
    auto take_op(send_ep& s, one_sided_op::what what, const memory_key& key, int rail, std::uint64_t offset,
                 std::size_t length) -> one_sided_op*;
    /// write / read: striped over the rails both sides have when large (not with immediate data).
    auto post_rma(send_ep& s, one_sided_op::what what, std::span<std::byte> local, memory_handle& mh,
                  const memory_key& key, std::uint64_t offset, const rma_settings& how) -> void_result;
    /// fetch_add / compare_swap: their checks, then the operation (compare unused by fetch_add).
    auto post_atomic(send_endpoint_id ep, one_sided_op::what what, std::uint64_t operand, std::uint64_t compare,
                     std::uint64_t* previous, std::span<const std::byte> remote_key, std::uint64_t offset,
                     void* context) -> void_result;
    static auto submit_one_sided(foreign_op& f, endpoint& ep, fabric_addr peer) noexcept -> int;
    static void end_one_sided(foreign_op& f, std::error_code why) noexcept;
    /// Ends every one-sided operation of `s` not yet reported with `why`, at once.
    void report_one_sided(send_ep& s, errc why);
    static void on_remote_data(void* self, std::uint64_t value) noexcept;

    manager_options opts;
    std::unique_ptr<engine> eng;
    std::vector<std::unique_ptr<send_ep>> sends{};
    std::vector<std::unique_ptr<recv_ep>> receives{};
    std::vector<std::unique_ptr<send_ep>> abandoned{};  ///< closed with operations the provider still holds
    /// Connections closed while their peer may still write into their buffers (awaits_writes).
    std::vector<std::unique_ptr<recv_conn>> abandoned_receives{};
    std::vector<memory_handle*> registrations_{};  ///< the caller's, deregistered at the end if still there
    std::vector<event> pending_{};                 ///< events not yet delivered (under the engine lock)
    std::vector<event> delivering_{};              ///< the batch poll() hands to the handler
    std::vector<repost> reposts_{};
    std::vector<repost> reposting_{};
    std::vector<repost> retiring_{};  ///< connections to close after delivery (ring unused)
    std::uint32_t next_gen_{0};       ///< handle generations, never reused
    std::mutex delivery_mu_{};        ///< thread_safe: one poll at a time delivers
    std::atomic<bool> stop_{false};
    std::thread progress_thread_{};
};

/// A handle's index (low 32 bits, from 1) and generation (high 32 bits).
[[nodiscard]] constexpr auto make_id(std::size_t index, std::uint32_t gen) noexcept -> std::uint64_t {
    return (std::uint64_t{gen} << 32) | (index + 1);
}

}  // namespace loom::plugins
