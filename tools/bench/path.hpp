// tools/bench/path.hpp — what every benchmarked path (raw libfabric, loom, an ABI plugin)
// provides, the out-of-band channel between the two ranks and the measurement loops the paths
// share. The loops are templates over a path's inline post/wait functions, so the hot loop of
// each path is direct calls into that path's API and nothing else.
#pragma once

#include <loom/flags.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "report.hpp"

namespace loom::bench {

/// Out-of-band byte stream to the other rank: a socketpair under --local (socket_channel in
/// main.cpp), MPI point-to-point messages under mpirun (mpi_channel in launch_mpi.cpp). The
/// paths and the measurement driver only see this interface. Bytes arrive in the order they
/// were sent; a recv may span or split what the peer sent in several sends.
class channel {
public:
    virtual ~channel() = default;
    [[nodiscard]] virtual auto send(const void* p, std::size_t n) -> bool = 0;
    [[nodiscard]] virtual auto recv(void* p, std::size_t n) -> bool = 0;
    [[nodiscard]] auto send_blob(const std::vector<std::byte>& b) -> bool;
    [[nodiscard]] auto recv_blob(std::vector<std::byte>& b) -> bool;
    /// Both ranks arrive before either leaves.
    [[nodiscard]] virtual auto barrier() -> bool = 0;
    /// Called by the initiator (rank 0) of every pair of the job, each with a vector of the
    /// same length: the first pair's initiator receives all of them, pair by pair, in `all`;
    /// the others receive nothing. One pair (the default): `all` is just `mine`.
    [[nodiscard]] virtual auto gather_initiators(const std::vector<double>& mine, std::vector<std::vector<double>>& all)
        -> bool {
        all.assign(1, mine);
        return true;
    }
    /// This rank gives up out of step with its peer (the peer may be blocked waiting for it):
    /// returns `rc` where the peer notices by itself (a closed socketpair), ends the whole job
    /// where it would not (MPI_Abort).
    virtual auto abandon(int rc) -> int { return rc; }
};

/// The --local launcher's channel: a connected stream socket.
class socket_channel final : public channel {
public:
    explicit socket_channel(int fd) : fd_(fd) {}
    [[nodiscard]] auto send(const void* p, std::size_t n) -> bool override;
    [[nodiscard]] auto recv(void* p, std::size_t n) -> bool override;
    [[nodiscard]] auto barrier() -> bool override;

private:
    int fd_;
};

/// Buffers shared by all paths of one rank: `capacity` payload bytes (a multiple of 64) plus a
/// small control area after it, registered whole by every path. Control area: bytes [0, 8) the
/// acknowledgements; [8, 16) of rx the uint64 counter the peer's fetch-adds target, of tx the
/// operand (1) this rank's fetch-adds add. Fetch-add results land in rx payload slot k·8.
struct buffers {
    std::byte* tx{nullptr};
    std::byte* rx{nullptr};
    std::size_t capacity{0};
    static constexpr std::size_t control_bytes = 64;
    static constexpr std::size_t atomic_offset = 8;  ///< into the control area
    [[nodiscard]] auto counter() const -> std::uint64_t* {
        return reinterpret_cast<std::uint64_t*>(rx + capacity + atomic_offset);
    }
    [[nodiscard]] auto operand() const -> std::uint64_t* {
        return reinterpret_cast<std::uint64_t*>(tx + capacity + atomic_offset);
    }
    [[nodiscard]] auto fetch_results() const -> std::uint64_t* { return reinterpret_cast<std::uint64_t*>(rx); }
    [[nodiscard]] auto registered_size() const -> std::size_t { return capacity + control_bytes; }
};

struct path_config {
    std::string provider{"shm"};
    std::string domain;  ///< preferred domain (e.g. "lo"); empty: shm's own or the first
    /// Threading model asked for by the raw and loom paths (unspecified: the provider's choice).
    loom::threading_mode threading{loom::threading_mode::unspecified};
    std::string nccl_plugin;
    std::string nccl_path_name{"nccl"};  ///< "nccl2": the second plugin of an A/B run
    std::string nixl_capi;               ///< NIXL's libnixl_capi.so
    std::string nixl_plugin;             ///< our libplugin_LOOM.so
    std::string nixl_backend{"LOOM"};    ///< the NIXL backend a nixl path creates (LOOM, UCX)
    std::string nvshmem_transport;       ///< our nvshmem_transport_libfabric.so.4
    int window{16};
    /// Ask for FI_RMA / FI_ATOMIC (and remotely accessible registrations) only when an RMA or
    /// atomic operation is requested: the other operations keep their exact setup.
    bool rma{false};
    bool atomic{false};
};

/// The peer's registrations as RMA targets: address (virtual or offset, per the domain's
/// mr_mode), key and length of its tx and rx buffers. Exchanged at open when RMA or atomics
/// are on.
struct remote_regions {
    std::uint64_t tx_addr{0}, tx_key{0}, rx_addr{0}, rx_key{0}, length{0};
};

class path {
public:
    virtual ~path() = default;
    [[nodiscard]] virtual auto name() const -> std::string = 0;
    /// Empty when the path runs `op`, else why not (shown as "skipped" with this note). Known
    /// after open (a provider without FI_ATOMIC, ...); both ranks reach the same answer.
    [[nodiscard]] virtual auto unsupported(operation op) const -> std::string = 0;
    /// Opens the path and connects it to the peer over `ch`; empty string on success.
    [[nodiscard]] virtual auto open(const path_config& cfg, const buffers& buf, channel& ch, int rank)
        -> std::string = 0;
    /// Runs `iterations` of `op` with messages of `size` bytes; rank 0 initiates ping-pongs,
    /// sends streams and message-rate windows, and issues the RMA and atomic operations (rank 1
    /// is their target). Empty string on success, else what went wrong (including a receive
    /// completing with the wrong length).
    [[nodiscard]] virtual auto run(operation op, int rank, std::size_t size, int iterations, int window)
        -> std::string = 0;
    /// The domain the path picked (for the report).
    [[nodiscard]] virtual auto domain_name() const -> std::string { return {}; }
};

/// When the provider refuses the capabilities asked for, the next one to give up (atomics
/// first, then RMA) and why, for the "skipped" note of the operations that needed it.
inline void drop_capability(bool& rma, bool& atomic, std::string& rma_note, std::string& atomic_note,
                            const std::string& provider) {
    if (atomic) {
        atomic = false;
        atomic_note = "provider " + provider + " offers no FI_ATOMIC";
    } else {
        rma = false;
        rma_note = "provider " + provider + " offers no FI_RMA";
    }
}

/// A path object placed at a chosen offset within a page (see path_offset in report.hpp): the
/// deleter destroys it and frees the page-aligned block it was built in.
struct path_deleter {
    void* block{nullptr};
    void operator()(path* p) const noexcept {
        p->~path();
        ::operator delete(block, std::align_val_t{page_bytes});
    }
};
using path_ptr = std::unique_ptr<path, path_deleter>;

/// Builds a T at byte `offset` (a multiple of 64 below page_bytes) of a page-aligned block.
template <class T>
[[nodiscard]] auto place_path(std::size_t offset) -> path_ptr {
    static_assert(alignof(T) <= 64, "path objects are placed at 64-byte granularity");
    offset = offset % page_bytes / 64 * 64;
    void* block = ::operator new(sizeof(T) + page_bytes, std::align_val_t{page_bytes});
    try {
        T* p = new (static_cast<std::byte*>(block) + offset) T();
        return path_ptr(p, path_deleter{block});
    } catch (...) {
        ::operator delete(block, std::align_val_t{page_bytes});
        throw;
    }
}

/// Copy `copy` (modulo code_copies, see code_copy in report.hpp) of path template T, built at
/// `offset`: every copy is the same source compiled once more, its code at another address
/// (the tool is built with -fno-ipa-icf so that the compiler keeps them apart).
template <template <int> class T>
[[nodiscard]] auto place_copy(std::size_t copy, std::size_t offset) -> path_ptr {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
        using factory = path_ptr (*)(std::size_t);
        static constexpr std::array<factory, sizeof...(I)> table{&place_path<T<static_cast<int>(I)>>...};
        return table[copy % table.size()](offset);
    }(std::make_index_sequence<code_copies>{});
}

