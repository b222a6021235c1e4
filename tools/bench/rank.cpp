// tools/bench/rank.cpp — one rank's run: buffers, paths opened anew every round, every point
// measured through every path in an interleaved order, payloads checked, the pairs' figures
// gathered and the report written.
#include "rank.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace loom::bench {
namespace {

// ---------------------------------------------------------------- stack placement
/// Calls f() with the stack moved `shift` bytes further down (stack_offset in report.hpp): the
/// frames of the path and of the provider below it land at another place within their pages.
template <class F>
[[gnu::noinline]] auto with_stack_offset(std::size_t shift, F&& f) {
    void* pad = __builtin_alloca(shift + 16);
    asm volatile("" : : "r"(pad) : "memory");  // the allocation stays, below f's frames
    auto r = std::forward<F>(f)();
    asm volatile("" : : "r"(pad) : "memory");
    return r;
}

// ---------------------------------------------------------------- payload pattern
auto pattern(std::size_t size, std::size_t i) -> std::byte {
    return static_cast<std::byte>((i * 131U + size * 7U + (i >> 8) + (i >> 16)) & 0xffU);
}
void fill(std::byte* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) p[i] = pattern(n, i);
}
auto first_bad(const std::byte* p, std::size_t n) -> long {
    for (std::size_t i = 0; i < n; ++i)
        if (p[i] != pattern(n, i)) return static_cast<long>(i);
    return -1;
}

/// After `adds` fetch-adds of 1 in windows of `w`: the target's counter equals `adds`; the
/// initiator's last window fetched exactly the values adds-w .. adds-1 (in any order).
auto check_fetch_add(const buffers& buf, int rank, std::uint64_t adds, int w) -> std::string {
    if (rank == 1) {
        const std::uint64_t got = *buf.counter();
        if (got != adds) return "counter is " + std::to_string(got) + " after " + std::to_string(adds) + " fetch-adds";
        return {};
    }
    std::vector<std::uint64_t> fetched(buf.fetch_results(), buf.fetch_results() + w);
    std::sort(fetched.begin(), fetched.end());
    for (int k = 0; k < w; ++k) {
        const std::uint64_t want = adds - static_cast<std::uint64_t>(w) + static_cast<std::uint64_t>(k);
        if (fetched[static_cast<std::size_t>(k)] != want)
            return "the last window fetched " + std::to_string(fetched[static_cast<std::size_t>(k)]) + " where " +
                   std::to_string(want) + " was due";
    }
    return {};
}

/// What a rank reports after each measurement.
struct status {
    std::uint8_t ok{1};
    std::uint8_t verified{1};
    std::uint16_t error_len{0};
};

auto exchange_status(channel& ch, int rank, status mine, const std::string& my_error, status& peer,
                     std::string& peer_error) -> bool {
    mine.error_len = static_cast<std::uint16_t>(std::min<std::size_t>(my_error.size(), 1000));
    if (!ch.send(&mine, sizeof mine) || !ch.send(my_error.data(), mine.error_len)) return false;
    if (!ch.recv(&peer, sizeof peer)) return false;
    peer_error.resize(peer.error_len);
    (void)rank;
    return ch.recv(peer_error.data(), peer.error_len);
}

struct progress_line {
    bool enabled;
    bool tty;
    void show(const std::string& s) const {
        if (!enabled) return;
        if (tty)
            std::fprintf(stderr, "\r\033[K%s", s.c_str());
        else
            std::fprintf(stderr, "%s\n", s.c_str());
        std::fflush(stderr);
    }
    void clear() const {
        if (enabled && tty) std::fprintf(stderr, "\r\033[K");
    }
};

auto write_file(const std::string& file, const std::string& text) -> bool {
    if (file == "-") {
        std::fputs(text.c_str(), stdout);
        return true;
    }
    std::ofstream f(file, std::ios::binary);
    f << text;
    return static_cast<bool>(f);
}

// ---------------------------------------------------------------- set-up
/// Both payload buffers, page-aligned, zeroed, freed with the run.
struct buffer_memory {
    struct deleter {
        void operator()(std::byte* p) const noexcept { std::free(p); }
    };
    std::unique_ptr<std::byte, deleter> tx, rx;
};

