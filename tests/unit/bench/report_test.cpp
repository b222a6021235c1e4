// loom-bench's pure part: statistics and the table/JSON/CSV/SVG output (the schedule: schedule_test.cpp).
#include "report.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace loom::bench;

// ---------------------------------------------------------------- a strict little XML reader
// Enough XML to reject what a broken writer produces: unbalanced or crossed tags, unquoted or
// duplicate attributes, stray '<' or '&', unknown entities, text outside the root element.
struct element {
    std::string name;
    std::map<std::string, std::string> attrs;
    std::vector<element> children;
};

class xml_reader {
public:
    explicit xml_reader(std::string_view s) : s_(s) {}
    auto parse() -> std::optional<element> {
        skip_ws();
        if (s_.substr(i_, 5) == "<?xml") {
            const auto end = s_.find("?>", i_);
            if (end == std::string_view::npos) return std::nullopt;
            i_ = end + 2;
        }
        skip_ws();
        element root;
        if (!parse_element(root)) return std::nullopt;
        skip_ws();
        if (i_ != s_.size()) return std::nullopt;  // one root, nothing after it
        return root;
    }

private:
    void skip_ws() {
        while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_])) != 0) ++i_;
    }
    auto parse_name(std::string& out) -> bool {
        const std::size_t start = i_;
        while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) != 0 || s_[i_] == '-' ||
                                  s_[i_] == '_' || s_[i_] == ':' || s_[i_] == '.'))
            ++i_;
        out = std::string(s_.substr(start, i_ - start));
        return !out.empty() && std::isalpha(static_cast<unsigned char>(out[0])) != 0;
    }
    auto check_text(std::string_view t) -> bool {
        for (std::size_t k = 0; k < t.size(); ++k) {
            if (t[k] == '<') return false;
            if (t[k] == '&') {
                const auto semi = t.find(';', k);
                if (semi == std::string_view::npos) return false;
                const auto ent = t.substr(k + 1, semi - k - 1);
                static const std::set<std::string_view> known{"lt", "gt", "amp", "quot", "apos"};
                if (!known.contains(ent) && !(ent.size() > 1 && ent[0] == '#')) return false;
                k = semi;
            }
        }
        return true;
    }
    auto parse_element(element& e) -> bool {
        if (i_ >= s_.size() || s_[i_] != '<') return false;
        ++i_;
        if (!parse_name(e.name)) return false;
        for (;;) {
            skip_ws();
            if (i_ >= s_.size()) return false;
            if (s_.substr(i_, 2) == "/>") {
                i_ += 2;
                return true;
            }
            if (s_[i_] == '>') {
                ++i_;
                break;
            }
            std::string an;
            if (!parse_name(an) || i_ >= s_.size() || s_[i_] != '=') return false;
            ++i_;
            if (i_ >= s_.size() || (s_[i_] != '"' && s_[i_] != '\'')) return false;
            const char q = s_[i_++];
            const auto end = s_.find(q, i_);
            if (end == std::string_view::npos) return false;
            const auto value = s_.substr(i_, end - i_);
            if (!check_text(value) || e.attrs.contains(an)) return false;
            e.attrs[an] = std::string(value);
            i_ = end + 1;
        }
        for (;;) {
            const auto lt = s_.find('<', i_);
            if (lt == std::string_view::npos || !check_text(s_.substr(i_, lt - i_))) return false;
            i_ = lt;
            if (s_.substr(i_, 2) == "</") {
                i_ += 2;
                std::string closing;
                if (!parse_name(closing) || closing != e.name) return false;
                skip_ws();
                if (i_ >= s_.size() || s_[i_] != '>') return false;
                ++i_;
                return true;
            }
            element child;
            if (!parse_element(child)) return false;
            e.children.push_back(std::move(child));
        }
    }
    std::string_view s_;
    std::size_t i_{0};
};

void collect(const element& e, const std::string& name, std::vector<const element*>& out) {
    if (e.name == name) out.push_back(&e);
    for (const auto& c : e.children) collect(c, name, out);
}

