// loom/plugins/engine.hpp — the shared plugin runtime: NIC discovery, one connectionless RDM
// engine per NIC, one-directional channels over it, fixed request pools and caller-driven
// progress. Host-library adaptors map their ABIs onto this.
//
// Tags (64 bits) carry the whole matching state, so nothing relies on FIFO completion:
//   63..62 kind (0 data, 1 rendezvous request, 2 control, 3 clear-to-send)
//   61..44 channel id assigned by the side that receives the message (18 bits)
//   43..32 per-(channel, user tag) sequence number (12 bits, wraps)
//   31..0  the user's tag
// Rendezvous: the sender's RTS (no payload; size as immediate data) matches the receive slot;
// the receiver answers CTS {address,
// key, length, completion id}; the sender RMA-writes with immediate data {receiver channel,
// request, slot, chunk length}; the receiver completes when every byte it expects has landed.
#pragma once

#include <loom/plugins/channels.hpp>
#include <loom/plugins/config.hpp>
#include <loom/plugins/control_messages.hpp>
#include <loom/plugins/device_registry.hpp>
#include <loom/plugins/limits.hpp>
#include <loom/plugins/match_bits.hpp>
#include <loom/plugins/memory_key.hpp>
#include <loom/plugins/operation.hpp>
#include <loom/plugins/rail.hpp>
#include <loom/plugins/request_pool.hpp>
#include <loom/plugins/requests.hpp>
#include <loom/plugins/submission_queue.hpp>
#include <loom/plugins/topology.hpp>
#include <loom/plugins/wire.hpp>

#include <loom/address_vector.hpp>
#include <loom/completion_queue.hpp>
#include <loom/domain.hpp>
#include <loom/endpoint.hpp>
#include <loom/fabric.hpp>
#include <loom/fabric_info.hpp>
#include <loom/mr_cache.hpp>
#include <loom/plugins/engine_lock.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace loom::plugins {

class engine;

/// Device memory or a DMA-BUF to register. `iface` system with a
/// descriptor is a host DMA-BUF.
struct device_memory {
    hmem_iface iface{hmem_iface::system};  ///< the memory's HMEM interface
    std::uint64_t device{0};               ///< the device on it
    int dmabuf_fd{-1};                     ///< ≥ 0: register through the DMA-BUF
    std::uint64_t dmabuf_offset{0};        ///< offset of the buffer's first byte in the DMA-BUF
};

/// Where CUDA memory at [data, data+size) lives (interface, device ordinal), for registering it
/// on `e`. not_supported when the engine was opened without FI_HMEM or no CUDA driver loads;
/// invalid_argument when the range is not inside one device allocation.
[[nodiscard]] auto locate_cuda_memory(const engine& e, const void* data, std::size_t size) -> result<device_memory>;

/// Per-engine counters (exact; read under the engine lock).
struct engine_stats {
    /// Sends by kind (eager, rendezvous, of them injected), receive buffers filled, and receives truncated.
    /// @{
    std::uint64_t eager_sends{0}, rendezvous_sends{0}, injects{0}, recvs{0}, truncated{0};
    /// @}
    /// Submissions retried after FI_EAGAIN, error completions, peers declared dead, and flush reads.
    /// @{
    std::uint64_t eagain_retries{0}, cq_errors{0}, peers_declared_dead{0}, flush_reads{0};
    /// @}
    /// Pings and pongs received on the liveness endpoint (none where they go with the data).
    std::uint64_t liveness_link_messages{0};
    /// Pings sent to waited-on peers, and pings the provider refused for now (FI_EAGAIN; sent
    /// again refused_ping_retry later).
    /// @{
    std::uint64_t pings_sent{0}, pings_refused{0};
    /// @}
};

/// Where an engine's liveness pings and pongs go (LOOM_LIVENESS_ENDPOINT and the provider facts).
enum class liveness_route : std::uint8_t {
    with_the_data,     ///< on the data's endpoint, behind what it has queued
    own_endpoint,      ///< on a second endpoint of the data's domain and completion queue
    another_provider,  ///< on an endpoint of provider_facts::liveness_provider, with its own queue
};