/// Sizes `buf` for every point of `o` and allocates it; false when the memory cannot be had.
auto allocate_buffers(const options& o, buffers& buf, buffer_memory& mem) -> bool {
    const auto wants = [&](auto pred) { return std::any_of(o.ops.begin(), o.ops.end(), pred); };
    std::size_t capacity = std::max<std::size_t>(8, *std::max_element(o.sizes.begin(), o.sizes.end()));
    for (operation op : o.ops)
        if (is_windowed(op)) capacity = std::max(capacity, buffer_bytes(sizes_for(op, o.sizes), o.sched));
    // Fetch-add results: one uint64 per request of a window, at the start of rx.
    if (wants(is_atomic)) capacity = std::max<std::size_t>(capacity, max_window * sizeof(std::uint64_t));
    // The control area after the payload starts 64-byte aligned (the atomic counter in it).
    buf.capacity = (capacity + 63) / 64 * 64;
    const std::size_t alloc = (buf.registered_size() + 4095) / 4096 * 4096;
    mem.tx.reset(static_cast<std::byte*>(std::aligned_alloc(4096, alloc)));
    mem.rx.reset(static_cast<std::byte*>(std::aligned_alloc(4096, alloc)));
    if (!mem.tx || !mem.rx) return false;
    std::memset(mem.tx.get(), 0, alloc);
    std::memset(mem.rx.get(), 0, alloc);
    buf.tx = mem.tx.get();
    buf.rx = mem.rx.get();
    *buf.operand() = 1;  // what every fetch-add adds
    return true;
}

auto config_of(const options& o) -> path_config {
    const auto wants = [&](auto pred) { return std::any_of(o.ops.begin(), o.ops.end(), pred); };
    path_config cfg;
    cfg.provider = o.provider;
    cfg.domain = o.iface;
    cfg.threading = o.threading;
    cfg.nccl_plugin = o.nccl_plugin;
    cfg.nixl_capi = o.nixl_capi;
    cfg.nixl_plugin = o.nixl_plugin;
    cfg.nvshmem_transport = o.nvshmem_transport;
    cfg.window = o.sched.window;
    cfg.rma = wants(is_rma);
    cfg.atomic = wants(is_atomic);
    return cfg;
}

auto info_of(const options& o, int ranks, const char* launcher) -> run_info {
    run_info info;
    info.provider = o.provider;
    if (o.threading != loom::threading_mode::unspecified) info.threading = loom::to_string(o.threading);
    info.ranks = ranks;
    info.pairs = std::max(1, ranks / 2);
    info.launcher = launcher;
    info.window = o.sched.window;
    info.repetitions = o.reps;
    info.rounds = o.rounds;
    info.paths = o.paths;
    info.table_added_ns = o.added_ns;
    return info;
}

/// Every point, measured in every round; samples accumulate across rounds.
auto plan_points(const options& o, bool reporter) -> std::vector<point> {
    std::vector<point> points;
    for (operation op : o.ops) {
        const auto op_sizes = sizes_for(op, o.sizes);
        if (op_sizes.empty() && reporter)
            std::fprintf(stderr, "loom-bench: %s: no size up to %s in --sizes, skipped\n",
                         std::string(name_of(op)).c_str(), format_size(msgrate_max_size).c_str());
        for (std::size_t size : op_sizes) {
            point pt;
            pt.op = op;
            pt.size = size;
            pt.iterations = iterations_for(op, size, o.sched);
            pt.window = is_windowed(op) ? window_for(size, o.sched) : 1;
            points.push_back(std::move(pt));
        }
    }
    return points;
}

/// The path called `name`, at a place and in a copy of its code chosen for this round.
auto make_path(const std::string& name, std::size_t at, std::size_t copy) -> path_ptr {
    if (name == "loom") return make_loom_path(at, copy);
    if (name == "sender") return make_sender_path(at, copy);
    if (name == "asio") return make_asio_path(at, copy);
    if (name == "nccl" || name == "nccl2") return make_nccl_path(at, copy);
    if (name.starts_with("nixl")) return make_nixl_path(at, copy);
    if (name == "nvshmem") return make_nvshmem_path(at, copy);
    return make_raw_path(at, copy);
}