// ---------------------------------------------------------------- fixtures
auto make_point(operation op, std::size_t size, std::map<std::string, std::vector<double>> secs) -> point {
    point pt;
    pt.op = op;
    pt.size = size;
    pt.iterations = 10;
    for (auto& [name, v] : secs) {
        auto& s = pt.paths[name];
        s.seconds_per_message = v;
        s.measured = true;
    }
    return pt;
}

auto three_paths() -> run_info {
    run_info info;
    info.provider = "tcp;ofi_rxm";
    info.paths = {"raw", "loom", "nccl"};
    info.repetitions = 3;
    return info;
}

auto sample_points() -> std::vector<point> {
    return {
        make_point(operation::pingpong, 8,
                   {{"raw", {1e-6, 1.1e-6, 0.9e-6}}, {"loom", {1e-6, 1.2e-6, 1e-6}}, {"nccl", {2e-6, 2e-6, 2e-6}}}),
        make_point(operation::pingpong, 4096,
                   {{"raw", {4e-6, 4e-6, 4e-6}}, {"loom", {4e-6, 4e-6, 4e-6}}, {"nccl", {5e-6, 5e-6, 5e-6}}}),
        make_point(operation::stream, 8,
                   {{"raw", {1e-7, 1e-7, 1e-7}}, {"loom", {1e-7, 1e-7, 1e-7}}, {"nccl", {2e-7, 2e-7, 2e-7}}}),
        make_point(operation::stream, 1 << 20,
                   {{"raw", {1e-4, 1e-4, 1e-4}}, {"loom", {1e-4, 1e-4, 1e-4}}, {"nccl", {1.25e-4, 1.25e-4, 1.25e-4}}})};
}

// ---------------------------------------------------------------- statistics
TEST(BenchStats, MedianOfOddAndEvenCounts) {
    const std::vector<double> odd{5, 1, 3}, even{4, 1, 3, 2}, one{7};
    EXPECT_DOUBLE_EQ(median(odd), 3);
    EXPECT_DOUBLE_EQ(median(even), 2.5);
    EXPECT_DOUBLE_EQ(median(one), 7);
    EXPECT_DOUBLE_EQ(median(std::vector<double>{}), 0);
}

TEST(BenchStats, SummaryHasMinMaxAndRobustSpread) {
    const std::vector<double> v{10, 11, 9, 10, 1000};  // one outlier does not move median or MAD
    const auto s = summarize(v);
    EXPECT_DOUBLE_EQ(s.median, 10);
    EXPECT_DOUBLE_EQ(s.min, 9);
    EXPECT_DOUBLE_EQ(s.max, 1000);
    EXPECT_EQ(s.samples, 5U);
    EXPECT_DOUBLE_EQ(s.spread_pct, 10.0);  // MAD = median{0,1,1,0,990} = 1 → 10 %
    EXPECT_DOUBLE_EQ(summarize(std::vector<double>{3, 3, 3}).spread_pct, 0);
}

TEST(BenchStats, PairedRatioIsTheMedianOfPerRepetitionRatios) {
    // Noise hits both paths of a repetition alike: the paired ratio ignores it.
    const std::vector<double> raw{1, 10, 1}, path{1.1, 11, 1.1};
    EXPECT_NEAR(*paired_ratio(path, raw), 1.1, 1e-12);
    EXPECT_FALSE(paired_ratio(path, std::vector<double>{1, 2}).has_value());
    EXPECT_FALSE(paired_ratio(std::vector<double>{1}, std::vector<double>{0}).has_value());
}

