// loom-bench's schedule: message sizes, run order, per-round offsets (code, stack, heap), iterations
// and windows, operation names and kinds.
#include "report.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace loom::bench;

TEST(BenchSchedule, DefaultSizesArePowersOfTwoFrom8BTo64MiB) {
    const auto s = default_sizes();
    ASSERT_EQ(s.size(), 24U);
    EXPECT_EQ(s.front(), 8U);
    EXPECT_EQ(s.back(), std::size_t{64} << 20);
    for (std::size_t i = 1; i < s.size(); ++i) EXPECT_EQ(s[i], 2 * s[i - 1]);
}

TEST(BenchSchedule, ParsesListsRangesAndSuffixes) {
    EXPECT_EQ(*parse_sizes("8,4K,1M"), (std::vector<std::size_t>{8, 4096, 1 << 20}));
    EXPECT_EQ(*parse_sizes("1M,8,8"), (std::vector<std::size_t>{8, 1 << 20}));  // sorted, unique
    EXPECT_EQ(*parse_sizes("1K:8K"), (std::vector<std::size_t>{1024, 2048, 4096, 8192}));
    EXPECT_EQ(*parse_size("64MiB"), std::size_t{64} << 20);
    EXPECT_EQ(*parse_size("2G"), std::size_t{2} << 30);
    EXPECT_FALSE(parse_sizes("").has_value());
    EXPECT_FALSE(parse_sizes("8,,16").has_value());
    EXPECT_FALSE(parse_sizes("0").has_value());
    EXPECT_FALSE(parse_sizes("16:8").has_value());
    EXPECT_FALSE(parse_sizes("4X").has_value());
    EXPECT_FALSE(parse_size("99999999999999999999").has_value());
    EXPECT_EQ(format_size(8), "8");
    EXPECT_EQ(format_size(4096), "4K");
    EXPECT_EQ(format_size(std::size_t{64} << 20), "64M");
    EXPECT_EQ(format_size(1500), "1500");
}

TEST(BenchSchedule, RunOrderBalancesPlacesAndPredecessors) {
    // Over one cycle of orders every path runs equally often in every place and right after
    // every other path (a Williams design), for even and odd numbers of paths, and wherever
    // the cycle starts (rounds continue it).
    for (std::size_t n = 1; n <= 6; ++n) {
        const std::size_t cycle = run_order_cycle(n);
        EXPECT_EQ(cycle, n % 2 == 0 ? n : 2 * n);
        for (int reps : {1, 2, 3}) {
            for (std::size_t start = 0; start < 3; ++start) {
                std::map<std::pair<std::size_t, std::size_t>, int> place, follows;
                for (std::size_t s = start; s < start + cycle; ++s) {
                    const int round = static_cast<int>(s) / reps, rep = static_cast<int>(s) % reps;
                    std::vector<std::size_t> o;
                    for (std::size_t j = 0; j < n; ++j) o.push_back(run_order(n, round, reps, rep, j));
                    auto sorted = o;
                    std::sort(sorted.begin(), sorted.end());
                    for (std::size_t j = 0; j < n; ++j) ASSERT_EQ(sorted[j], j) << "not a permutation, n " << n;
                    for (std::size_t j = 0; j < n; ++j) ++place[{o[j], j}];
                    for (std::size_t j = 1; j < n; ++j) ++follows[{o[j - 1], o[j]}];
                }
                const int per_place = static_cast<int>(cycle / n);
                EXPECT_EQ(place.size(), n * n) << n;
                for (const auto& [k, c] : place) EXPECT_EQ(c, per_place) << n;
                EXPECT_EQ(follows.size(), n * (n - 1)) << n;  // every ordered pair of two paths
                for (const auto& [k, c] : follows) EXPECT_EQ(c, n % 2 == 0 ? 1 : 2) << n;
            }
        }
    }
    // The first repetition starts with raw (path 0); n = 4: raw, raw2, nccl, loom.
    for (std::size_t j = 0; j < 4; ++j) EXPECT_EQ(run_order(4, 0, 3, 0, j), std::vector<std::size_t>({0, 1, 3, 2})[j]);
    EXPECT_EQ(run_order(0, 0, 1, 0, 0), 0U);
}

