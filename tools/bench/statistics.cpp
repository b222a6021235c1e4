// tools/bench/statistics.cpp — medians, spreads, paired ratios and their intervals, and the
// numbers derived per path and point.
#include "report.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>

namespace loom::bench {

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
/// f(path[i], base[i]) over the pairs whose base is positive and whose path value is finite;
/// nullopt when the lengths differ.
template <class F>
auto over_pairs(std::span<const double> path, std::span<const double> base, F f) -> std::optional<std::vector<double>> {
    if (path.size() != base.size()) return std::nullopt;
    std::vector<double> r;
    for (std::size_t i = 0; i < path.size(); ++i)
        if (base[i] > 0 && std::isfinite(path[i])) r.push_back(f(path[i], base[i]));
    return r;
}
auto pair_ratios(std::span<const double> path, std::span<const double> base) -> std::optional<std::vector<double>> {
    return over_pairs(path, base, std::divides<>{});
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
            // What the path adds per message, in ns: path time - raw time.
            const auto added = over_pairs(p, r, [](double path_s, double raw_s) { return (path_s - raw_s) * 1e9; });
            if (added && !added->empty()) {
                st.added_ns = median(*added);
                st.added_ns_ci = median_interval(*added);
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

}  // namespace loom::bench