TEST(BenchStats, MedianIntervalIsTheOrderStatisticsThatReachTheLevel) {
    // n = 9: [x(2), x(8)] covers 1 - 2 * 10/512 = 96.1 %; [x(3), x(7)] only 82 %.
    const std::vector<double> nine{9, 1, 8, 2, 7, 3, 6, 4, 5};
    const auto a = median_interval(nine);
    ASSERT_TRUE(a.has_value());
    EXPECT_DOUBLE_EQ(a->lo, 2);
    EXPECT_DOUBLE_EQ(a->hi, 8);
    EXPECT_NEAR(a->level, 1 - 2 * 10.0 / 512, 1e-12);
    // n = 15: [x(4), x(12)] (1 - 2 * 576/32768 = 96.5 %).
    std::vector<double> fifteen;
    for (int i = 15; i >= 1; --i) fifteen.push_back(i);
    const auto b = median_interval(fifteen);
    ASSERT_TRUE(b.has_value());
    EXPECT_DOUBLE_EQ(b->lo, 4);
    EXPECT_DOUBLE_EQ(b->hi, 12);
    // n = 6 needs the whole range (96.9 %); n = 5 cannot reach 95 % (93.75 %), 90 % it can.
    const std::vector<double> six{3, 1, 2, 6, 5, 4};
    const auto c = median_interval(six);
    ASSERT_TRUE(c.has_value());
    EXPECT_DOUBLE_EQ(c->lo, 1);
    EXPECT_DOUBLE_EQ(c->hi, 6);
    const std::vector<double> five{1, 2, 3, 4, 5};
    EXPECT_FALSE(median_interval(five).has_value());
    EXPECT_TRUE(median_interval(five, 0.9).has_value());
    EXPECT_FALSE(median_interval(nine, 1.0).has_value());
    EXPECT_FALSE(median_interval(nine, 0).has_value());
    EXPECT_FALSE(median_interval(std::vector<double>{}).has_value());
    // Many samples: the interval narrows around the median and its coverage stays >= 95 %.
    std::vector<double> many;
    for (int i = 0; i < 2001; ++i) many.push_back(i);
    const auto d = median_interval(many);
    ASSERT_TRUE(d.has_value());
    EXPECT_LT(d->lo, 1000);
    EXPECT_GT(d->hi, 1000);
    EXPECT_LT(d->hi - d->lo, 100);  // about 2 * 1.96 * sqrt(2001) / 2 = 88 ranks wide
    EXPECT_GE(d->level, 0.95);
}

TEST(BenchStats, RatioIntervalPairsLikeTheRatio) {
    // Six repetitions in which the machine's speed varies tenfold: the ratios are 1.1 .. 1.6
    // whatever the repetition's speed, so the interval is theirs, not the times'.
    const std::vector<double> raw{1, 10, 1, 5, 2, 3}, path{1.1, 12, 1.3, 7, 3, 4.8};
    const auto ci = paired_ratio_interval(path, raw);
    ASSERT_TRUE(ci.has_value());
    EXPECT_NEAR(ci->lo, 1.1, 1e-12);
    EXPECT_NEAR(ci->hi, 1.6, 1e-12);
    const auto r = paired_ratio(path, raw);
    EXPECT_LE(ci->lo, *r);
    EXPECT_GE(ci->hi, *r);
    EXPECT_FALSE(paired_ratio_interval(path, std::vector<double>{1, 2}).has_value());
    // A pair without a positive base is left out: five pairs are not enough.
    const std::vector<double> raw0{1, 10, 1, 5, 2, 0};
    EXPECT_FALSE(paired_ratio_interval(path, raw0).has_value());
}

TEST(BenchStats, RatioToRawIsTimeForLatencyAndBandwidthForStreams) {
    const auto pts = sample_points();
    const auto lat = stats_of(pts[0], "nccl");
    ASSERT_TRUE(lat && lat->ratio);
    EXPECT_NEAR(*lat->ratio, 2.0, 1e-12);  // twice the time
    const auto bw = stats_of(pts[3], "nccl");
    ASSERT_TRUE(bw && bw->ratio);
    EXPECT_NEAR(*bw->ratio, 0.8, 1e-12);  // 80 % of raw's bandwidth
    EXPECT_NEAR(bw->algbw_gbps, (1 << 20) / 1.25e-4 / 1e9, 1e-9);
    EXPECT_FALSE(stats_of(pts[0], "raw")->ratio.has_value());
    EXPECT_FALSE(stats_of(pts[0], "nixl").has_value());
}

TEST(BenchStats, RateRatioIsRateOverRawRate) {
    const auto pt = make_point(operation::atomic_fadd, 8, {{"raw", {2e-6, 2e-6, 2e-6}}, {"loom", {4e-6, 4e-6, 4e-6}}});
    const auto st = stats_of(pt, "loom");
    ASSERT_TRUE(st && st->ratio);
    EXPECT_NEAR(*st->ratio, 0.5, 1e-12);  // half the fetch-adds per second
    EXPECT_NEAR(st->rate_per_s, 250e3, 1e-6);
    EXPECT_NEAR(stats_of(pt, "raw")->rate_per_s, 500e3, 1e-6);
}