/// Each round opens every path anew (fresh endpoints, provider memory at new places, moved by
/// heap_pads) and rotates the order they are opened in: what one instance of a path gains or
/// loses by where its objects landed, or by being opened first, is spread over all paths. Empty
/// after a failure (reported).
auto open_paths(const options& o, const path_config& cfg, buffers& buf, channel& ch, int rank, int round,
                std::vector<std::unique_ptr<std::byte[]>>& heap_pads) -> std::vector<path_ptr> {
    const std::size_t n_paths = o.paths.size();
    std::vector<path_ptr> paths(n_paths);
    for (std::size_t j = 0; j < n_paths; ++j) {
        const std::size_t k = (j + static_cast<std::size_t>(round)) % n_paths;
        const auto& name = o.paths[k];
        // A new layout and another copy of its code every round, its heap objects moved too.
        heap_pads.push_back(std::make_unique<std::byte[]>(heap_offset(round, n_paths, k) + 16));
        auto p = make_path(name, path_offset(round, n_paths, k), code_copy(round, k));
        path_config this_cfg = cfg;
        this_cfg.nixl_backend = name == "nixl" ? "LOOM" : "UCX";
        if (name == "nccl2") {
            this_cfg.nccl_path_name = "nccl2";
            if (!o.nccl2_plugin.empty()) this_cfg.nccl_plugin = o.nccl2_plugin;
        }
        if (auto e = p->open(this_cfg, buf, ch, rank); !e.empty()) {
            std::fprintf(stderr, "loom-bench: rank %d: path %s over %s: %s\n", rank, name.c_str(), o.provider.c_str(),
                         e.c_str());
            return {};
        }
        if (!ch.barrier()) {
            std::fprintf(stderr, "loom-bench: rank %d: peer gone while opening %s\n", rank, name.c_str());
            return {};
        }
        paths[k] = std::move(p);
    }
    return paths;
}

// ---------------------------------------------------------------- one measurement
/// Who checks payload bytes: both ranks after a ping-pong, the receiver of a stream or of
/// message-rate traffic, the target of RMA writes, the initiator (rank 0) of reads. Fetch-adds
/// are checked separately (counter and fetched values).
auto receives_data(operation op, int rank) -> bool {
    switch (op) {
        case operation::stream:
        case operation::msgrate:
        case operation::rma_write: return rank == 1;
        case operation::rma_read: return rank == 0;
        case operation::atomic_fadd: return false;
        default: return true;
    }
}

/// What one measurement left to check: an error, or else the payload or fetch-add results.
auto check_result(const point& pt, const buffers& buf, int rank, int warmup, status& mine) -> std::string {
    const std::size_t size = pt.size;
    if (receives_data(pt.op, rank)) {
        for (int w = 0; w < pt.window; ++w) {
            const long bad = first_bad(buf.rx + static_cast<std::size_t>(w) * size, size);
            if (bad >= 0) {
                mine.verified = 0;
                return "message " + std::to_string(w) + " of the window: byte " + std::to_string(bad) + " of " +
                       std::to_string(size) + " is wrong";
            }
        }
    }
    if (pt.op == operation::atomic_fadd) {
        const auto adds = static_cast<std::uint64_t>(warmup + pt.iterations) * static_cast<std::uint64_t>(pt.window);
        if (auto why = check_fetch_add(buf, rank, adds, pt.window); !why.empty()) {
            mine.verified = 0;
            return why;
        }
    }
    return {};
}

/// How one measurement ended.
enum class outcome {
    measured,   ///< a sample was taken (its bytes may still be wrong: samples.verified)
    failed,     ///< the path failed here: stop measuring (requests may be in flight)
    peer_gone,  ///< the channel broke: give up
};

/// Where a measurement runs: the point, the path (index k of o.paths) and the repetition.
struct measurement {
    point& pt;
    path& p;
    std::size_t k;
    int round;
    int rep;
    std::size_t n_paths;
};