/// What path_offset and heap_offset promise: a 64-byte multiple below a page, another one every
/// round, the paths of a round apart, and every line of the page visited.
void expect_offsets_move_and_keep_paths_apart(std::size_t (*offset)(int, std::size_t, std::size_t)) {
    for (std::size_t n : {1U, 2U, 3U, 4U, 7U}) {
        for (int round = 0; round < 20; ++round) {
            std::set<std::size_t> in_round;
            for (std::size_t k = 0; k < n; ++k) {
                const std::size_t at = offset(round, n, k);
                EXPECT_EQ(at % 64, 0U);
                EXPECT_LT(at, page_bytes);
                in_round.insert(at);
                if (round > 0) {
                    EXPECT_NE(at, offset(round - 1, n, k)) << "n " << n << " round " << round;
                }
            }
            EXPECT_EQ(in_round.size(), n) << "paths of a round share an offset";
        }
        // A path visits page_bytes / 64 / gcd(n, 64) offsets over that many rounds.
        std::set<std::size_t> seen;
        for (int round = 0; round < 64; ++round) seen.insert(offset(round, n, 0));
        EXPECT_EQ(seen.size(), 64U / std::gcd<std::size_t>(n, 64)) << n;
    }
}

TEST(BenchSchedule, PathOffsetsMoveEveryRoundAndKeepPathsApart) {
    expect_offsets_move_and_keep_paths_apart(&path_offset);
}

TEST(BenchSchedule, HeapOffsetsMoveEveryRoundAndKeepPathsApart) {
    expect_offsets_move_and_keep_paths_apart(&heap_offset);
    // Not the object's own offset: the two move independently.
    std::size_t same = 0;
    for (int round = 0; round < 64; ++round) same += heap_offset(round, 5, 0) == path_offset(round, 5, 0) ? 1 : 0;
    EXPECT_LT(same, 8U);
}

TEST(BenchSchedule, StackOffsetsVisitEveryPlaceInAPageAndKeepPathsApart) {
    for (std::size_t n : {1U, 2U, 3U, 4U, 7U}) {
        for (int reps : {1, 2, 3}) {
            // One path's measurements, round by round and repetition by repetition, visit all
            // page_bytes / 16 offsets before any repeats.
            std::set<std::size_t> seen;
            const int rounds = static_cast<int>(page_bytes / 16) / reps + 1;
            for (int round = 0; round < rounds; ++round)
                for (int rep = 0; rep < reps; ++rep) {
                    if (seen.size() == page_bytes / 16) break;
                    const std::size_t at = stack_offset(round, reps, rep, n, 0);
                    EXPECT_EQ(at % 16, 0U);
                    EXPECT_LT(at, page_bytes);
                    EXPECT_TRUE(seen.insert(at).second) << "n " << n << " round " << round << " rep " << rep;
                    std::set<std::size_t> in_measurement;
                    for (std::size_t k = 0; k < n; ++k) in_measurement.insert(stack_offset(round, reps, rep, n, k));
                    EXPECT_EQ(in_measurement.size(), n) << "paths of a measurement share a stack offset";
                }
            EXPECT_EQ(seen.size(), page_bytes / 16) << n;
        }
    }
}

TEST(BenchSchedule, CodeCopiesChangeEveryRoundAndDifferWithinOne) {
    for (std::size_t n : {1U, 2U, 3U, 4U, 7U}) {
        for (int round = 0; round < 3 * static_cast<int>(code_copies); ++round) {
            std::set<std::size_t> in_round;
            for (std::size_t k = 0; k < n; ++k) {
                const std::size_t c = code_copy(round, k);
                EXPECT_LT(c, code_copies);
                in_round.insert(c);
                if (round > 0) {
                    EXPECT_NE(c, code_copy(round - 1, k)) << "n " << n << " round " << round;
                }
            }
            EXPECT_EQ(in_round.size(), n) << "paths of a round run the same code copy";
        }
        // Every path runs every copy once in code_copies rounds.
        for (std::size_t k = 0; k < n; ++k) {
            std::set<std::size_t> seen;
            for (int round = 0; round < static_cast<int>(code_copies); ++round) seen.insert(code_copy(round, k));
            EXPECT_EQ(seen.size(), code_copies) << "n " << n << " path " << k;
        }
    }
}

TEST(BenchSchedule, IterationsShrinkWithSizeWithinBounds) {
    schedule_params p;  // 16 MiB budget, 2..10000 ping-pong iterations, window 16
    EXPECT_EQ(iterations_for(operation::pingpong, 8, p), 10000);
    EXPECT_EQ(iterations_for(operation::pingpong, 1 << 20, p), 8);
    EXPECT_EQ(iterations_for(operation::pingpong, std::size_t{64} << 20, p), 2);
    EXPECT_EQ(iterations_for(operation::stream, 8, p), 2500);
    EXPECT_EQ(iterations_for(operation::stream, 1 << 16, p), 16);
    EXPECT_EQ(iterations_for(operation::stream, std::size_t{64} << 20, p), 1);
    int last = 1 << 30;
    for (std::size_t s : default_sizes()) {
        const int n = iterations_for(operation::pingpong, s, p);
        EXPECT_LE(n, last);
        last = n;
    }
    p.fixed_iterations = 7;
    EXPECT_EQ(iterations_for(operation::stream, 1 << 20, p), 7);
    EXPECT_EQ(warmup_for(1000), 100);
    EXPECT_EQ(warmup_for(50), 5);
    EXPECT_EQ(warmup_for(2), 1);
    EXPECT_EQ(messages_per_iteration(operation::pingpong, 1 << 20, p), 2);
    EXPECT_EQ(messages_per_iteration(operation::stream, 1 << 20, p), 16);
    EXPECT_EQ(messages_per_iteration(operation::stream, std::size_t{16} << 20, p), 4);
}