// ---------------------------------------------------------------- renderings
TEST(BenchOutput, TableHasOneRowPerPointAndRatioColumns) {
    const auto pts = sample_points();
    const auto t = render_table(three_paths(), pts);
    EXPECT_NE(t.find("loom-bench pingpong"), std::string::npos);
    EXPECT_NE(t.find("loom-bench stream"), std::string::npos);
    EXPECT_NE(t.find("ratio"), std::string::npos);
    EXPECT_NE(t.find("2.000"), std::string::npos);  // nccl / raw at 8 B
    EXPECT_NE(t.find("0.800"), std::string::npos);  // nccl bw / raw bw at 1 MiB
    std::size_t rows = 0, pos = 0;
    while ((pos = t.find("   ok\n", pos)) != std::string::npos) ++rows, ++pos;
    EXPECT_EQ(rows, pts.size());
}

TEST(BenchOutput, RoundsAreNamedInTableJsonAndPlot) {
    const auto pts = sample_points();
    auto info = three_paths();
    EXPECT_NE(render_table(info, pts).find(", 3 repetitions interleaved"), std::string::npos);
    EXPECT_EQ(render_table(info, pts).find("rounds"), std::string::npos);  // one round: not mentioned
    EXPECT_NE(render_json(info, pts).find("\"rounds\": 1,"), std::string::npos);
    info.rounds = 4;
    EXPECT_NE(render_table(info, pts).find(", 4 rounds x 3 repetitions interleaved"), std::string::npos);
    EXPECT_NE(render_json(info, pts).find("\"rounds\": 4,"), std::string::npos);
    EXPECT_NE(render_svg(info, pts).find("median of 4 rounds x 3 repetitions interleaved"), std::string::npos);
}

TEST(BenchOutput, SeveralPairsAddWhatAllPairsDidTogether) {
    auto pts = sample_points();
    auto info = three_paths();
    info.pairs = 2;
    info.ranks = 4;
    // ping-pong 8 B: pair medians 1 us and 3 us; stream 1 MiB: 100 us and 200 us per message.
    pts[0].paths["raw"].pair_seconds = {1e-6, 3e-6};
    pts[3].paths["raw"].pair_seconds = {1e-4, 2e-4};
    pts[3].paths["loom"].pair_seconds = {1e-4, std::numeric_limits<double>::quiet_NaN()};  // one pair without
    const auto lat = aggregate_of(pts[0], "raw");
    ASSERT_TRUE(lat);
    EXPECT_EQ(lat->pairs, 2);
    EXPECT_DOUBLE_EQ(lat->slowest_time_us, 3.0);
    const auto bw = aggregate_of(pts[3], "raw");
    ASSERT_TRUE(bw);
    EXPECT_NEAR(bw->algbw_gbps, (1 << 20) / 1e-4 / 1e9 + (1 << 20) / 2e-4 / 1e9, 1e-9);
    EXPECT_NEAR(bw->rate_per_s, 1e4 + 5e3, 1e-6);
    EXPECT_EQ(aggregate_of(pts[3], "loom")->pairs, 1);
    EXPECT_FALSE(aggregate_of(pts[1], "raw"));  // no pair figures: nothing to add up
    const auto t = render_table(info, pts);
    EXPECT_NE(t.find("2 pairs at once (figures of pair 0; all pairs below)"), std::string::npos) << t;
    EXPECT_NE(t.find("# all 2 pairs together: the slowest pair's median one-way latency (us)"), std::string::npos) << t;
    EXPECT_NE(t.find("# all 2 pairs together: sum of the pairs' bandwidths (GB/s)"), std::string::npos) << t;
    EXPECT_NE(t.find("3.000"), std::string::npos) << t;   // slowest pair at 8 B
    EXPECT_NE(t.find("15.729"), std::string::npos) << t;  // 10.486 + 5.243 GB/s at 1 MiB
    const auto j = render_json(info, pts);
    EXPECT_NE(j.find("\"pairs_time_us\": [1, 3], \"aggregate\": {\"pairs\": 2,"), std::string::npos) << j;
    EXPECT_NE(j.find("\"slowest_time_us\": 3}"), std::string::npos) << j;
}

