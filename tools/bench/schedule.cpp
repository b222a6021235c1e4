// tools/bench/schedule.cpp — operations, sizes, windows and iteration counts, and the
// placements and orders that interleave the paths.
#include "report.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>

namespace loom::bench {

// ---------------------------------------------------------------- operations, sizes, schedule
auto name_of(operation op) -> std::string_view {
    switch (op) {
        case operation::pingpong: return "pingpong";
        case operation::pingpong_untagged: return "pingpong_untagged";
        case operation::stream: return "stream";
        case operation::rma_write: return "rma_write";
        case operation::rma_read: return "rma_read";
        case operation::atomic_fadd: return "atomic_fadd";
        case operation::msgrate: return "msgrate";
    }
    return "?";
}

auto parse_operation(std::string_view s) -> std::optional<operation> {
    if (s == "pingpong" || s == "latency" || s == "tagged") return operation::pingpong;
    if (s == "pingpong_untagged" || s == "untagged") return operation::pingpong_untagged;
    if (s == "stream" || s == "bw" || s == "bandwidth") return operation::stream;
    if (s == "rma_write" || s == "write") return operation::rma_write;
    if (s == "rma_read" || s == "read") return operation::rma_read;
    if (s == "atomic_fadd" || s == "fadd") return operation::atomic_fadd;
    if (s == "msgrate" || s == "message_rate") return operation::msgrate;
    return std::nullopt;
}

auto metric_of(operation op) -> metric {
    switch (op) {
        case operation::pingpong:
        case operation::pingpong_untagged: return metric::latency;
        case operation::stream:
        case operation::rma_write:
        case operation::rma_read: return metric::bandwidth;
        case operation::atomic_fadd:
        case operation::msgrate: return metric::rate;
    }
    return metric::latency;
}

auto is_latency(operation op) -> bool { return metric_of(op) == metric::latency; }
auto is_windowed(operation op) -> bool { return !is_latency(op); }
auto is_rma(operation op) -> bool { return op == operation::rma_write || op == operation::rma_read; }
auto is_atomic(operation op) -> bool { return op == operation::atomic_fadd; }

auto sizes_for(operation op, std::span<const std::size_t> sizes) -> std::vector<std::size_t> {
    if (op == operation::atomic_fadd) return {8};
    std::vector<std::size_t> out;
    for (std::size_t s : sizes)
        if (op != operation::msgrate || s <= msgrate_max_size) out.push_back(s);
    return out;
}

auto parse_size(std::string_view s) -> std::optional<std::size_t> {
    if (s.empty()) return std::nullopt;
    std::size_t v = 0, i = 0;
    for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) != 0; ++i) {
        if (v > (std::numeric_limits<std::size_t>::max() - 9) / 10) return std::nullopt;
        v = v * 10 + static_cast<std::size_t>(s[i] - '0');
    }
    if (i == 0) return std::nullopt;
    std::string_view rest = s.substr(i);
    int shift = 0;
    if (!rest.empty()) {
        switch (std::toupper(static_cast<unsigned char>(rest[0]))) {
            case 'K': shift = 10; break;
            case 'M': shift = 20; break;
            case 'G': shift = 30; break;
            default: return std::nullopt;
        }
        rest.remove_prefix(1);
        if (rest == "iB" || rest == "B" || rest == "ib" || rest == "b") rest = {};
        if (!rest.empty()) return std::nullopt;
    }
    if (shift != 0 && v > (std::numeric_limits<std::size_t>::max() >> shift)) return std::nullopt;
    return v << shift;
}

