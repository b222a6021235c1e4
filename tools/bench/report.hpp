// tools/bench/report.hpp — the pure part of loom-bench: statistics, the size/iteration
// schedule, the result model and its renderings (nccl-tests-style table, JSON, CSV, SVG plot).
// No libfabric, no processes: unit tests link this library alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace loom::bench {

// ---------------------------------------------------------------- statistics
struct summary {
    double median{0};
    double min{0};
    double max{0};
    /// Median absolute deviation relative to the median, in percent (robust spread).
    double spread_pct{0};
    std::size_t samples{0};
};

[[nodiscard]] auto median(std::span<const double> values) -> double;
[[nodiscard]] auto summarize(std::span<const double> values) -> summary;
/// Paired ratio of two interleaved series: the median of path[i] / base[i]. Pairs whose base is
/// not positive are skipped; nullopt when no pair is left or the lengths differ.
[[nodiscard]] auto paired_ratio(std::span<const double> path, std::span<const double> base) -> std::optional<double>;

/// A distribution-free confidence interval of a median: [lo, hi] are order statistics of the
/// samples, chosen so that the interval holds the true median with probability `level` or more.
struct interval {
    double lo{0};
    double hi{0};
    double level{0};  ///< exact coverage of the chosen order statistics (>= the level asked for)
};
/// The interval for the median of `values` at `level` (e.g. 0.95): for n sorted samples,
/// [x(k), x(n+1-k)] with the largest k whose coverage 1 - 2 P(Binomial(n, 1/2) < k) reaches the
/// level. nullopt when even [min, max] falls short (n < 6 at 95 %) or the level is not in (0, 1).
[[nodiscard]] auto median_interval(std::span<const double> values, double level = 0.95) -> std::optional<interval>;
/// The interval of paired_ratio: of the median of path[i] / base[i] over the same pairs.
[[nodiscard]] auto paired_ratio_interval(std::span<const double> path, std::span<const double> base,
                                         double level = 0.95) -> std::optional<interval>;

// ---------------------------------------------------------------- operations and schedule
enum class operation { pingpong, pingpong_untagged, stream, rma_write, rma_read, atomic_fadd, msgrate };
[[nodiscard]] auto name_of(operation op) -> std::string_view;
[[nodiscard]] auto parse_operation(std::string_view s) -> std::optional<operation>;
/// What an operation's time per message means:
///   latency    one-way message time (half a round trip); ratio = time / raw time
///   bandwidth  time per message of a window in flight; ratio = bandwidth / raw bandwidth
///   rate       time per message or atomic of a window in flight, reported as a rate
///              (operations per second); ratio = rate / raw rate
enum class metric { latency, bandwidth, rate };
[[nodiscard]] auto metric_of(operation op) -> metric;
/// Latency operations report time per one-way message (half a round trip).
[[nodiscard]] auto is_latency(operation op) -> bool;
/// Operations that keep a window of requests in flight (every one but the ping-pongs).
[[nodiscard]] auto is_windowed(operation op) -> bool;
/// One-sided operations (need FI_RMA / FI_ATOMIC and remotely accessible registrations).
[[nodiscard]] auto is_rma(operation op) -> bool;
[[nodiscard]] auto is_atomic(operation op) -> bool;
/// msgrate measures small messages only: sizes above this are left out.
inline constexpr std::size_t msgrate_max_size = 4096;
/// The sizes an operation runs at: all of them, those up to msgrate_max_size for msgrate, and
/// the single 8-byte point (one uint64) for atomic_fadd. May be empty (msgrate, no small size).
[[nodiscard]] auto sizes_for(operation op, std::span<const std::size_t> sizes) -> std::vector<std::size_t>;

/// "8,64,4K,1M" (a list) or "8:64M" (powers of two from..to); K/M/G are binary multiples.
[[nodiscard]] auto parse_size(std::string_view s) -> std::optional<std::size_t>;
[[nodiscard]] auto parse_sizes(std::string_view s) -> std::expected<std::vector<std::size_t>, std::string>;
/// 8 B to 64 MiB, powers of two.
[[nodiscard]] auto default_sizes() -> std::vector<std::size_t>;
[[nodiscard]] auto format_size(std::size_t bytes) -> std::string;