/// Each path placed `offset` bytes into a page of its own, from code copy `copy`.
[[nodiscard]] auto make_raw_path(std::size_t offset = 0, std::size_t copy = 0) -> path_ptr;
[[nodiscard]] auto make_loom_path(std::size_t offset = 0, std::size_t copy = 0) -> path_ptr;
[[nodiscard]] auto make_sender_path(std::size_t offset = 0, std::size_t copy = 0) -> path_ptr;
[[nodiscard]] auto make_asio_path(std::size_t offset = 0, std::size_t copy = 0) -> path_ptr;
[[nodiscard]] auto make_nccl_path(std::size_t offset = 0, std::size_t copy = 0) -> path_ptr;
[[nodiscard]] auto make_nixl_path(std::size_t offset = 0, std::size_t copy = 0) -> path_ptr;
[[nodiscard]] auto make_nvshmem_path(std::size_t offset = 0, std::size_t copy = 0) -> path_ptr;
/// Removes the nixl paths' private plugin folder of this process, if one was made.
void remove_nixl_plugin_dir() noexcept;

// ---------------------------------------------------------------- shared loops
/// Slots: sends 0..W-1, receives max_window..max_window+W-1, acknowledgement send 2·max_window,
/// acknowledgement receive 2·max_window+1. Message k of a window uses bytes [k·n, (k+1)·n) of the
/// payload buffers: requests in flight never share memory (NCCL never posts overlapping
/// buffers, and a plugin may use a receive buffer as landing zone for its own control data).
inline constexpr int max_window = 30;
inline constexpr int slot_count = 2 * max_window + 2;
inline constexpr std::uint64_t tag_data = 0x10;
inline constexpr std::uint64_t tag_ack = 0x20;
inline constexpr std::size_t ack_bytes = 8;
[[nodiscard]] constexpr auto is_receive_slot(int slot) -> bool { return slot >= max_window && slot != 2 * max_window; }