TEST(BenchSchedule, StreamingWindowShrinksToFitItsBuffer) {
    schedule_params p;  // window 16, 64 MiB of window buffer
    EXPECT_EQ(window_for(8, p), 16);
    EXPECT_EQ(window_for(std::size_t{4} << 20, p), 16);
    EXPECT_EQ(window_for(std::size_t{8} << 20, p), 8);
    EXPECT_EQ(window_for(std::size_t{64} << 20, p), 1);
    EXPECT_EQ(window_for(std::size_t{256} << 20, p), 1);
    const auto sizes = default_sizes();
    EXPECT_EQ(buffer_bytes(sizes, p), std::size_t{64} << 20);
    const std::vector<std::size_t> small{8, 4096};
    EXPECT_EQ(buffer_bytes(small, p), 16U * 4096U);
}

TEST(BenchSchedule, OperationNamesRoundTrip) {
    for (auto op : {operation::pingpong, operation::pingpong_untagged, operation::stream, operation::rma_write,
                    operation::rma_read, operation::atomic_fadd, operation::msgrate})
        EXPECT_EQ(parse_operation(name_of(op)), op);
    EXPECT_EQ(parse_operation("bw"), operation::stream);
    EXPECT_FALSE(parse_operation("rma").has_value());  // ambiguous: rma_write or rma_read
    EXPECT_FALSE(parse_operation("atomic").has_value());
}

TEST(BenchSchedule, OperationKinds) {
    EXPECT_EQ(metric_of(operation::pingpong), metric::latency);
    EXPECT_EQ(metric_of(operation::pingpong_untagged), metric::latency);
    EXPECT_EQ(metric_of(operation::stream), metric::bandwidth);
    EXPECT_EQ(metric_of(operation::rma_write), metric::bandwidth);
    EXPECT_EQ(metric_of(operation::rma_read), metric::bandwidth);
    EXPECT_EQ(metric_of(operation::atomic_fadd), metric::rate);
    EXPECT_EQ(metric_of(operation::msgrate), metric::rate);
    EXPECT_FALSE(is_windowed(operation::pingpong));
    for (auto op :
         {operation::stream, operation::rma_write, operation::rma_read, operation::atomic_fadd, operation::msgrate})
        EXPECT_TRUE(is_windowed(op)) << name_of(op);
    EXPECT_TRUE(is_rma(operation::rma_read));
    EXPECT_FALSE(is_rma(operation::atomic_fadd));
    EXPECT_TRUE(is_atomic(operation::atomic_fadd));
    EXPECT_FALSE(is_atomic(operation::stream));
}

TEST(BenchSchedule, SizesPerOperation) {
    const std::vector<std::size_t> sizes{8, 64, 4096, 8192, 1 << 20};
    EXPECT_EQ(sizes_for(operation::stream, sizes), sizes);
    EXPECT_EQ(sizes_for(operation::rma_read, sizes), sizes);
    EXPECT_EQ(sizes_for(operation::msgrate, sizes), (std::vector<std::size_t>{8, 64, 4096}));
    EXPECT_EQ(sizes_for(operation::atomic_fadd, sizes), (std::vector<std::size_t>{8}));  // one uint64, once
    EXPECT_EQ(sizes_for(operation::atomic_fadd, std::vector<std::size_t>{1 << 20}), (std::vector<std::size_t>{8}));
    EXPECT_TRUE(sizes_for(operation::msgrate, std::vector<std::size_t>{1 << 20}).empty());
}

TEST(BenchSchedule, WindowedOperationsCountTheirWindow) {
    schedule_params p;
    // Every windowed operation: a quarter of the ping-pong count, in windows.
    EXPECT_EQ(iterations_for(operation::rma_write, 8, p), 2500);
    EXPECT_EQ(iterations_for(operation::rma_read, 1 << 16, p), 16);
    EXPECT_EQ(iterations_for(operation::msgrate, 8, p), 2500);
    EXPECT_EQ(iterations_for(operation::atomic_fadd, 8, p), 2500);
    EXPECT_EQ(messages_per_iteration(operation::atomic_fadd, 8, p), 16);
    EXPECT_EQ(messages_per_iteration(operation::rma_write, std::size_t{16} << 20, p), 4);
    EXPECT_EQ(messages_per_iteration(operation::msgrate, 64, p), 16);
}

}  // namespace