/// Runs one warm-up and one timed run of `m` (the stack at its own offset), checks the
/// payload on the last repetition of the round, and agrees on the outcome with the peer.
auto measure(const options& o, buffers& buf, channel& ch, int rank, const measurement& m) -> outcome {
    point& pt = m.pt;
    auto& samples = pt.paths[o.paths[m.k]];
    const int warmup = warmup_for(pt.iterations);
    const bool verify = m.rep == o.reps - 1;
    if (verify) std::memset(buf.rx, 0, pt.size * static_cast<std::size_t>(pt.window));
    if (pt.op == operation::atomic_fadd) *buf.counter() = 0;  // the peer adds to it
    if (!ch.barrier()) return outcome::peer_gone;
    auto [err, secs] = with_stack_offset(stack_offset(m.round, o.reps, m.rep, m.n_paths, m.k), [&] {
        std::string e = m.p.run(pt.op, rank, pt.size, warmup, pt.window);
        double t = 0;
        if (e.empty()) {
            const auto t0 = std::chrono::steady_clock::now();
            e = m.p.run(pt.op, rank, pt.size, pt.iterations, pt.window);
            t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        }
        return std::pair{std::move(e), t};
    });
    status mine;
    mine.ok = err.empty() ? 1 : 0;
    if (verify && err.empty()) err = check_result(pt, buf, rank, warmup, mine);
    status peer;
    std::string peer_err;
    if (!exchange_status(ch, rank, mine, err, peer, peer_err)) return outcome::peer_gone;
    const auto show = [&](const char* what) {
        if (rank == 0)  // every pair's initiator: a failure in any pair is shown
            std::fprintf(stderr, "\nloom-bench: %s%s %s %s: %s\n", what, o.paths[m.k].c_str(),
                         std::string(name_of(pt.op)).c_str(), format_size(pt.size).c_str(), samples.error.c_str());
    };
    if (mine.ok == 0 || peer.ok == 0) {
        samples.error = !err.empty() ? err : "peer: " + peer_err;
        show("");
        return outcome::failed;
    }
    if (mine.verified == 0 || peer.verified == 0) {
        samples.verified = false;
        samples.error = !err.empty() ? err : "peer: " + peer_err;
        show("WRONG BYTES: ");
    }
    samples.measured = true;
    samples.seconds_per_message.push_back(
        secs / (static_cast<double>(pt.iterations) * messages_per_iteration(pt.op, pt.size, o.sched)));
    return outcome::measured;
}

/// The progress line for one measurement.
auto progress_text(const options& o, const point& pt, std::size_t k, int round, int rep, std::size_t done,
                   std::size_t total) -> std::string {
    return "[loom-bench] " + o.provider + " " + std::string(name_of(pt.op)) + " " + format_size(pt.size) + "  rep " +
           std::to_string(rep + 1) + "/" + std::to_string(o.reps) +
           (o.rounds > 1 ? "  round " + std::to_string(round + 1) + "/" + std::to_string(o.rounds) : std::string{}) +
           "  " + o.paths[k] + "  (" + std::to_string(done + 1) + "/" + std::to_string(total) + ")";
}

/// Measures every point of one round through every path; false once measuring must stop
/// (`gone`: because the channel broke).
auto measure_round(const options& o, std::vector<point>& points, std::vector<path_ptr>& paths, buffers& buf,
                   channel& ch, int rank, int round, const progress_line& prog, bool& gone) -> bool {
    for (std::size_t done = 0; done < points.size(); ++done) {
        point& pt = points[done];
        // Every message of a window has its own buffer range, each filled with the pattern.
        for (int w = 0; w < pt.window; ++w) fill(buf.tx + static_cast<std::size_t>(w) * pt.size, pt.size);
        for (int rep = 0; rep < o.reps; ++rep) {
            // The order the paths run in moves from repetition to repetition (and round to
            // round; run_order): each runs equally often in every place, after every path.
            for (std::size_t j = 0; j < paths.size(); ++j) {
                const std::size_t k = run_order(paths.size(), round, o.reps, rep, j);
                auto& p = *paths[k];
                if (auto why = p.unsupported(pt.op); !why.empty()) {
                    pt.paths[o.paths[k]].skipped = why;
                    continue;
                }
                if (prog.tty || (rep == 0 && j == 0))
                    prog.show(progress_text(o, pt, k, round, rep, done, points.size()));
                const auto r = measure(o, buf, ch, rank, {pt, p, k, round, rep, paths.size()});
                if (r == outcome::measured) continue;
                gone = r == outcome::peer_gone;
                if (gone) std::fprintf(stderr, "loom-bench: rank %d: peer gone\n", rank);
                return false;
            }
        }
    }
    return true;
}