TEST(BenchOutput, TableFlagsWrongBytes) {
    auto pts = sample_points();
    pts[1].paths["loom"].verified = false;
    const auto t = render_table(three_paths(), pts);
    EXPECT_NE(t.find("WRONG(loom)"), std::string::npos);
    EXPECT_NE(render_json(three_paths(), pts).find("\"all_verified\": false"), std::string::npos);
}

TEST(BenchOutput, JsonAndCsvCarryEveryPathAndPoint) {
    const auto pts = sample_points();
    const auto j = render_json(three_paths(), pts);
    EXPECT_NE(j.find("\"provider\": \"tcp;ofi_rxm\""), std::string::npos);
    EXPECT_NE(j.find("\"all_verified\": true"), std::string::npos);
    for (const char* p : {"\"raw\": {", "\"loom\": {", "\"nccl\": {"}) {
        std::size_t n = 0, pos = 0;
        while ((pos = j.find(p, pos)) != std::string::npos) ++n, ++pos;
        EXPECT_EQ(n, pts.size()) << p;
    }
    const auto c = render_csv(three_paths(), pts);
    std::size_t lines = 0;
    for (char ch : c) lines += ch == '\n';
    EXPECT_EQ(lines, 1 + pts.size() * 3);
    EXPECT_EQ(c.rfind("provider,op,size,", 0), 0U);
}

TEST(BenchOutput, RatiosCarryTheirIntervalFromSixSamples) {
    // Six paired samples: loom/raw = 1.1 .. 1.6 (interval [1.1, 1.6]); three: no interval.
    auto info = three_paths();
    info.paths = {"raw", "loom"};
    info.rounds = 2;
    const std::vector<point> six{make_point(
        operation::pingpong, 8,
        {{"raw", {1e-6, 10e-6, 1e-6, 5e-6, 2e-6, 3e-6}}, {"loom", {1.1e-6, 12e-6, 1.3e-6, 7e-6, 3e-6, 4.8e-6}}})};
    const auto t = render_table(info, six);
    EXPECT_NE(t.find("ci95"), std::string::npos) << t;
    EXPECT_NE(t.find("  1.100-1.600 "), std::string::npos) << t;
    EXPECT_NE(render_json(info, six).find("\"ratio_ci95\": [1.1, 1.6]"), std::string::npos) << render_json(info, six);
    const auto c = render_csv(info, six);
    EXPECT_NE(c.find(",ratio_to_raw,ratio_ci95_lo,ratio_ci95_hi,added_ns,added_ns_ci95_lo,added_ns_ci95_hi,verified\n"),
              std::string::npos)
        << c;
    EXPECT_NE(c.find(",1.1,1.6,1400,100,2000,true\n"), std::string::npos) << c;
    // raw's own row has empty ratio columns (same column count as every row).
    EXPECT_NE(c.find(",raw,"), std::string::npos);
    for (std::size_t pos = 0, end; (end = c.find('\n', pos)) != std::string::npos; pos = end + 1)
        EXPECT_EQ(
            std::count(c.begin() + static_cast<std::ptrdiff_t>(pos), c.begin() + static_cast<std::ptrdiff_t>(end), ','),
            16)
            << c.substr(pos, end - pos);
    const auto three = sample_points();
    const auto j3 = render_json(three_paths(), three);
    EXPECT_NE(j3.find("\"ratio_ci95\": null"), std::string::npos) << j3;
    EXPECT_EQ(j3.find("\"ratio_ci95\": ["), std::string::npos) << j3;
}