struct schedule_params {
    std::size_t byte_budget{std::size_t{16} << 20};  ///< payload bytes one measurement aims to move
    int max_iterations{10000};                       ///< ping-pong; windowed operations get a quarter (windows)
    int min_iterations{2};
    int fixed_iterations{0};  ///< --iters: the same count at every size (0: scaled)
    int window{16};           ///< messages in flight per streaming iteration
    /// A streaming window's messages use disjoint buffer ranges: above window_bytes / window
    /// bytes per message the window shrinks so that it fits (at least 1 message).
    std::size_t window_bytes{std::size_t{64} << 20};
};
/// Messages in flight per streaming iteration at this size.
[[nodiscard]] auto window_for(std::size_t size, const schedule_params& p) -> int;
/// Payload buffer bytes one rank needs for these sizes (the largest message or window).
[[nodiscard]] auto buffer_bytes(std::span<const std::size_t> sizes, const schedule_params& p) -> std::size_t;
/// Timed iterations for one measurement: budget / bytes-per-iteration, clamped.
[[nodiscard]] auto iterations_for(operation op, std::size_t size, const schedule_params& p) -> int;
/// Untimed warm-up iterations before each measurement.
[[nodiscard]] auto warmup_for(int iterations) -> int;
/// Messages per iteration (ping-pong: 2 one-way messages; windowed operations: the window at
/// this size).
[[nodiscard]] auto messages_per_iteration(operation op, std::size_t size, const schedule_params& p) -> int;

/// Which path runs `j`-th in repetition `rep` of round `round` (`reps` repetitions per round).
/// The orders are the rows of a Williams design (a balanced Latin square; for an odd number of
/// paths, the rows and their mirror images): over one cycle of n rows (2n when n is odd) every
/// path runs equally often in every place and right after every other path, so neither the
/// place in a repetition nor what the previous path left behind falls on one path only.
[[nodiscard]] auto run_order(std::size_t n_paths, int round, int reps, int rep, std::size_t j) -> std::size_t;
/// Bytes of the pages path objects are placed in.
inline constexpr std::size_t page_bytes = 4096;
/// Where (bytes into a page, a multiple of 64) path `k` of `n_paths` is built in round `round`.
/// The fields a path's loops read every message — its endpoint and queue handles, the payload
/// buffer pointers — sit wherever its object lands, and that moved its speed: the loom path's
/// members shifted by 1-3 KiB ran 2-5 % slower in shm streams of 16-128 B (8 runs each, raw2
/// unchanged). Each round therefore places every path at another offset (the paths of a round
/// at different ones), so what a layout gains or loses is spread over the rounds like the
/// provider's placement.
[[nodiscard]] auto path_offset(int round, std::size_t n_paths, std::size_t k) -> std::size_t;
/// How many bytes (a multiple of 64 below page_bytes) are allocated from the heap, and kept for
/// the round, before path `k` of `n_paths` opens in round `round`. The provider's and loom's
/// objects of a path come from the heap, and where they fall within a page depends on all the
/// program's data before them, which a build changes; moving every path's heap objects by
/// another amount each round spreads what a layout gains or loses over the rounds (measured in
/// docs/results/2026-12-07-asio-handler-chains.md).
[[nodiscard]] auto heap_offset(int round, std::size_t n_paths, std::size_t k) -> std::size_t;
/// How far below its usual place (bytes, a multiple of 16 below page_bytes) the stack is moved
/// for measurement `rep` of round `round` of path `k` of `n_paths`. Where the stack falls within
/// a page decides how its slots alias (modulo 4 KiB) the provider's queues, the completion
/// entries and the path's own state, and that moved loom/raw in shm streams of 128 B from 0.94
/// to 1.02 with nothing but the size of the environment changed (address randomization off);
/// with it on, every process drew one such layout for all its rounds, and the ratio of one
/// run differed from the next by up to 10 %. Each measurement therefore runs at another offset
/// (all 256 before any repeats for one path), and a run's ratio is a mean over layouts.
[[nodiscard]] auto stack_offset(int round, int reps, int rep, std::size_t n_paths, std::size_t k) -> std::size_t;
/// How many copies of every path's code loom-bench carries (path.hpp: place_copy).
inline constexpr std::size_t code_copies = 8;
/// Which code copy path `k` runs in round `round`. Where a path's loops sit in the
/// address space decides how their branches share the predictors and caches with the
/// provider's code; two instances of raw with the very same code differed by up to 3 % in shm
/// streams of 128 B between builds that only changed another path's source (their code moved
/// by whole pages), and loom/raw moved by as much with one instruction reordered. Each round
/// therefore runs every path from another copy (the paths of a round from different ones), so
/// that placement is averaged over the rounds too; the A/A control (raw2) then includes it.
[[nodiscard]] auto code_copy(int round, std::size_t k) -> std::size_t;
/// Rows in one cycle of run_order: n for an even number of paths, 2n for an odd one.
[[nodiscard]] auto run_order_cycle(std::size_t n_paths) -> std::size_t;