/// One NIC's endpoint, completion queue, address vector and registration cache — or, for a
/// virtual device, several NICs (rails): control and eager traffic on the first, rendezvous
/// writes striped over all of them.
class engine {
public:
    /// An engine on NIC `n`. invalid_argument: a peer timeout below min_peer_timeout (liveness.hpp).
    [[nodiscard]] static auto open(const nic& n, const config& cfg) -> result<std::unique_ptr<engine>>;
    /// An engine over several NICs (a virtual device): the first carries control and eager traffic.
    [[nodiscard]] static auto open(const std::vector<nic>& rails, const config& cfg) -> result<std::unique_ptr<engine>>;
    /// NICs (rails) it uses.
    [[nodiscard]] auto rail_count() const noexcept -> int { return 1 + static_cast<int>(extra_.size()); }
    /// RMA writes issued on rail i so far (exact; read under the engine lock).
    [[nodiscard]] auto rail_writes(int i) const noexcept -> std::uint64_t;
    /// Foreign operations (one-sided RMA and atomics of the layers above) submitted on rail i.
    [[nodiscard]] auto rail_one_sided(int i) const noexcept -> std::uint64_t;
    ~engine();
    engine(const engine&) = delete;
    auto operator=(const engine&) -> engine& = delete;

    /// The NIC (of rail 0).
    [[nodiscard]] auto nic_info() const noexcept -> const nic& { return nic_; }
    /// Its endpoint's address (rail 0).
    [[nodiscard]] auto local_address() const noexcept -> const address& { return self_; }
    /// Largest message sent eagerly; larger ones go by rendezvous.
    [[nodiscard]] auto eager_max() const noexcept -> std::size_t { return eager_max_; }
    /// The configuration it was opened with.
    [[nodiscard]] auto settings() const noexcept -> const config& { return cfg_; }
    /// Its counters.
    [[nodiscard]] auto stats() const noexcept -> const engine_stats& { return stats_; }
    /// Where its liveness pings and pongs go (to peers that have the same; else with the data).
    [[nodiscard]] auto route_of_liveness() const noexcept -> liveness_route;
    /// The counters of the first NIC's host registration cache.
    [[nodiscard]] auto host_cache_stats() const -> mr_cache_stats { return main_->cache->stats(); }
    /// The engine lock (asymmetric: the data-path thread enters without an atomic
    /// read-modify-write; see engine_lock.hpp).
    [[nodiscard]] auto mutex() noexcept -> engine_lock& { return mu_; }

    // All calls below require the engine lock (the adaptors take it per ABI call).

    /// Drains the completion queue, dispatching by context, retries deferred submissions and
    /// checks deadlines. Never blocks.
    void progress() noexcept;

    /// A listener; `handle_out` gets what a connector needs to reach it.
    [[nodiscard]] auto listen(handle_bytes& handle_out) -> result<listener*>;
    /// Starts (first call) or continues a connection to the listener behind `handle`. Returns
    /// nullptr while the handshake runs, the channel once the peer accepted.
    [[nodiscard]] auto connect(std::span<const std::byte> handle, const void* handle_key) -> result<sender*>;
    /// Inserts the address behind `handle` into the address vector now (connect does it too).
    [[nodiscard]] auto resolve(std::span<const std::byte> handle) -> void_result;
    /// Gives up a connection connect(…, handle_key) has not returned yet (nothing if none).
    void abandon_connect(const void* handle_key) noexcept;
    /// A receive channel for the next connector, or nullptr when none has arrived yet.
    [[nodiscard]] auto accept(listener& l) -> result<receiver*>;
    /// Closes a listener.
    void close(listener& l) noexcept;
    /// Completes or cancels every outstanding request, then retires the channel.
    void close(sender& s) noexcept;
    /// Completes or cancels every outstanding request, then retires the channel.
    void close(receiver& r) noexcept;
    /// Tells the channel's peer that this side closes (call it before close): a sender's
    /// waiting sends there fail now rather than at the peer timeout, and neither side's
    /// monitor gives the other up for its silence. Only while the peer may still be open: to a
    /// closed one, the notice stays in its provider as an unexpected message.
    void announce_close(channel_base& c) noexcept;
    /// Whether the receiver's peer may still write into its buffers: a clear-to-send went out
    /// for bytes that have not landed. Memory behind them must outlive the engine then.
    [[nodiscard]] auto awaits_writes(const receiver& r) const noexcept -> bool;
    /// Progresses until no write is awaited on `r` any more (awaits_writes), its peer has
    /// closed or failed, or no byte has landed for the peer timeout (at most 5 s): what a
    /// receiver whose buffers are its caller's does before closing, so that none comes back
    /// with a write still on its way into it.
    void wait_for_writes(receiver& r) noexcept;