TEST(BenchOutput, AddedNanosecondsAreTheMedianOfPairedDifferences) {
    // loom - raw per repetition: 100, 2000, 300, 2000, 1000, 1800 ns; median 1400, interval of
    // six samples [100, 2000]. A ratio would hide that the slow repetitions added the most.
    auto info = three_paths();
    info.paths = {"raw", "loom"};
    const std::vector<point> six{make_point(
        operation::pingpong, 8,
        {{"raw", {1e-6, 10e-6, 1e-6, 5e-6, 2e-6, 3e-6}}, {"loom", {1.1e-6, 12e-6, 1.3e-6, 7e-6, 3e-6, 4.8e-6}}})};
    const auto st = stats_of(six[0], "loom");
    ASSERT_TRUE(st && st->added_ns && st->added_ns_ci);
    EXPECT_NEAR(*st->added_ns, 1400, 1e-6);
    EXPECT_NEAR(st->added_ns_ci->lo, 100, 1e-6);
    EXPECT_NEAR(st->added_ns_ci->hi, 2000, 1e-6);
    EXPECT_FALSE(stats_of(six[0], "raw")->added_ns.has_value());
    // No pair with a raw time: no figure (not 0), though a bandwidth ratio exists.
    const auto no_raw = make_point(operation::stream, 8, {{"raw", {0, 0}}, {"loom", {1e-6, 1e-6}}});
    ASSERT_TRUE(stats_of(no_raw, "loom")->ratio.has_value());
    EXPECT_FALSE(stats_of(no_raw, "loom")->added_ns.has_value());
    const auto j = render_json(info, six);
    EXPECT_NE(j.find("\"added_ns\": 1400, \"added_ns_ci95\": [100, 2000]"), std::string::npos) << j;
    // The table shows the ratio unless asked for the nanoseconds.
    EXPECT_EQ(render_table(info, six).find("+ns"), std::string::npos);
    info.table_added_ns = true;
    const auto t = render_table(info, six);
    EXPECT_NE(t.find("     +ns           ci95"), std::string::npos) << t;
    EXPECT_NE(t.find("    1400  100.0..2000  "), std::string::npos) << t;
    EXPECT_EQ(t.find("1.100-1.600"), std::string::npos) << t;
}

TEST(BenchOutput, SvgParsesAsXmlWithOneSeriesPerPathInEachPanel) {
    const auto info = three_paths();
    const auto svg = render_svg(info, sample_points());
    const auto root = xml_reader(svg).parse();
    ASSERT_TRUE(root.has_value()) << svg;
    EXPECT_EQ(root->name, "svg");
    EXPECT_EQ(root->attrs.at("xmlns"), "http://www.w3.org/2000/svg");
    std::vector<const element*> groups;
    collect(*root, "g", groups);
    ASSERT_EQ(groups.size(), 2U);  // latency and bandwidth panels
    for (const element* g : groups) {
        std::vector<const element*> lines;
        collect(*g, "polyline", lines);
        std::vector<std::string> series;
        for (const element* l : lines)
            if (l->attrs.contains("class") && l->attrs.at("class") == "series")
                series.push_back(l->attrs.at("data-path"));
        EXPECT_EQ(series, info.paths) << g->attrs.at("id");
        for (const element* l : lines) {
            // Two points per series here (two sizes per operation).
            const auto& pts = l->attrs.at("points");
            EXPECT_EQ(std::count(pts.begin(), pts.end(), ','), 2) << pts;
        }
    }
    EXPECT_FALSE(xml_reader("<svg><g></svg></g>").parse().has_value());  // the reader is strict
    EXPECT_FALSE(xml_reader("<svg a=\"1\" a=\"2\"/>").parse().has_value());
    EXPECT_FALSE(xml_reader("<svg>a & b</svg>").parse().has_value());
}

TEST(BenchOutput, SvgEscapesNamesAndSurvivesMissingData) {
    run_info info = three_paths();
    info.provider = "tcp;ofi_rxm <&>";
    const auto svg = render_svg(info, {});
    ASSERT_TRUE(xml_reader(svg).parse().has_value()) << svg;
    EXPECT_NE(svg.find("no data"), std::string::npos);
}

}  // namespace

