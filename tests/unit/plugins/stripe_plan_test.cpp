// The stripe plan: stripes cover the transfer exactly, in order, page-aligned but for the last.
#include <loom/plugins/stripe_plan.hpp>

#include <gtest/gtest.h>

namespace lp = loom::plugins;

namespace {

void expect_exact_cover(const lp::stripe_plan& p, std::size_t bytes) {
    std::size_t off = 0;
    for (int k = 0; k < p.count; ++k) {
        const auto& s = p.stripes[static_cast<std::size_t>(k)];
        ASSERT_EQ(s.offset, off) << "stripe " << k;
        ASSERT_GT(s.length, 0U) << "stripe " << k;
        if (k + 1 < p.count) {
            ASSERT_EQ(s.length % 4096, 0U) << "stripe " << k << " is not page-aligned";
        }
        off += s.length;
    }
    ASSERT_EQ(off, bytes);
}

TEST(StripePlan, NothingToWriteIsNoStripe) { EXPECT_EQ(lp::plan_stripes(0, 4).count, 0); }

TEST(StripePlan, SmallTransfersStayOnOneRail) {
    const auto p = lp::plan_stripes(2 * lp::stripe_min - 1, 2);
    ASSERT_EQ(p.count, 1);
    EXPECT_EQ(p.stripes[0].length, 2 * lp::stripe_min - 1);
    EXPECT_EQ(lp::plan_stripes(2 * lp::stripe_min, 2).count, 2);
}

TEST(StripePlan, RemainderGoesToTheLastStripe) {
    // 2 x 128 KiB + 1 byte over two rails: a share rounded from the floor lost the last byte.
    const std::size_t bytes = 2 * 131072 + 1;
    const auto p = lp::plan_stripes(bytes, 2);
    ASSERT_EQ(p.count, 2);
    EXPECT_EQ(p.stripes[0].length, 131072U + 4096U);
    EXPECT_EQ(p.stripes[1].length, bytes - p.stripes[0].length);
    expect_exact_cover(p, bytes);
}

TEST(StripePlan, PageRoundingCanLeaveRailsUnused) {
    // 3 rails, each share rounds up to a page: with only a little over 3 pages' worth per rail
    // the first stripes may take it all.
    const auto p = lp::plan_stripes(3 * 4096 + 2, 3, 1);
    expect_exact_cover(p, 3 * 4096 + 2);
    EXPECT_LE(p.count, 3);
}

TEST(StripePlan, EverySizeAndRailCountCoversExactly) {
    for (int rails = 1; rails <= lp::max_rails; ++rails) {
        for (std::size_t bytes :
             {std::size_t{1}, std::size_t{4095}, std::size_t{4097}, lp::stripe_min * 8 - 1, lp::stripe_min * 8,
              lp::stripe_min * 8 + 1, std::size_t{16} << 20, (std::size_t{16} << 20) + 12345}) {
            const auto p = lp::plan_stripes(bytes, rails);
            SCOPED_TRACE(testing::Message() << bytes << " bytes over " << rails << " rails");
            expect_exact_cover(p, bytes);
            EXPECT_LE(p.count, rails);
        }
    }
}

TEST(StripePlan, RailCountsOutOfRangeAreClamped) {
    EXPECT_EQ(lp::plan_stripes(1 << 20, 0).count, 1);
    EXPECT_LE(lp::plan_stripes(std::size_t{64} << 20, lp::max_rails + 5).count, lp::max_rails);
}

static_assert(lp::plan_stripes(4 * lp::stripe_min, 4).count == 4, "usable in constant expressions");

}  // namespace
