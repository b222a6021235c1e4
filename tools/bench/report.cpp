#include "report.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>

namespace loom::bench {

namespace {

auto fmt(const char* f, double v) -> std::string {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}

auto json_escape(std::string_view s) -> std::string {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\t': out += "\\t"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char b[8];
                    std::snprintf(b, sizeof b, "\\u%04x", static_cast<unsigned>(c));
                    out += b;
                } else {
                    out += c;
                }
        }
    }
    return out;
}

auto xml_escape(std::string_view s) -> std::string {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '&': out += "&amp;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&apos;"; break;
            default: out += c;
        }
    }
    return out;
}

/// "7 repetitions interleaved", or "3 rounds x 7 repetitions interleaved".
auto repetitions_note(const run_info& info) -> std::string {
    const std::string reps = std::to_string(info.repetitions) + " repetitions interleaved";
    return info.rounds > 1 ? std::to_string(info.rounds) + " rounds x " + reps : reps;
}

/// A finite number for JSON (JSON has no NaN/Inf).
auto jnum(double v) -> std::string {
    if (!std::isfinite(v)) return "null";
    return fmt("%.6g", v);
}

}  // namespace

// ---------------------------------------------------------------- statistics
auto median(std::span<const double> values) -> double {
    if (values.empty()) return 0;
    std::vector<double> v(values.begin(), values.end());
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

auto summarize(std::span<const double> values) -> summary {
    summary s;
    s.samples = values.size();
    if (values.empty()) return s;
    s.median = median(values);
    const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
    s.min = *lo;
    s.max = *hi;
    std::vector<double> dev;
    dev.reserve(values.size());
    for (double v : values) dev.push_back(std::fabs(v - s.median));
    s.spread_pct = s.median > 0 ? median(dev) / s.median * 100 : 0;
    return s;
}

namespace {
/// path[i] / base[i] over the pairs whose base is positive and whose path value is finite;
/// nullopt when the lengths differ.
auto pair_ratios(std::span<const double> path, std::span<const double> base) -> std::optional<std::vector<double>> {
    if (path.size() != base.size()) return std::nullopt;
    std::vector<double> r;
    for (std::size_t i = 0; i < path.size(); ++i)
        if (base[i] > 0 && std::isfinite(path[i])) r.push_back(path[i] / base[i]);
    return r;
}
}  // namespace

auto paired_ratio(std::span<const double> path, std::span<const double> base) -> std::optional<double> {
    auto r = pair_ratios(path, base);
    if (!r || r->empty()) return std::nullopt;
    return median(*r);
}

auto median_interval(std::span<const double> values, double level) -> std::optional<interval> {
    const std::size_t n = values.size();
    if (n == 0 || !(level > 0 && level < 1)) return std::nullopt;
    // below = P(Binomial(n, 1/2) < k), summed term by term in log space (n may be large).
    const double nd = static_cast<double>(n);
    auto term = [&](std::size_t j) {
        const double jd = static_cast<double>(j);
        return std::exp(std::lgamma(nd + 1) - std::lgamma(jd + 1) - std::lgamma(nd - jd + 1) - nd * std::log(2.0));
    };
    std::size_t k = 0;  // the interval is [x(k), x(n+1-k)], 1-based; 0: none reaches the level
    double below = 0;   // P(B < k + 1) after adding term(k)
    double coverage = 0;
    for (std::size_t j = 0; 2 * (j + 1) <= n + 1; ++j) {
        below += term(j);  // P(B <= j) = P(B < j + 1)
        const double c = 1 - 2 * below;
        if (c < level) break;
        k = j + 1;
        coverage = c;
    }
    if (k == 0) return std::nullopt;
    std::vector<double> v(values.begin(), values.end());
    std::sort(v.begin(), v.end());
    return interval{v[k - 1], v[n - k], coverage};
}

auto paired_ratio_interval(std::span<const double> path, std::span<const double> base, double level)
    -> std::optional<interval> {
    auto r = pair_ratios(path, base);
    if (!r) return std::nullopt;
    return median_interval(*r, level);
}

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

auto path_offset(int round, std::size_t n_paths, std::size_t k) -> std::size_t {
    // 37 is odd, so i -> 37 i mod 64 visits all 64 lines; consecutive rounds and paths land far apart.
    constexpr std::size_t lines = page_bytes / 64;
    const std::size_t i = static_cast<std::size_t>(std::max(0, round)) * std::max<std::size_t>(1, n_paths) + k;
    return (i * 37 % lines) * 64;
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

// ---------------------------------------------------------------- derived numbers
auto stats_of(const point& pt, const std::string& path) -> std::optional<path_stats> {
    const auto it = pt.paths.find(path);
    if (it == pt.paths.end() || !it->second.measured || it->second.seconds_per_message.empty()) return std::nullopt;
    path_stats st;
    std::vector<double> us;
    for (double s : it->second.seconds_per_message) us.push_back(s * 1e6);
    st.time_us = summarize(us);
    st.algbw_gbps = st.time_us.median > 0 ? static_cast<double>(pt.size) / (st.time_us.median * 1e-6) / 1e9 : 0;
    st.rate_per_s = st.time_us.median > 0 ? 1e6 / st.time_us.median : 0;
    if (path != "raw") {
        const auto raw = pt.paths.find("raw");
        if (raw != pt.paths.end() && raw->second.measured) {
            const auto& p = it->second.seconds_per_message;
            const auto& r = raw->second.seconds_per_message;
            // latency: path time / raw time; bandwidth and rate: raw time / path time.
            const auto ratios = is_latency(pt.op) ? pair_ratios(p, r) : pair_ratios(r, p);
            if (ratios && !ratios->empty()) {
                st.ratio = median(*ratios);
                st.ratio_ci = median_interval(*ratios);
            }
        }
    }
    return st;
}

auto aggregate_of(const point& pt, const std::string& path) -> std::optional<aggregate_stats> {
    const auto it = pt.paths.find(path);
    if (it == pt.paths.end() || it->second.pair_seconds.size() < 2 || !it->second.skipped.empty()) return std::nullopt;
    aggregate_stats a;
    for (double s : it->second.pair_seconds) {
        if (!std::isfinite(s) || s <= 0) continue;
        ++a.pairs;
        a.algbw_gbps += static_cast<double>(pt.size) / s / 1e9;
        a.rate_per_s += 1 / s;
        a.slowest_time_us = std::max(a.slowest_time_us, s * 1e6);
    }
    if (a.pairs == 0) return std::nullopt;
    return a;
}

// ---------------------------------------------------------------- table
namespace {
/// Under several pairs: per point, what all pairs together did (sum of bandwidths or rates;
/// latency: the slowest pair's median). Empty when no point has figures of several pairs.
auto aggregate_rows(const run_info& info, std::span<const point> points, operation op) -> std::string {
    const metric m = metric_of(op);
    std::string rows;
    char line[256];
    for (const auto& pt : points) {
        if (pt.op != op) continue;
        std::snprintf(line, sizeof line, "%10s", format_size(pt.size).c_str());
        std::string row = line;
        bool any = false;
        for (const auto& p : info.paths) {
            const auto a = aggregate_of(pt, p);
            any = any || a.has_value();
            if (!a)
                std::snprintf(line, sizeof line, " %12s", "-");
            else
                std::snprintf(line, sizeof line, " %12.3f",
                              m == metric::latency ? a->slowest_time_us
                              : m == metric::rate  ? a->rate_per_s / 1e6
                                                   : a->algbw_gbps);
            row += line;
        }
        if (any) rows += row + "\n";
    }
    if (rows.empty()) return rows;
    std::string head = "# all " + std::to_string(info.pairs) + " pairs together: " +
                       (m == metric::latency ? std::string("the slowest pair's median one-way latency (us)")
                        : m == metric::rate  ? std::string("sum of the pairs' rates (M/s)")
                                             : std::string("sum of the pairs' bandwidths (GB/s)")) +
                       "\n#     size";
    for (const auto& p : info.paths) {
        std::snprintf(line, sizeof line, " %12s", p.c_str());
        head += line;
    }
    return head + "\n" + rows;
}
}  // namespace

auto render_table(const run_info& info, std::span<const point> points) -> std::string {
    constexpr std::size_t ratio_width = 23;  // "  1.000" and "  0.990-1.010"
    std::string out;
    const bool have_raw = std::find(info.paths.begin(), info.paths.end(), "raw") != info.paths.end();
    std::vector<operation> ops;
    for (const auto& pt : points)
        if (std::find(ops.begin(), ops.end(), pt.op) == ops.end()) ops.push_back(pt.op);
    for (operation op : ops) {
        const metric m = metric_of(op);
        char line[512];
        std::string window_note;
        if (is_windowed(op)) {
            window_note = ", window " + std::to_string(info.window);
            if (m == metric::bandwidth) window_note += " (fewer when a window exceeds 64M)";
        }
        const std::string pairs_note =
            info.pairs > 1 ? ", " + std::to_string(info.pairs) + " pairs at once (figures of pair 0; all pairs below)"
                           : std::string{};
        std::snprintf(line, sizeof line, "#\n# loom-bench %s: provider %s%s%s%s%s, %d ranks (%s)%s, %s%s\n",
                      std::string(name_of(op)).c_str(), info.provider.c_str(), info.domain.empty() ? "" : " domain ",
                      info.domain.c_str(), info.threading.empty() ? "" : ", threading ", info.threading.c_str(),
                      info.ranks, info.launcher.c_str(), pairs_note.c_str(), repetitions_note(info).c_str(),
                      window_note.c_str());
        out += line;
        switch (m) {
            case metric::latency:
                out +=
                    "# time: us one-way latency (median, half round trip), algbw: GB/s, +-: spread (MAD %), "
                    "ratio: time / raw time\n";
                break;
            case metric::bandwidth:
                out += op == operation::stream
                           ? "# time: us per message (median), algbw: GB/s, +-: spread (MAD %), ratio: bw / "
                             "raw bw\n"
                           : "# time: us per RMA " + std::string(op == operation::rma_write ? "write" : "read") +
                                 " (median), algbw: GB/s, +-: spread (MAD %), ratio: bw / raw bw\n";
                break;
            case metric::rate:
                out += op == operation::atomic_fadd
                           ? "# time: us per uint64 fetch-add (median), Mops/s: million fetch-adds per second, "
                             "+-: spread (MAD %), ratio: rate / raw rate\n"
                           : "# time: us per message (median), Mmsg/s: million messages per second, +-: spread "
                             "(MAD %), ratio: rate / raw rate\n";
                break;
        }
        if (have_raw && info.paths.size() > 1)
            out +=
                "# ci95: the ratio's 95 % interval (order statistics of the paired ratios; - below 6 "
                "samples)\n";
        const char* middle = m == metric::rate ? (op == operation::atomic_fadd ? " Mops/s" : " Mmsg/s") : "  algbw";
        // header
        std::string h1 = "#                     ", h2 = "#     size      count";
        for (const auto& p : info.paths) {
            const bool ratio = have_raw && p != "raw";
            const int width = ratio ? 50 : 27;
            std::snprintf(line, sizeof line, " %*s", width, (p + "  ").c_str());
            h1 += line;
            h2 += std::string("    time(us) ") + middle + "  +-%" + (ratio ? "   ratio           ci95" : "");
        }
        out += h1 + "   check\n" + h2 + "   \n";
        std::vector<std::pair<std::string, std::string>> notes;  // (path, why skipped)
        for (const auto& pt : points) {
            if (pt.op != op) continue;
            std::snprintf(line, sizeof line, "%10s %10d", format_size(pt.size).c_str(), pt.iterations);
            std::string row = line;
            bool all_ok = true;
            std::string bad;
            for (const auto& p : info.paths) {
                const bool ratio = have_raw && p != "raw";
                const auto st = stats_of(pt, p);
                const auto it = pt.paths.find(p);
                if (it != pt.paths.end() && !it->second.skipped.empty()) {
                    const std::pair<std::string, std::string> note{p, it->second.skipped};
                    if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(note);
                    std::snprintf(line, sizeof line, " %12s %7s %4s", "skipped", "", "");
                    row += line;
                    if (ratio) row += std::string(ratio_width, ' ');
                    continue;
                }
                if (it != pt.paths.end() && (!it->second.verified || !it->second.error.empty())) {
                    all_ok = false;
                    bad += (bad.empty() ? "" : ",") + p;
                }
                if (!st) {
                    std::snprintf(line, sizeof line, " %12s %7s %4s", "n/a", "", "");
                    row += line;
                    if (ratio) row += std::string(ratio_width, ' ');
                    continue;
                }
                const double mid = m == metric::rate ? st->rate_per_s / 1e6 : st->algbw_gbps;
                std::snprintf(line, sizeof line, " %12.2f %7.3f %4.0f", st->time_us.median, mid,
                              std::min(999.0, st->time_us.spread_pct));
                row += line;
                if (ratio) {
                    if (st->ratio)
                        std::snprintf(line, sizeof line, "  %6.3f", *st->ratio);
                    else
                        std::snprintf(line, sizeof line, "  %6s", "-");
                    row += line;
                    if (st->ratio_ci)
                        std::snprintf(line, sizeof line, "  %6.3f-%-6.3f", st->ratio_ci->lo, st->ratio_ci->hi);
                    else
                        std::snprintf(line, sizeof line, "  %13s", "-");
                    row += line;
                }
            }
            row += all_ok ? "   ok" : "   WRONG(" + bad + ")";
            out += row + "\n";
        }
        for (const auto& [p, why] : notes) out += "# " + p + ": skipped, " + why + "\n";
        out += aggregate_rows(info, points, op);
    }
    return out;
}

// ---------------------------------------------------------------- JSON / CSV
auto render_json(const run_info& info, std::span<const point> points) -> std::string {
    std::string o = "{\n  \"tool\": \"loom-bench\",\n";
    o += "  \"provider\": \"" + json_escape(info.provider) + "\",\n";
    o += "  \"domain\": \"" + json_escape(info.domain) + "\",\n";
    o += "  \"threading\": \"" + json_escape(info.threading) + "\",\n";
    o += "  \"launcher\": \"" + json_escape(info.launcher) + "\",\n";
    o += "  \"ranks\": " + std::to_string(info.ranks) + ",\n";
    o += "  \"pairs\": " + std::to_string(info.pairs) + ",\n";
    o += "  \"window\": " + std::to_string(info.window) + ",\n";
    o += "  \"repetitions\": " + std::to_string(info.repetitions) + ",\n";
    o += "  \"rounds\": " + std::to_string(info.rounds) + ",\n";
    o += "  \"paths\": [";
    for (std::size_t i = 0; i < info.paths.size(); ++i) o += (i ? ", \"" : "\"") + json_escape(info.paths[i]) + "\"";
    o += "],\n  \"results\": [";
    bool all_ok = true;
    for (std::size_t k = 0; k < points.size(); ++k) {
        const auto& pt = points[k];
        o += k ? ",\n    {" : "\n    {";
        o += "\"op\": \"" + std::string(name_of(pt.op)) + "\", \"size\": " + std::to_string(pt.size) +
             ", \"iterations\": " + std::to_string(pt.iterations) + ", \"window\": " + std::to_string(pt.window) +
             ", \"paths\": {";
        bool first = true;
        for (const auto& p : info.paths) {
            const auto it = pt.paths.find(p);
            if (it == pt.paths.end()) continue;
            o += first ? "\n      \"" : ",\n      \"";
            first = false;
            o += json_escape(p) + "\": {";
            if (!it->second.skipped.empty()) {
                o += "\"skipped\": true, \"note\": \"" + json_escape(it->second.skipped) + "\"}";
                continue;
            }
            const bool ok = it->second.verified && it->second.error.empty() && it->second.measured;
            all_ok = all_ok && ok;
            o += "\"verified\": " + std::string(ok ? "true" : "false");
            if (!it->second.error.empty()) o += ", \"error\": \"" + json_escape(it->second.error) + "\"";
            if (const auto st = stats_of(pt, p)) {
                o += ", \"time_us\": {\"median\": " + jnum(st->time_us.median) + ", \"min\": " + jnum(st->time_us.min) +
                     ", \"max\": " + jnum(st->time_us.max) + ", \"spread_pct\": " + jnum(st->time_us.spread_pct) +
                     ", \"samples\": " + std::to_string(st->time_us.samples) + "}";
                o += ", \"algbw_gbps\": " + jnum(st->algbw_gbps);
                if (metric_of(pt.op) == metric::rate) o += ", \"rate_per_s\": " + jnum(st->rate_per_s);
                o += ", \"samples_us\": [";
                for (std::size_t i = 0; i < it->second.seconds_per_message.size(); ++i)
                    o += (i ? ", " : "") + jnum(it->second.seconds_per_message[i] * 1e6);
                o += "]";
                o += ", \"ratio_to_raw\": " + (st->ratio ? jnum(*st->ratio) : std::string("null"));
                if (st->ratio)
                    o += ", \"ratio_ci95\": " +
                         (st->ratio_ci ? "[" + jnum(st->ratio_ci->lo) + ", " + jnum(st->ratio_ci->hi) + "]"
                                       : std::string("null"));
            }
            if (const auto a = aggregate_of(pt, p)) {
                o += ", \"pairs_time_us\": [";
                for (std::size_t i = 0; i < it->second.pair_seconds.size(); ++i)
                    o += (i ? ", " : "") + jnum(it->second.pair_seconds[i] * 1e6);
                o += "], \"aggregate\": {\"pairs\": " + std::to_string(a->pairs) +
                     ", \"algbw_gbps\": " + jnum(a->algbw_gbps) + ", \"rate_per_s\": " + jnum(a->rate_per_s) +
                     ", \"slowest_time_us\": " + jnum(a->slowest_time_us) + "}";
            }
            o += "}";
        }
        o += "\n    }}";
    }
    o += "\n  ],\n  \"all_verified\": " + std::string(all_ok ? "true" : "false") + "\n}\n";
    return o;
}

auto render_csv(const run_info& info, std::span<const point> points) -> std::string {
    std::string o =
        "provider,op,size,iterations,path,time_us_median,time_us_min,time_us_max,spread_pct,algbw_gbps,ratio_"
        "to_raw,ratio_ci95_lo,ratio_ci95_hi,verified\n";
    for (const auto& pt : points) {
        for (const auto& p : info.paths) {
            const auto it = pt.paths.find(p);
            if (it == pt.paths.end()) continue;
            const auto st = stats_of(pt, p);
            const bool ok = it->second.verified && it->second.error.empty() && it->second.measured;
            const bool skipped = !it->second.skipped.empty();
            o += "\"" + info.provider + "\"," + std::string(name_of(pt.op)) + "," + std::to_string(pt.size) + "," +
                 std::to_string(pt.iterations) + "," + p + ",";
            if (st) {
                o += jnum(st->time_us.median) + "," + jnum(st->time_us.min) + "," + jnum(st->time_us.max) + "," +
                     jnum(st->time_us.spread_pct) + "," + jnum(st->algbw_gbps) + "," +
                     (st->ratio ? jnum(*st->ratio) : std::string()) + ",";
                o += st->ratio_ci ? jnum(st->ratio_ci->lo) + "," + jnum(st->ratio_ci->hi) + "," : std::string(",,");
            } else {
                o += ",,,,,,,,";
            }
            o += skipped ? "skipped\n" : ok ? "true\n" : "false\n";
        }
    }
    return o;
}

// ---------------------------------------------------------------- SVG
namespace {

struct panel {
    std::string title, y_label;
    double x0, y0, w, h;  // plot area in SVG units
};

auto path_color(std::size_t i) -> const char* {
    static constexpr const char* colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};
    return colors[i % (sizeof colors / sizeof colors[0])];
}

auto decade_floor(double v) -> double { return std::pow(10.0, std::floor(std::log10(v))); }
auto decade_ceil(double v) -> double { return std::pow(10.0, std::ceil(std::log10(v))); }

auto panel_title(std::optional<operation> op, int window) -> std::string {
    const std::string w = ", window " + std::to_string(window) + ")";
    if (!op) return "";
    switch (*op) {
        case operation::pingpong_untagged: return "latency (untagged ping-pong, one-way)";
        case operation::rma_write: return "bandwidth (RMA write" + w;
        case operation::rma_read: return "bandwidth (RMA read" + w;
        case operation::stream: return "bandwidth (streaming" + w;
        default: return "latency (tagged ping-pong, one-way)";
    }
}

void draw_panel(std::string& o, const panel& pn, const run_info& info, std::span<const point> points, bool latency) {
    // Collect (size, value) per path.
    std::vector<std::vector<std::pair<double, double>>> series(info.paths.size());
    double xmin = 1e300, xmax = 0, ymin = 1e300, ymax = 0;
    const auto shown = plotted_op(points, latency);
    for (const auto& pt : points) {
        if (!shown || pt.op != *shown) continue;
        for (std::size_t i = 0; i < info.paths.size(); ++i) {
            const auto st = stats_of(pt, info.paths[i]);
            if (!st) continue;
            const double y = latency ? st->time_us.median : st->algbw_gbps;
            if (!(y > 0)) continue;
            const double x = static_cast<double>(pt.size);
            series[i].emplace_back(x, y);
            xmin = std::min(xmin, x);
            xmax = std::max(xmax, x);
            ymin = std::min(ymin, y);
            ymax = std::max(ymax, y);
        }
    }
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "  <g class=\"panel\" id=\"%s\">\n"
                  "    <text x=\"%.1f\" y=\"%.1f\" font-size=\"15\" text-anchor=\"middle\">%s</text>\n"
                  "    <rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#444\"/>\n",
                  latency ? "latency" : "bandwidth", pn.x0 + pn.w / 2, pn.y0 - 12, xml_escape(pn.title).c_str(), pn.x0,
                  pn.y0, pn.w, pn.h);
    o += buf;
    if (xmax <= 0) {
        std::snprintf(buf, sizeof buf,
                      "    <text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">no data</text>\n  </g>\n",
                      pn.x0 + pn.w / 2, pn.y0 + pn.h / 2);
        o += buf;
        return;
    }
    // Log axes: x in powers of two (labelled at every other power), y in decades.
    double lx0 = std::log2(xmin), lx1 = std::log2(xmax);
    if (lx1 - lx0 < 1) {
        lx0 -= 0.5;
        lx1 += 0.5;
    }
    const double ly0 = std::log10(decade_floor(ymin)), ly1 = std::max(ly0 + 1, std::log10(decade_ceil(ymax)));
    auto X = [&](double x) { return pn.x0 + (std::log2(x) - lx0) / (lx1 - lx0) * pn.w; };
    auto Y = [&](double y) { return pn.y0 + pn.h - (std::log10(y) - ly0) / (ly1 - ly0) * pn.h; };
    const int step = (lx1 - lx0) > 12 ? 3 : ((lx1 - lx0) > 6 ? 2 : 1);
    for (int e = static_cast<int>(std::ceil(lx0)); e <= static_cast<int>(std::floor(lx1)); ++e) {
        if (e % step != 0) continue;
        const double x = X(std::ldexp(1.0, e));
        std::snprintf(buf, sizeof buf,
                      "    <line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n"
                      "    <text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"middle\">%s</text>\n",
                      x, pn.y0, x, pn.y0 + pn.h, x, pn.y0 + pn.h + 14,
                      format_size(static_cast<std::size_t>(std::ldexp(1.0, e))).c_str());
        o += buf;
    }
    for (int d = static_cast<int>(ly0); d <= static_cast<int>(ly1); ++d) {
        const double y = Y(std::pow(10.0, d));
        std::snprintf(buf, sizeof buf,
                      "    <line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n"
                      "    <text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%g</text>\n",
                      pn.x0, y, pn.x0 + pn.w, y, pn.x0 - 4, y + 3, std::pow(10.0, d));
        o += buf;
    }
    std::snprintf(buf, sizeof buf,
                  "    <text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\">message size "
                  "(bytes)</text>\n"
                  "    <text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" "
                  "transform=\"rotate(-90 %.1f %.1f)\">%s</text>\n",
                  pn.x0 + pn.w / 2, pn.y0 + pn.h + 32, pn.x0 - 46, pn.y0 + pn.h / 2, pn.x0 - 46, pn.y0 + pn.h / 2,
                  xml_escape(pn.y_label).c_str());
    o += buf;
    for (std::size_t i = 0; i < info.paths.size(); ++i) {
        if (series[i].empty()) continue;
        std::snprintf(buf, sizeof buf,
                      "    <polyline class=\"series\" data-path=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
                      "points=\"",
                      xml_escape(info.paths[i]).c_str(), path_color(i));
        o += buf;
        for (std::size_t k = 0; k < series[i].size(); ++k) {
            std::snprintf(buf, sizeof buf, "%s%.1f,%.1f", k ? " " : "", X(series[i][k].first), Y(series[i][k].second));
            o += buf;
        }
        o += "\"/>\n";
        for (const auto& [x, y] : series[i]) {
            std::snprintf(buf, sizeof buf, "    <circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n", X(x), Y(y),
                          path_color(i));
            o += buf;
        }
    }
    // Legend.
    for (std::size_t i = 0; i < info.paths.size(); ++i) {
        const double ly = pn.y0 + 14 + 16 * static_cast<double>(i);
        const double lx = latency ? pn.x0 + 10 : pn.x0 + pn.w - 80;
        std::snprintf(buf, sizeof buf,
                      "    <line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"3\"/>\n"
                      "    <text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%s</text>\n",
                      lx, ly, lx + 20, ly, path_color(i), lx + 25, ly + 4, xml_escape(info.paths[i]).c_str());
        o += buf;
    }
    o += "  </g>\n";
}

}  // namespace