    /// Host memory through the MR caches, or device memory / a DMA-BUF (`dev`) registered
    /// exactly and deregistered when the handle goes (device allocations get reused).
    [[nodiscard]] auto register_memory(void* data, std::size_t size, const device_memory* dev = nullptr)
        -> result<memory_handle*>;
    /// Whether the provider was opened with FI_HMEM (device memory can be registered).
    [[nodiscard]] auto hmem() const noexcept -> bool;
    /// Releases a registration; the handle becomes dead.
    void deregister(memory_handle& m) noexcept;

    /// nullptr (with ok) when the pool is exhausted: retry later.
    [[nodiscard]] auto isend(sender& s, const void* data, std::size_t size, std::uint32_t tag, memory_handle* mh)
        -> result<send_request*>;
    /// A receive of `n` buffers (data, sizes, tags, handles or null); nullptr (with ok) when the pool is exhausted.
    [[nodiscard]] auto irecv(receiver& r, int n, void* const* data, const std::size_t* sizes, const int* tags,
                             memory_handle* const* mh) -> result<recv_request*>;
    /// Progresses and reports completion; a done request is released. sizes: n entries.
    [[nodiscard]] auto test(request_base& req, bool& done, std::size_t* sizes, int n_sizes) -> errc {
        // Inline: hosts poll a pending request many times; only the last call completes it.
        if (!req.done) {
            progress();  // a request done at submission (inject) needs no queue read
            if (!req.done) {
                done = false;
                return errc::success;
            }
        }
        done = true;
        return complete(req, sizes, n_sizes);
    }
    /// Makes received data visible to its device: an RMA read (from this endpoint to itself) of
    /// a few bytes of every non-empty buffer that is device memory (or of every registered
    /// buffer when `all`). nullptr when nothing needs a read (done already); the
    /// request otherwise, completed through test(). not_supported without RMA.
    [[nodiscard]] auto iflush(receiver& r, int n, void* const* data, const std::size_t* sizes, memory_handle* const* mh,
                              bool all) -> result<recv_request*>;

    /// True for a registration of this engine that is still live.
    [[nodiscard]] auto is_live(const memory_handle* m) const noexcept -> bool {
        return m != nullptr && m->magic.load(std::memory_order_relaxed) == magic_mr && m->eng == this;
    }
    /// No handle, or a live one of this engine whose registration holds [p, p+n).
    [[nodiscard]] auto covers(const memory_handle* m, const void* p, std::size_t n) const noexcept -> bool {
        return m == nullptr || (is_live(m) && m->reg.contains(p, n));
    }

    /// Free requests in a sender's pool (released ones put back first).
    [[nodiscard]] auto free_requests(sender& s) noexcept -> int {
        (void)has_free(s);
        return static_cast<int>(s.pool.free_count());
    }
    /// Submits a foreign operation to `o.chan`'s peer (a ready sender or receiver).
    void post_foreign(foreign_op& o) noexcept;
    /// The key a peer's one-sided operations on `m` need. io_error when the provider has none.
    [[nodiscard]] auto export_key(const memory_handle& m) const -> result<memory_key>;
    /// Whether the endpoint was opened with FI_ATOMIC (native atomics).
    [[nodiscard]] auto atomics() const noexcept -> bool;
    /// Called (under the engine lock) for every RMA write with user immediate data
    /// (immediate::make_user_value) that lands here.
    using remote_data_hook = void (*)(void* context, std::uint64_t value) noexcept;
    /// Sets the hook for RMA writes with user immediate data (null: none).
    void set_remote_data_hook(remote_data_hook h, void* context) noexcept {
        remote_data_hook_ = h;
        remote_data_context_ = context;
    }