// ---------------------------------------------------------------- results
/// Every pair's initiator hands its medians to pair 0's (under MPI with several pairs), which
/// keeps what all pairs did next to pair 0's own figures. False when gathering failed.
auto gather_pairs(const options& o, channel& ch, std::vector<point>& points, bool reporter, int pair) -> bool {
    std::vector<double> mine;
    for (const auto& pt : points)
        for (const auto& name : o.paths) {
            const auto it = pt.paths.find(name);
            const bool has = it != pt.paths.end() && it->second.measured && it->second.skipped.empty() &&
                             !it->second.seconds_per_message.empty();
            mine.push_back(has ? median(it->second.seconds_per_message) : std::numeric_limits<double>::quiet_NaN());
        }
    std::vector<std::vector<double>> all;
    if (!ch.gather_initiators(mine, all)) {
        std::fprintf(stderr, "loom-bench: rank 0 of pair %d: gathering the pairs' figures failed\n", pair);
        return false;
    }
    if (!reporter || all.size() <= 1) return true;
    std::size_t k = 0;
    for (auto& pt : points)
        for (const auto& name : o.paths) {
            if (auto it = pt.paths.find(name); it != pt.paths.end())
                for (const auto& v : all)
                    it->second.pair_seconds.push_back(k < v.size() ? v[k] : std::numeric_limits<double>::quiet_NaN());
            ++k;
        }
    return true;
}

/// The table (stdout, or stderr when stdout carries JSON or CSV) and the files asked for.
void write_report(const options& o, const run_info& info, const std::vector<point>& points) {
    const bool json_stdout = o.json == "-";
    const std::string table = render_table(info, points);
    std::fputs(table.c_str(), json_stdout || o.csv == "-" ? stderr : stdout);
    if (!o.json.empty() && !write_file(o.json, render_json(info, points)))
        std::fprintf(stderr, "loom-bench: cannot write %s\n", o.json.c_str());
    if (!o.csv.empty() && !write_file(o.csv, render_csv(info, points)))
        std::fprintf(stderr, "loom-bench: cannot write %s\n", o.csv.c_str());
    if (!o.plot.empty()) {
        if (write_file(o.plot, render_svg(info, points)))
            std::fprintf(json_stdout ? stderr : stdout, "# plot: %s\n", o.plot.c_str());
        else
            std::fprintf(stderr, "loom-bench: cannot write %s\n", o.plot.c_str());
    }
    std::fflush(stdout);
}

}  // namespace

auto run_rank(const options& o, channel& ch, int rank, int ranks, const char* launcher, int pair) -> int {
    const bool reporter = rank == 0 && pair == 0;  // the other pairs measure alongside, silently
    buffers buf;
    buffer_memory mem;
    if (!allocate_buffers(o, buf, mem)) {
        std::fprintf(stderr, "loom-bench: rank %d: cannot allocate the buffers\n", rank);
        return ch.abandon(1);
    }
    const path_config cfg = config_of(o);
    run_info info = info_of(o, ranks, launcher);
    const progress_line prog{reporter && !o.quiet, ::isatty(2) != 0};
    std::vector<point> points = plan_points(o, reporter);

    bool failed = false;
    for (int round = 0; round < o.rounds && !failed; ++round) {
        std::vector<std::unique_ptr<std::byte[]>> heap_pads;  // freed after the paths
        auto paths = open_paths(o, cfg, buf, ch, rank, round, heap_pads);
        if (paths.empty()) return ch.abandon(1);
        if (round == 0) info.domain = paths.front()->domain_name();
        bool gone = false;
        failed = !measure_round(o, points, paths, buf, ch, rank, round, prog, gone);
        if (gone) return ch.abandon(1);
        if (!ch.barrier()) failed = true;
    }
    prog.clear();
    if (!ch.barrier()) failed = true;
    if (rank == 0 && !gather_pairs(o, ch, points, reporter, pair)) failed = true;
    const bool wrong = std::any_of(points.begin(), points.end(), [](const point& pt) {
        return std::any_of(pt.paths.begin(), pt.paths.end(), [](const auto& kv) { return !kv.second.verified; });
    });
    if (!reporter) return failed ? 1 : (wrong ? 3 : 0);
    // A failure stops the measurements: the points never reached are not reported.
    std::erase_if(points, [](const point& p) { return p.paths.empty(); });
    write_report(o, info, points);
    if (failed) return 1;
    return wrong ? 3 : 0;
}

}  // namespace loom::bench