auto plotted_op(std::span<const point> points, bool latency) -> std::optional<operation> {
    const auto present = [&](operation op) {
        return std::any_of(points.begin(), points.end(), [op](const point& p) { return p.op == op; });
    };
    static constexpr operation lat[] = {operation::pingpong, operation::pingpong_untagged};
    static constexpr operation bw[] = {operation::stream, operation::rma_write, operation::rma_read};
    for (operation op : latency ? std::span<const operation>{lat} : std::span<const operation>{bw})
        if (present(op)) return op;
    return std::nullopt;
}

auto render_svg(const run_info& info, std::span<const point> points) -> std::string {
    std::string o =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1000\" height=\"440\" viewBox=\"0 0 1000 440\" "
        "font-family=\"sans-serif\">\n"
        "  <rect width=\"1000\" height=\"440\" fill=\"white\"/>\n";
    o += "  <title>loom-bench, provider " + xml_escape(info.provider) + "</title>\n";
    o += "  <text x=\"500\" y=\"20\" font-size=\"16\" text-anchor=\"middle\">loom-bench: provider " +
         xml_escape(info.provider) + ", " + std::to_string(info.ranks) + " ranks (" + xml_escape(info.launcher) +
         "), median of " + repetitions_note(info) + "</text>\n";
    const auto lat = plotted_op(points, true), bw = plotted_op(points, false);
    draw_panel(
        o,
        {lat ? panel_title(lat, info.window) : "latency (tagged ping-pong, one-way)", "latency (us)", 80, 60, 380, 300},
        info, points, true);
    draw_panel(o,
               {bw ? panel_title(bw, info.window) : panel_title(operation::stream, info.window), "bandwidth (GB/s)",
                580, 60, 380, 300},
               info, points, false);
    o += "</svg>\n";
    return o;
}

}  // namespace loom::bench