namespace {
/// RMA, atomics and message rate over raw, loom and nccl: nccl skipped where its ABI has no
/// such operation, measured for msgrate.
auto one_sided_points() -> std::vector<point> {
    std::vector<point> pts{
        make_point(operation::rma_write, 8, {{"raw", {1e-6, 1e-6, 1e-6}}, {"loom", {1e-6, 1e-6, 1e-6}}}),
        make_point(operation::rma_write, 1 << 20, {{"raw", {1e-4, 1e-4, 1e-4}}, {"loom", {2e-4, 2e-4, 2e-4}}}),
        make_point(operation::atomic_fadd, 8, {{"raw", {2e-6, 2e-6, 2e-6}}, {"loom", {2e-6, 2e-6, 2e-6}}}),
        make_point(operation::msgrate, 8,
                   {{"raw", {1e-6, 1e-6, 1e-6}}, {"loom", {1e-6, 1e-6, 1e-6}}, {"nccl", {2e-6, 2e-6, 2e-6}}})};
    for (std::size_t i = 0; i < 3; ++i)
        pts[i].paths["nccl"].skipped = i < 2 ? "the NCCL net ABI has no RMA" : "the NCCL net ABI has no atomics";
    return pts;
}
}  // namespace

TEST(BenchOutput, SkippedPathsAreNotedNotWrong) {
    const auto pts = one_sided_points();
    const auto t = render_table(three_paths(), pts);
    EXPECT_NE(t.find("loom-bench rma_write"), std::string::npos) << t;
    EXPECT_NE(t.find("loom-bench atomic_fadd"), std::string::npos) << t;
    EXPECT_NE(t.find("loom-bench msgrate"), std::string::npos) << t;
    EXPECT_EQ(t.find("WRONG"), std::string::npos) << t;
    EXPECT_NE(t.find("skipped"), std::string::npos) << t;
    EXPECT_NE(t.find("# nccl: skipped, the NCCL net ABI has no RMA\n"), std::string::npos) << t;
    EXPECT_NE(t.find("# nccl: skipped, the NCCL net ABI has no atomics\n"), std::string::npos) << t;
    EXPECT_NE(t.find("Mops/s"), std::string::npos) << t;  // rate column for fetch-adds
    EXPECT_NE(t.find("Mmsg/s"), std::string::npos) << t;  // and for messages
    EXPECT_NE(t.find("0.500"), std::string::npos) << t;   // loom's RMA write bandwidth / raw's at 1M
    std::size_t rows = 0, pos = 0;
    while ((pos = t.find("   ok\n", pos)) != std::string::npos) ++rows, ++pos;
    EXPECT_EQ(rows, pts.size());
    const auto j = render_json(three_paths(), pts);
    EXPECT_NE(j.find("\"all_verified\": true"), std::string::npos) << j;
    EXPECT_NE(j.find("\"nccl\": {\"skipped\": true, \"note\": \"the NCCL net ABI has no RMA\"}"), std::string::npos)
        << j;
    EXPECT_NE(j.find("\"rate_per_s\": 500000"), std::string::npos) << j;  // fetch-adds: 1 / 2 us
    const auto c = render_csv(three_paths(), pts);
    std::size_t skipped = 0;
    for (pos = 0; (pos = c.find(",skipped\n", pos)) != std::string::npos; ++pos) ++skipped;
    EXPECT_EQ(skipped, 3U) << c;
}

TEST(BenchOutput, PlotsOneOperationPerPanel) {
    const auto both = sample_points();
    EXPECT_EQ(plotted_op(both, true), operation::pingpong);
    EXPECT_EQ(plotted_op(both, false), operation::stream);
    const auto rma = one_sided_points();
    EXPECT_FALSE(plotted_op(rma, true).has_value());  // rates are not plotted
    EXPECT_EQ(plotted_op(rma, false), operation::rma_write);
    auto info = three_paths();
    const auto svg = render_svg(info, rma);
    ASSERT_TRUE(xml_reader(svg).parse().has_value()) << svg;
    EXPECT_NE(svg.find("bandwidth (RMA write, window"), std::string::npos) << svg;
    std::size_t series = 0;
    for (std::size_t pos = 0; (pos = svg.find("class=\"series\"", pos)) != std::string::npos; ++pos) ++series;
    EXPECT_EQ(series, 2U);  // raw and loom RMA writes; nccl has none
}