/// Gives up on a wait after this long without the awaited completion (a hung peer).
inline constexpr auto wait_limit = std::chrono::seconds(60);

/// What the loops touch per message — operation contexts, completion flags and lengths, and the
/// completion entries of one poll — in the same layout in every path that posts its own
/// operations (raw, raw2, loom), on its own cache lines; and their common wait.
template <class Context, class Entry>
struct alignas(64) slot_state {
    std::array<Context, slot_count> ctx{};
    std::array<bool, slot_count> done{};
    std::array<std::size_t, slot_count> len{};
    std::array<std::size_t, slot_count> expect{};
    std::array<Entry, 8> entries{};  ///< one poll's completions

    /// Calls `progress` (the path's completion read: false when it failed, with `error` set)
    /// until `slot` completed, and consumes that completion; a receive must have brought the
    /// length posted. False with `error` set after wait_limit without the completion.
    template <class Progress>
    auto wait(int slot, std::string& error, Progress&& progress) -> bool {
        unsigned spins = 0;
        auto deadline = std::chrono::steady_clock::time_point::max();
        while (!done[slot]) {
            if (!progress()) return false;
            if ((++spins & 0xfffU) == 0) {
                const auto now = std::chrono::steady_clock::now();
                if (deadline == std::chrono::steady_clock::time_point::max()) deadline = now + wait_limit;
                if (now > deadline) return timed_out(slot, error);
            }
        }
        return consume(slot, error);
    }
    /// Takes `slot`'s completion: false with `error` set when a receive did not bring the length
    /// posted.
    auto consume(int slot, std::string& error) -> bool {
        done[slot] = false;
        if (is_receive_slot(slot) && len[slot] != expect[slot]) return wrong_length(slot, error);
        return true;
    }

private:
    // Out of line: the error texts stay out of the loops' code.
    [[gnu::cold, gnu::noinline]] static auto timed_out(int slot, std::string& error) -> bool {
        error =
            "no completion for slot " + std::to_string(slot) + " within " + std::to_string(wait_limit.count()) + " s";
        return false;
    }
    [[gnu::cold, gnu::noinline]] auto wrong_length(int slot, std::string& error) const -> bool {
        error = "receive of " + std::to_string(expect[slot]) + " bytes completed with " + std::to_string(len[slot]);
        return false;
    }
};

/// A path's primitive operations, as used by the loops below:
///   bool post_send(int slot, std::size_t offset, std::size_t n, bool tagged, bool control)
///   bool post_recv(int slot, std::size_t offset, std::size_t n, bool tagged, bool control)
///   bool wait(int slot)  // drives progress until `slot` completed; checks receive lengths
/// `offset` is into the payload buffers; `control` selects the acknowledgement area after them.
template <class P>
auto pingpong_loop(P& p, bool initiator, std::size_t n, int iterations, bool tagged) -> bool {
    const int s = 0, r = max_window;
    for (int i = 0; i < iterations; ++i) {
        if (initiator) {
            if (!p.post_recv(r, 0, n, tagged, false) || !p.post_send(s, 0, n, tagged, false)) return false;
            if (!p.wait(s) || !p.wait(r)) return false;
        } else {
            if (!p.post_recv(r, 0, n, tagged, false) || !p.wait(r)) return false;
            if (!p.post_send(s, 0, n, tagged, false) || !p.wait(s)) return false;
        }
    }
    return true;
}

