// tools/bench/plot.cpp — the results as an SVG plot, one panel per operation kind.
#include "report.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>
#include <vector>

#include "report_format.hpp"

namespace loom::bench {

using namespace format;

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

/// Each path's (size, value) points of the panel's operation, and their extent.
struct panel_data {
    std::vector<std::vector<std::pair<double, double>>> series;  ///< per path
    double xmin{1e300}, xmax{0}, ymin{1e300}, ymax{0};
};

auto collect_series(const run_info& info, std::span<const point> points, bool latency) -> panel_data {
    panel_data d;
    d.series.resize(info.paths.size());
    const auto shown = plotted_op(points, latency);
    for (const auto& pt : points) {
        if (!shown || pt.op != *shown) continue;
        for (std::size_t i = 0; i < info.paths.size(); ++i) {
            const auto st = stats_of(pt, info.paths[i]);
            if (!st) continue;
            const double y = latency ? st->time_us.median : st->algbw_gbps;
            if (!(y > 0)) continue;
            const double x = static_cast<double>(pt.size);
            d.series[i].emplace_back(x, y);
            d.xmin = std::min(d.xmin, x);
            d.xmax = std::max(d.xmax, x);
            d.ymin = std::min(d.ymin, y);
            d.ymax = std::max(d.ymax, y);
        }
    }
    return d;
}

/// Log axes: x in powers of two, y in decades; x() and y() map values into the plot area.
struct log_axes {
    const panel& pn;
    double lx0, lx1, ly0, ly1;

    log_axes(const panel& p, const panel_data& d) : pn(p), lx0(std::log2(d.xmin)), lx1(std::log2(d.xmax)) {
        if (lx1 - lx0 < 1) {
            lx0 -= 0.5;
            lx1 += 0.5;
        }
        ly0 = std::log10(decade_floor(d.ymin));
        ly1 = std::max(ly0 + 1, std::log10(decade_ceil(d.ymax)));
    }
    [[nodiscard]] auto x(double v) const -> double { return pn.x0 + (std::log2(v) - lx0) / (lx1 - lx0) * pn.w; }
    [[nodiscard]] auto y(double v) const -> double { return pn.y0 + pn.h - (std::log10(v) - ly0) / (ly1 - ly0) * pn.h; }
};

/// Grid lines with their labels (x at every power of two, or every second or third), and the
/// axis titles.
void draw_grid(std::string& o, const panel& pn, const log_axes& ax) {
    char buf[512];
    const int step = (ax.lx1 - ax.lx0) > 12 ? 3 : ((ax.lx1 - ax.lx0) > 6 ? 2 : 1);
    for (int e = static_cast<int>(std::ceil(ax.lx0)); e <= static_cast<int>(std::floor(ax.lx1)); ++e) {
        if (e % step != 0) continue;
        const double x = ax.x(std::ldexp(1.0, e));
        std::snprintf(buf, sizeof buf,
                      "    <line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n"
                      "    <text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"middle\">%s</text>\n",
                      x, pn.y0, x, pn.y0 + pn.h, x, pn.y0 + pn.h + 14,
                      format_size(static_cast<std::size_t>(std::ldexp(1.0, e))).c_str());
        o += buf;
    }
    for (int d = static_cast<int>(ax.ly0); d <= static_cast<int>(ax.ly1); ++d) {
        const double y = ax.y(std::pow(10.0, d));
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
}

/// One polyline with its points per path, then the legend.
void draw_series(std::string& o, const panel& pn, const run_info& info, const panel_data& d, const log_axes& ax,
                 bool latency) {
    char buf[512];
    for (std::size_t i = 0; i < info.paths.size(); ++i) {
        if (d.series[i].empty()) continue;
        std::snprintf(buf, sizeof buf,
                      "    <polyline class=\"series\" data-path=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
                      "points=\"",
                      xml_escape(info.paths[i]).c_str(), path_color(i));
        o += buf;
        for (std::size_t k = 0; k < d.series[i].size(); ++k) {
            std::snprintf(buf, sizeof buf, "%s%.1f,%.1f", k ? " " : "", ax.x(d.series[i][k].first),
                          ax.y(d.series[i][k].second));
            o += buf;
        }
        o += "\"/>\n";
        for (const auto& [x, y] : d.series[i]) {
            std::snprintf(buf, sizeof buf, "    <circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n", ax.x(x),
                          ax.y(y), path_color(i));
            o += buf;
        }
    }
    for (std::size_t i = 0; i < info.paths.size(); ++i) {
        const double ly = pn.y0 + 14 + 16 * static_cast<double>(i);
        const double lx = latency ? pn.x0 + 10 : pn.x0 + pn.w - 80;
        std::snprintf(buf, sizeof buf,
                      "    <line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"3\"/>\n"
                      "    <text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%s</text>\n",
                      lx, ly, lx + 20, ly, path_color(i), lx + 25, ly + 4, xml_escape(info.paths[i]).c_str());
        o += buf;
    }
}

void draw_panel(std::string& o, const panel& pn, const run_info& info, std::span<const point> points, bool latency) {
    const panel_data d = collect_series(info, points, latency);
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "  <g class=\"panel\" id=\"%s\">\n"
                  "    <text x=\"%.1f\" y=\"%.1f\" font-size=\"15\" text-anchor=\"middle\">%s</text>\n"
                  "    <rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#444\"/>\n",
                  latency ? "latency" : "bandwidth", pn.x0 + pn.w / 2, pn.y0 - 12, xml_escape(pn.title).c_str(), pn.x0,
                  pn.y0, pn.w, pn.h);
    o += buf;
    if (d.xmax <= 0) {
        std::snprintf(buf, sizeof buf,
                      "    <text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">no data</text>\n  </g>\n",
                      pn.x0 + pn.w / 2, pn.y0 + pn.h / 2);
        o += buf;
        return;
    }
    const log_axes ax(pn, d);
    draw_grid(o, pn, ax);
    draw_series(o, pn, info, d, ax, latency);
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