    /// Called (under the engine lock) once for every request marked `profiled` when the host's
    /// view of it ends: reported done by test(), or failed by close(). Adaptors close the host
    /// profiler's events there.
    using release_hook = void (*)(request_base&) noexcept;
    /// Sets the hook for the end of profiled requests (null: none).
    void set_release_hook(release_hook h) noexcept { release_hook_ = h; }

private:
    explicit engine(std::unique_ptr<rail> main)
        : main_(std::move(main)), cq_(main_->cq), ep_(main_->ep), cache_(main_->cache.get()), self_(main_->self) {}
    /// At destruction: true when the rails were handed to the process's keep (engine.cpp).
    auto keep_rails_for_local_peers() noexcept -> bool;
    auto rail_at(int k) noexcept -> rail& { return k == 0 ? *main_ : *extra_[static_cast<std::size_t>(k - 1)]; }
    auto submit(op& o) noexcept -> int;   // 0, -FI_EAGAIN or another -FI_E*
    void post(op& o) noexcept;            // first submission of an operation
    void settle(op& o, int rc) noexcept;  // in flight, done inline, queued on EAGAIN, or failed
    auto submit_recv_slot(recv_request& r, recv_slot& s, op& o) noexcept -> int;
    auto submit_one_sided_op(op& o) noexcept -> int;   // RMA writes, flush reads, foreign operations
    auto submit_connection_op(op& o) noexcept -> int;  // handshakes and liveness receives
    /// A control message: injected when it fits (1: complete already), else sent with `o`.
    auto submit_control(op& o, std::span<const std::byte> msg, std::uint64_t tag, fabric_addr to) noexcept -> int;
    auto complete(request_base& req, std::size_t* sizes, int n_sizes) noexcept -> errc;  // test() of a done request
    void poll_queue(completion_queue& cq) noexcept;  // a rail's, or the liveness link's own
    /// An eager message into a live receive, landed without dispatch's routing: true if handled.
    auto land_eager(const tagged_completion& c) noexcept -> bool;
    void land(recv_request& r, recv_slot& s, std::size_t len) noexcept;  // an eager message's bytes arrived
    void drain_recycles() noexcept;                                      // puts released requests back in their pools
    /// Whether the channel's pool has a request, after putting released ones back if it ran dry.
    template <class C>
    auto has_free(C& c) noexcept -> bool {
        if (c.pool.free_count() == 0) drain_recycles();
        return c.pool.free_count() != 0;
    }
    auto start_recv(receiver& rc, int n, int remaining) noexcept -> recv_request&;  // a fresh receive request
    static void reset_slot(recv_slot& s, void* data, std::size_t size, memory_handle* host_reg) noexcept;
    void post_unposted() noexcept;         // hands irecv's receives to the provider
    void relax_lock() noexcept;            // lets other threads in during a long wait (lock held)
    void fail_op(op& o, int rc) noexcept;  // a submission failed for good
    void end_failed_op(op& o, int rc) noexcept;
    void dispatch(const completion_event& ev) noexcept;
    void dispatch_to_owner(op* o, const completion_event& ev) noexcept;
    void on_remote_write(std::uint64_t imm) noexcept;
    /// What a receiver's rendezvous writes stand at: whether one is awaited, and the bytes landed.
    struct write_tally {
        bool awaited{false};
        std::uint64_t landed{0};
    };
    static auto writes_into(const receiver& rc) noexcept -> write_tally;  // one walk of the pool
    void on_send_op(send_request& r, op& o, const completion_event& ev) noexcept;
    void on_recv_op(recv_request& r, op& o, const completion_event& ev) noexcept;
    void on_listen(listener& l, const completion_event& ev) noexcept;
    void on_accept_msg(sender& s, const completion_event& ev) noexcept;
    void start_writes(send_request& r) noexcept;
    void post_write(send_request& r, int k) noexcept;
    auto rail_ep(int k) noexcept -> endpoint&;
    auto rail_cache(int k) noexcept -> mr_cache&;
    auto insert_rail_peer(int k, const address& a) -> result<fabric_addr>;
    auto rail_addresses() const -> std::vector<address>;  // rails 1.. as control messages carry them
    void connect_rails(channel_base& c, const std::vector<address>& remote) noexcept;
    auto slot_keys(recv_slot& s, int rails) -> bool;
    void fail_request(request_base& r, errc why) noexcept;
    void end_foreign(foreign_op& o, std::error_code why) noexcept;
    static void finish_slot(recv_request& r, recv_slot& s) noexcept {
        if (s.done) return;
        s.done = true;
        if (--r.remaining == 0) r.done = true;
    }
    // peer_monitor.cpp
    /// When the peers are checked next: after the regular period, or soon because the provider
    /// refused a ping for now.
    enum class next_check : std::uint8_t { regular, soon };
    auto check_peers() noexcept -> next_check;
    /// The coarse clock, the liveness link's own queue and the peer checks when due.
    void tick(clock::time_point now) noexcept;
    auto peer_alive(const channel_base& c) const noexcept -> bool;
    auto same_host_peer_gone(const channel_base& c) const noexcept -> bool;
    auto watch_peer(channel_base& c, bool waiting, clock::time_point now) noexcept -> next_check;
    void declare_dead(channel_base& c, const char* why) noexcept;
    void declare_unreachable(channel_base* c) noexcept;  // c: from channel_lost_by, may be null
    void end_by_peer(channel_base& c) noexcept;          // the peer said it closed its side
    void fail_channel(channel_base& c, errc why) noexcept;
    void start_liveness(channel_base& c) noexcept;
    void on_liveness(channel_base& c, const completion_event& ev) noexcept;
    /// false: refused for now. `prefer_live_ep`: through the liveness endpoints where the channel has them.
    auto send_liveness(channel_base& c, liveness_kind kind, std::uint32_t sequence, bool prefer_live_ep) noexcept
        -> bool;
    void watchdog() noexcept;                                 // the background thread's loop
    void open_liveness_endpoint() noexcept;                   // LOOM_LIVENESS_ENDPOINT: off when it fails
    auto liveness_address() const -> std::optional<address>;  // what CONNECT and ACCEPT carry
    void connect_liveness(channel_base& c, const std::optional<address>& remote) noexcept;
    void on_liveness_any(op& o, const completion_event& ev) noexcept;  // a ping or pong on the liveness endpoint
    void handle_liveness(channel_base& c, std::span<const std::byte> bytes, bool on_live_ep) noexcept;
    auto new_channel_id() -> result<std::uint32_t>;
    void drain(channel_base& c, const std::function<bool()>& pending) noexcept;
    void recycle(request_base& r) noexcept;
    void cancel_ops(request_base& r) noexcept;
    void release(request_base& r) noexcept;
    template <class C>
    void retire(C& c, std::initializer_list<op*> own) noexcept;