auto parse_sizes(std::string_view s) -> std::expected<std::vector<std::size_t>, std::string> {
    std::vector<std::size_t> out;
    if (const auto colon = s.find(':'); colon != std::string_view::npos) {
        const auto from = parse_size(s.substr(0, colon));
        const auto to = parse_size(s.substr(colon + 1));
        if (!from || !to || *from == 0 || *from > *to)
            return std::unexpected("bad size range '" + std::string(s) + "' (want FROM:TO, e.g. 8:64M)");
        for (std::size_t v = *from; v <= *to; v *= 2) {
            out.push_back(v);
            if (v > std::numeric_limits<std::size_t>::max() / 2) break;
        }
        return out;
    }
    std::size_t start = 0;
    while (start <= s.size()) {
        const auto comma = s.find(',', start);
        const auto item = s.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
        const auto v = parse_size(item);
        if (!v || *v == 0) return std::unexpected("bad size '" + std::string(item) + "' (want e.g. 8, 4K, 1M)");
        out.push_back(*v);
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

auto default_sizes() -> std::vector<std::size_t> {
    std::vector<std::size_t> out;
    for (std::size_t v = 8; v <= (std::size_t{64} << 20); v *= 2) out.push_back(v);
    return out;
}

auto format_size(std::size_t b) -> std::string {
    char buf[32];
    if (b >= (std::size_t{1} << 30) && b % (std::size_t{1} << 30) == 0)
        std::snprintf(buf, sizeof buf, "%zuG", b >> 30);
    else if (b >= (std::size_t{1} << 20) && b % (std::size_t{1} << 20) == 0)
        std::snprintf(buf, sizeof buf, "%zuM", b >> 20);
    else if (b >= 1024 && b % 1024 == 0)
        std::snprintf(buf, sizeof buf, "%zuK", b >> 10);
    else
        std::snprintf(buf, sizeof buf, "%zu", b);
    return buf;
}

auto window_for(std::size_t size, const schedule_params& p) -> int {
    const std::size_t fits = p.window_bytes / std::max<std::size_t>(1, size);
    return static_cast<int>(std::clamp<std::size_t>(fits, 1, static_cast<std::size_t>(std::max(1, p.window))));
}

auto buffer_bytes(std::span<const std::size_t> sizes, const schedule_params& p) -> std::size_t {
    std::size_t need = 0;
    for (std::size_t s : sizes) need = std::max(need, s * static_cast<std::size_t>(window_for(s, p)));
    return need;
}

auto messages_per_iteration(operation op, std::size_t size, const schedule_params& p) -> int {
    return is_windowed(op) ? window_for(size, p) : 2;
}

auto iterations_for(operation op, std::size_t size, const schedule_params& p) -> int {
    if (p.fixed_iterations > 0) return p.fixed_iterations;
    const std::size_t per_iter =
        std::max<std::size_t>(1, size) * static_cast<std::size_t>(messages_per_iteration(op, size, p));
    const std::size_t n = p.byte_budget / per_iter;
    // An iteration of a windowed operation (stream, RMA, message rate, fetch-adds) is a whole
    // window: a quarter of the ping-pong count. The caps keep small-message measurements long
    // enough to time well (10000 ping-pongs: ~10 ms on shm) without slowing the big sizes,
    // which the byte budget bounds.
    const int max_it = is_windowed(op) ? std::max(1, p.max_iterations / 4) : p.max_iterations;
    const int min_it = is_windowed(op) ? std::max(1, p.min_iterations / 2) : p.min_iterations;
    if (n >= static_cast<std::size_t>(max_it)) return max_it;
    return std::max(min_it, static_cast<int>(n));
}

namespace {
/// Path k of round `round` numbered in sequence (i = round * n_paths + k) and placed on a line of
/// a page: an odd `step` makes i -> step * i mod 64 visit all 64 lines before one repeats.
auto spread_over_lines(int round, std::size_t n_paths, std::size_t k, std::size_t step, std::size_t start)
    -> std::size_t {
    constexpr std::size_t lines = page_bytes / 64;
    const std::size_t i = static_cast<std::size_t>(std::max(0, round)) * std::max<std::size_t>(1, n_paths) + k;
    return ((i * step + start) % lines) * 64;
}
}  // namespace

auto path_offset(int round, std::size_t n_paths, std::size_t k) -> std::size_t {
    return spread_over_lines(round, n_paths, k, 37, 0);  // consecutive rounds and paths land far apart
}

auto heap_offset(int round, std::size_t n_paths, std::size_t k) -> std::size_t {
    return spread_over_lines(round, n_paths, k, 23, 11);  // another order than path_offset's
}

auto stack_offset(int round, int reps, int rep, std::size_t n_paths, std::size_t k) -> std::size_t {
    // Path k's measurements in sequence: i = 0, 1, 2, ... (round by round, repetition by
    // repetition). 97 is odd, so i -> 97 i mod 256 visits all 256 offsets before repeating one;
    // the paths of one measurement start from different offsets spread over the page.
    constexpr std::size_t slots = page_bytes / 16;
    const auto i = static_cast<std::size_t>(std::max(0, round) * std::max(1, reps) + std::max(0, rep));
    const std::size_t start = k * slots / std::max<std::size_t>(1, n_paths);
    return ((i * 97 + start) % slots) * 16;
}

auto code_copy(int round, std::size_t k) -> std::size_t {
    // Consecutive copies for the paths of a round (distinct while there are at most
    // code_copies paths), the whole set moving on by 3 (odd, so coprime with 8) every round.
    return (static_cast<std::size_t>(std::max(0, round)) * 3 + k) % code_copies;
}

auto run_order_cycle(std::size_t n_paths) -> std::size_t { return n_paths % 2 == 0 ? n_paths : 2 * n_paths; }

auto run_order(std::size_t n_paths, int round, int reps, int rep, std::size_t j) -> std::size_t {
    if (n_paths == 0) return 0;
    const std::size_t n = n_paths;
    j %= n;
    const auto seq = static_cast<std::size_t>(std::max(0, round) * std::max(1, reps) + std::max(0, rep));
    const std::size_t row = seq % run_order_cycle(n);
    // Williams' first row 0, 1, n-1, 2, n-2, ...; row r adds r to it (mod n); for odd n the rows
    // n .. 2n-1 are rows 0 .. n-1 read backwards.
    const std::size_t col = row < n ? j : n - 1 - j;
    const std::size_t base = col == 0 ? 0 : col % 2 == 1 ? (col + 1) / 2 : n - col / 2;
    return (base + row % n) % n;
}

auto warmup_for(int iterations) -> int { return std::max(1, std::min(100, iterations / 10)); }

}  // namespace loom::bench