// ---------------------------------------------------------------- results
/// One path at one point: per-repetition seconds per message (one-way), in run order.
struct path_samples {
    std::vector<double> seconds_per_message;
    bool verified{true};
    bool measured{false};
    std::string error;
    /// Not run by this path (no RMA in the NCCL ABI, no atomics in the provider, ...): why.
    /// A skipped path is neither verified nor wrong.
    std::string skipped;
    /// Several pairs measuring at once (MPI): every pair's median seconds per message, pair 0
    /// first (NaN where a pair has none). Empty with one pair.
    std::vector<double> pair_seconds;
};

struct point {
    operation op{operation::pingpong};
    std::size_t size{0};
    int iterations{0};
    int window{1};                              ///< messages in flight (windowed ops), 1 for ping-pong
    std::map<std::string, path_samples> paths;  // by path name
};

struct run_info {
    std::string provider;
    std::string domain;
    std::string threading;  ///< --threading; empty: the provider's choice
    std::string launcher{"local"};
    int ranks{2};
    /// Pairs of ranks measuring at the same time (ranks / 2); the figures are pair 0's.
    int pairs{1};
    int window{16};
    int repetitions{5};              ///< per round
    int rounds{1};                   ///< times every path was opened anew and every point measured
    std::vector<std::string> paths;  // in display order; "raw" first when present
    /// The table's columns against raw show the nanoseconds each message adds (path_stats::
    /// added_ns) instead of the ratio (--added-ns); JSON and CSV carry both.
    bool table_added_ns{false};
};

/// Derived numbers for one path at one point.
struct path_stats {
    summary time_us;              ///< microseconds per one-way message
    double algbw_gbps{0};         ///< size / median time, GB/s (1e9 bytes)
    double rate_per_s{0};         ///< messages (or atomics) per second: 1 / median time
    std::optional<double> ratio;  ///< latency: time/raw; bandwidth, rate: bw/raw (paired); nullopt for raw
    /// 95 % interval of the ratio (the paired ratios' median); nullopt below 6 paired samples.
    std::optional<interval> ratio_ci;
    /// Nanoseconds per message over raw: the median of the paired differences (path time - raw
    /// time), what the path adds to each message (it moves less with raw's speed than the ratio
    /// does); nullopt for raw.
    std::optional<double> added_ns;
    std::optional<interval> added_ns_ci;  ///< its 95 % interval; nullopt below 6 paired samples
};
[[nodiscard]] auto stats_of(const point& pt, const std::string& path) -> std::optional<path_stats>;

/// What all pairs together achieved at one point (several pairs measuring at once).
struct aggregate_stats {
    int pairs{0};               ///< pairs with a measurement
    double algbw_gbps{0};       ///< sum of every pair's bandwidth at its median time
    double rate_per_s{0};       ///< sum of every pair's message (or atomic) rate
    double slowest_time_us{0};  ///< the largest of the pairs' median times
};
/// nullopt unless the path has figures of more than one pair at this point.
[[nodiscard]] auto aggregate_of(const point& pt, const std::string& path) -> std::optional<aggregate_stats>;

[[nodiscard]] auto render_table(const run_info& info, std::span<const point> points) -> std::string;
[[nodiscard]] auto render_json(const run_info& info, std::span<const point> points) -> std::string;
[[nodiscard]] auto render_csv(const run_info& info, std::span<const point> points) -> std::string;
/// The operation a panel plots: latency: pingpong, else pingpong_untagged; bandwidth: stream,
/// else rma_write, else rma_read. Rate operations are not plotted.
[[nodiscard]] auto plotted_op(std::span<const point> points, bool latency) -> std::optional<operation>;
/// Two log-log panels: latency (ping-pong) and bandwidth (stream) against size, one series per path.
[[nodiscard]] auto render_svg(const run_info& info, std::span<const point> points) -> std::string;

}  // namespace loom::bench