    std::unique_ptr<rail> main_;  ///< rail 0: control, eager and (part of) every rendezvous
    completion_queue& cq_;        // shorthands for rail 0's objects
    endpoint& ep_;
    mr_cache* cache_;
    const address& self_;
    std::vector<std::unique_ptr<rail>> extra_{};  ///< rails 1.. of a virtual device
    nic nic_{};
    config cfg_{};
    std::vector<std::byte> discard_{};  ///< where eager bytes beyond a short receive land
    mr_handle discard_reg_{};
    std::size_t eager_max_{0};
    std::size_t inject_size_{0};
    engine_lock mu_{};
    request_base* recycle_head_{nullptr};  ///< released requests not yet back in their pools
    std::uint32_t next_id_{match_bits::first_channel_id};
    std::unordered_map<std::uint32_t, receiver*> receivers_{};
    std::unordered_map<const void*, std::pair<handle_bytes, sender*>> connecting_{};
    submission_queue submissions_{};  ///< operations the provider refused for now
    /// Receives accepted by irecv and handed to the provider at the engine's next call (isend,
    /// progress): a send posted right after a receive leaves first. Marked `deferred`.
    std::vector<op*> unposted_{};
    std::vector<channel_base*> channels_{};                           ///< open senders and receivers (peer checks)
    std::unordered_map<std::uint32_t, channel_base*> channel_ids_{};  ///< the same by id (liveness messages)
    /// Receives posted on the liveness endpoint for any channel's pings and pongs, and their buffers.
    /// @{
    static constexpr std::size_t liveness_receives = 16;
    std::array<op, liveness_receives> live_recvs_{};
    std::array<std::array<std::byte, liveness_size>, liveness_receives> live_bufs_{};
    /// @}
    clock::time_point next_peer_check_{};
    clock::time_point next_live_poll_{};  // the liveness link's own queue is read from tick()
    /// progress() calls so far; written under the engine lock only, read by the watchdog.
    std::atomic<std::uint64_t> progress_calls_{0};
    /// The clock as of the last progress call that read it (every 64th): requests are stamped
    /// with it, so submissions read no clock. A stale stamp only makes a peer check come early.
    clock::time_point coarse_now_{clock::now()};
    std::array<tagged_completion, 16> entries_{};  ///< poll_queue reads the provider's entries here
    std::array<completion_event, 1> events_{};     ///< and builds a typed event here for dispatch
    engine_stats stats_{};
    std::uint64_t host_id_{0};
    /// A peer on this host is dead once its process is gone (see provider_facts::sent_data_outlives_sender).
    bool pid_ends_peer_{false};
    release_hook release_hook_{nullptr};
    remote_data_hook remote_data_hook_{nullptr};
    void* remote_data_context_{nullptr};
    std::vector<std::byte> flush_buf_{};  ///< where flush reads land (8 bytes per slot)
    mr_handle flush_reg_{};
    bool counted_{false};  ///< among the process's engines (see keep_rails_for_local_peers)
    fabric_addr self_addr_{fabric_addrs::unspecified};  ///< this endpoint in its own AV (flush reads)

    std::atomic<bool> stop_{false};
    /// Drives progress() in the background: continuously with LOOM_PROGRESS_THREAD=1, otherwise
    /// only while the host makes no call for a while (so that pings are answered by a peer
    /// that is busy elsewhere).
    std::thread progress_thread_{};
};

}  // namespace loom::plugins
