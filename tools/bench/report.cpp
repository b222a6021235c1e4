// tools/bench/report.cpp — the results as a table, JSON and CSV.
#include "report.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

#include "report_format.hpp"

namespace loom::bench {

using namespace format;

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

namespace {

constexpr std::size_t ratio_width = 23;  // "  1.000" and "  0.990-1.010"

/// The operation's title line and what its columns mean.
auto table_heading(const run_info& info, operation op, bool have_raw) -> std::string {
    const metric m = metric_of(op);
    std::string window_note;
    if (is_windowed(op)) {
        window_note = ", window " + std::to_string(info.window);
        if (m == metric::bandwidth) window_note += " (fewer when a window exceeds 64M)";
    }
    const std::string pairs_note =
        info.pairs > 1 ? ", " + std::to_string(info.pairs) + " pairs at once (figures of pair 0; all pairs below)"
                       : std::string{};
    char line[512];
    std::snprintf(line, sizeof line, "#\n# loom-bench %s: provider %s%s%s%s%s, %d ranks (%s)%s, %s%s\n",
                  std::string(name_of(op)).c_str(), info.provider.c_str(), info.domain.empty() ? "" : " domain ",
                  info.domain.c_str(), info.threading.empty() ? "" : ", threading ", info.threading.c_str(), info.ranks,
                  info.launcher.c_str(), pairs_note.c_str(), repetitions_note(info).c_str(), window_note.c_str());
    std::string out = line;
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
        out += info.table_added_ns
                   ? "# +ns: nanoseconds each message adds over raw (median of the paired differences); ci95: its "
                     "95 % interval, lo..hi (order statistics; - below 6 samples)\n"
                   : "# ci95: the ratio's 95 % interval (order statistics of the paired ratios; - below 6 "
                     "samples)\n";
    return out;
}

/// The two header lines: path names, then each path's columns.
auto column_headers(const run_info& info, operation op, bool have_raw) -> std::string {
    const metric m = metric_of(op);
    const char* middle = m == metric::rate ? (op == operation::atomic_fadd ? " Mops/s" : " Mmsg/s") : "  algbw";
    std::string h1 = "#                     ", h2 = "#     size      count";
    char line[256];
    for (const auto& p : info.paths) {
        const bool ratio = have_raw && p != "raw";
        const int width = ratio ? 50 : 27;
        std::snprintf(line, sizeof line, " %*s", width, (p + "  ").c_str());
        h1 += line;
        const char* against = info.table_added_ns ? "     +ns           ci95" : "   ratio           ci95";
        h2 += std::string("    time(us) ") + middle + "  +-%" + (ratio ? against : "");
    }
    return h1 + "   check\n" + h2 + "   \n";
}

/// What one row says: the cells, the paths whose check failed, why paths were skipped.
struct row_state {
    std::string cells;
    std::string bad;  ///< paths whose bytes or lengths were wrong, comma-separated
    std::vector<std::pair<std::string, std::string>>& notes;  ///< (path, why skipped), once each
    bool added_ns{false};                                     ///< against raw: nanoseconds added, not the ratio
};

/// A figure against raw and its interval in ratio_width characters: the figure in six, then
/// "lo-hi" for a ratio or "lo..hi" for nanoseconds added (which may be negative); "-" where
/// there is none.
auto against_raw_cells(const std::optional<double>& v, const std::optional<interval>& ci, bool ns) -> std::string {
    // ns: one decimal below 1000, to keep six characters.
    const auto text = [ns](double x) { return !ns ? fmt("%.3f", x) : fmt(std::abs(x) < 999.95 ? "%.1f" : "%.0f", x); };
    char line[64];
    std::snprintf(line, sizeof line, "  %6s", v ? text(*v).c_str() : "-");
    std::string out = line;
    if (ci)
        std::snprintf(line, sizeof line, ns ? " %6s..%-6s" : "  %6s-%-6s", text(ci->lo).c_str(), text(ci->hi).c_str());
    else
        std::snprintf(line, sizeof line, "  %13s", "-");
    return out + line;
}

/// One path's cells of a point: time, bandwidth or rate, spread, and against raw the ratio
/// and its interval.
void path_cells(const point& pt, const std::string& p, metric m, bool ratio, row_state& row) {
    char line[128];
    const auto it = pt.paths.find(p);
    if (it != pt.paths.end() && !it->second.skipped.empty()) {
        const std::pair<std::string, std::string> note{p, it->second.skipped};
        if (std::find(row.notes.begin(), row.notes.end(), note) == row.notes.end()) row.notes.push_back(note);
        std::snprintf(line, sizeof line, " %12s %7s %4s", "skipped", "", "");
        row.cells += line;
        if (ratio) row.cells += std::string(ratio_width, ' ');
        return;
    }
    if (it != pt.paths.end() && (!it->second.verified || !it->second.error.empty()))
        row.bad += (row.bad.empty() ? "" : ",") + p;
    const auto st = stats_of(pt, p);
    if (!st) {
        std::snprintf(line, sizeof line, " %12s %7s %4s", "n/a", "", "");
        row.cells += line;
        if (ratio) row.cells += std::string(ratio_width, ' ');
        return;
    }
    const double mid = m == metric::rate ? st->rate_per_s / 1e6 : st->algbw_gbps;
    std::snprintf(line, sizeof line, " %12.2f %7.3f %4.0f", st->time_us.median, mid,
                  std::min(999.0, st->time_us.spread_pct));
    row.cells += line;
    if (!ratio) return;
    row.cells += row.added_ns ? against_raw_cells(st->added_ns, st->added_ns_ci, true)
                              : against_raw_cells(st->ratio, st->ratio_ci, false);
}

}  // namespace

auto render_table(const run_info& info, std::span<const point> points) -> std::string {
    std::string out;
    const bool have_raw = std::find(info.paths.begin(), info.paths.end(), "raw") != info.paths.end();
    std::vector<operation> ops;
    for (const auto& pt : points)
        if (std::find(ops.begin(), ops.end(), pt.op) == ops.end()) ops.push_back(pt.op);
    for (operation op : ops) {
        out += table_heading(info, op, have_raw) + column_headers(info, op, have_raw);
        std::vector<std::pair<std::string, std::string>> notes;
        for (const auto& pt : points) {
            if (pt.op != op) continue;
            char line[64];
            std::snprintf(line, sizeof line, "%10s %10d", format_size(pt.size).c_str(), pt.iterations);
            row_state row{line, {}, notes, info.table_added_ns};
            for (const auto& p : info.paths) path_cells(pt, p, metric_of(op), have_raw && p != "raw", row);
            out += row.cells + (row.bad.empty() ? "   ok" : "   WRONG(" + row.bad + ")") + "\n";
        }
        for (const auto& [p, why] : notes) out += "# " + p + ": skipped, " + why + "\n";
        out += aggregate_rows(info, points, op);
    }
    return out;
}

// ---------------------------------------------------------------- JSON / CSV
namespace {
auto json_interval(const std::optional<interval>& ci) -> std::string {
    return ci ? "[" + jnum(ci->lo) + ", " + jnum(ci->hi) + "]" : std::string("null");
}
auto csv_interval(const std::optional<interval>& ci) -> std::string {
    return ci ? jnum(ci->lo) + "," + jnum(ci->hi) + "," : std::string(",,");
}
}  // namespace

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
                if (st->ratio) o += ", \"ratio_ci95\": " + json_interval(st->ratio_ci);
                if (st->added_ns)
                    o += ", \"added_ns\": " + jnum(*st->added_ns) +
                         ", \"added_ns_ci95\": " + json_interval(st->added_ns_ci);
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
        "to_raw,ratio_ci95_lo,ratio_ci95_hi,added_ns,added_ns_ci95_lo,added_ns_ci95_hi,verified\n";
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
                o += csv_interval(st->ratio_ci);
                o += (st->added_ns ? jnum(*st->added_ns) : std::string()) + "," + csv_interval(st->added_ns_ci);
            } else {
                o += ",,,,,,,,,,,";
            }
            o += skipped ? "skipped\n" : ok ? "true\n" : "false\n";
        }
    }
    return o;
}

}  // namespace loom::bench