template <class P>
auto stream_loop(P& p, bool sender, std::size_t n, int iterations, int w) -> bool {
    const int ack_s = 2 * max_window, ack_r = 2 * max_window + 1;
    const auto off = [n](int k) { return static_cast<std::size_t>(k) * n; };
    if (sender) {
        for (int i = 0; i < iterations; ++i) {
            if (!p.post_recv(ack_r, 0, ack_bytes, true, true)) return false;
            for (int k = 0; k < w; ++k)
                if (!p.post_send(k, off(k), n, true, false)) return false;
            for (int k = 0; k < w; ++k)
                if (!p.wait(k)) return false;
            if (!p.wait(ack_r)) return false;
        }
        return true;
    }
    for (int k = 0; k < w; ++k)
        if (!p.post_recv(max_window + k, off(k), n, true, false)) return false;
    for (int i = 0; i < iterations; ++i) {
        for (int k = 0; k < w; ++k)
            if (!p.wait(max_window + k)) return false;
        if (i + 1 < iterations) {
            for (int k = 0; k < w; ++k)
                if (!p.post_recv(max_window + k, off(k), n, true, false)) return false;
        }
        if (!p.post_send(ack_s, 0, ack_bytes, true, true) || !p.wait(ack_s)) return false;
    }
    return true;
}

/// One-sided operations (RMA write/read, fetch-add): the initiator keeps a window of `w`
/// operations in flight per iteration, `post(k)` posting the k-th into slot k, then tells the
/// target it is done with a small tagged message. The target only drives progress until then:
/// manual-progress providers (tcp, rxm) carry RMA and atomics through the target's CQ reads.
template <class P, class Post>
auto one_sided_loop(P& p, bool initiator, int iterations, int w, Post post) -> bool {
    const int ack_s = 2 * max_window, ack_r = 2 * max_window + 1;
    if (!initiator) return p.post_recv(ack_r, 0, ack_bytes, true, true) && p.wait(ack_r);
    for (int i = 0; i < iterations; ++i) {
        for (int k = 0; k < w; ++k)
            if (!post(k)) return false;
        for (int k = 0; k < w; ++k)
            if (!p.wait(k)) return false;
    }
    return p.post_send(ack_s, 0, ack_bytes, true, true) && p.wait(ack_s);
}

/// The raw and loom paths' operation dispatch: one loop template per operation over the path's
/// own post/wait primitives (post_rma and post_fadd for the one-sided operations).
template <class P>
auto run_operation(P& p, operation op, int rank, std::size_t n, int iterations, int window) -> bool {
    switch (op) {
        case operation::pingpong: return pingpong_loop(p, rank == 0, n, iterations, true);
        case operation::pingpong_untagged: return pingpong_loop(p, rank == 0, n, iterations, false);
        case operation::stream:
        case operation::msgrate: return stream_loop(p, rank == 0, n, iterations, window);
        case operation::rma_write:
        case operation::rma_read: {
            const bool read = op == operation::rma_read;
            return one_sided_loop(p, rank == 0, iterations, window,
                                  [&](int k) { return p.post_rma(k, static_cast<std::size_t>(k) * n, n, read); });
        }
        case operation::atomic_fadd:
            return one_sided_loop(p, rank == 0, iterations, window, [&](int k) { return p.post_fadd(k); });
    }
    return false;
}

/// path::open of the raw and loom paths, in the same steps (each path's own calls): what the
/// provider offers, its objects, the registrations, the peer's address and remote regions.
/// FI_RMA / FI_ATOMIC only when requested; a provider without them (tcp has no atomics) is asked
/// again without, and those operations are skipped (the notes say why).
template <class P>
auto open_in_steps(P& p, const path_config& cfg, const buffers& buf, channel& ch, std::string& rma_note,
                   std::string& atomic_note) -> std::string {
    bool rma = cfg.rma, atomic = cfg.atomic;
    if (auto e = p.choose_info(cfg, rma, atomic); !e.empty()) return e;
    if (auto e = p.create_objects(); !e.empty()) return e;
    if (atomic && !p.has_fetch_add()) {
        atomic = false;
        atomic_note = "provider " + cfg.provider + " has no uint64 fetch-add";
    }
    if (!cfg.rma) rma_note = "not requested";  // (run never asks then)
    if (!cfg.atomic) atomic_note = "not requested";
    if (auto e = p.register_buffers(buf, rma, atomic); !e.empty()) return e;
    if (auto e = p.exchange_addresses(ch); !e.empty()) return e;
    if (rma || atomic) {
        if (auto e = p.exchange_regions(ch, buf); !e.empty()) return e;
    }
    if (rma) rma_note.clear();
    if (atomic) atomic_note.clear();
    return {};
}

/// path::run of the raw and loom paths: run_operation, with what the primitives put in `error`
/// as the reason of a failure.
template <class P>
auto run_reporting(P& p, std::string& error, operation op, int rank, std::size_t n, int iterations, int window)
    -> std::string {
    error.clear();
    const bool ok = run_operation(p, op, rank, n, iterations, window);
    return ok ? std::string{} : (error.empty() ? std::string("failed") : error);
}

}  // namespace loom::bench
