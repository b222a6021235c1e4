// The request pool: index 0 first, every entry exactly once until exhausted, entries given back
// reused last-in first-out, foreign or surplus returns refused, reset.
#include <loom/plugins/request_pool.hpp>

#include <gtest/gtest.h>

#include <set>

namespace lp = loom::plugins;

namespace {

struct item {
    int value{0};
};

TEST(RequestPool, HandsOutEveryEntryOnceThenNothing) {
    lp::request_pool<item, 5> pool;
    EXPECT_EQ(pool.free_count(), 5U);
    std::set<std::uint32_t> indices;
    item* first = pool.take();
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(pool.index_of(*first), 0U);
    indices.insert(0);
    for (int i = 1; i < 5; ++i) {
        item* p = pool.take();
        ASSERT_NE(p, nullptr);
        EXPECT_TRUE(indices.insert(pool.index_of(*p)).second);
    }
    EXPECT_EQ(pool.take(), nullptr);
    EXPECT_EQ(pool.free_count(), 0U);
}

TEST(RequestPool, GivenBackEntriesComeBackLastInFirstOut) {
    lp::request_pool<item, 4> pool;
    item* a = pool.take();
    item* b = pool.take();
    EXPECT_TRUE(pool.put(*a));
    EXPECT_TRUE(pool.put(*b));
    EXPECT_EQ(pool.take(), b);
    EXPECT_EQ(pool.take(), a);
    EXPECT_EQ(&pool.at(pool.index_of(*a)), a);
}

TEST(RequestPool, RefusesForeignAndSurplusReturns) {
    lp::request_pool<item, 2> pool, other;
    item outside;
    EXPECT_FALSE(pool.put(outside));
    item* mine = other.take();
    EXPECT_FALSE(pool.put(*mine));
    EXPECT_FALSE(pool.put(pool.at(0)));  // nothing taken: every entry is free already
    EXPECT_EQ(pool.free_count(), 2U);
    EXPECT_TRUE(pool.owns(pool.at(1)));
    EXPECT_FALSE(pool.owns(*mine));
}

TEST(RequestPool, ResetFreesEverything) {
    lp::request_pool<item, 3> pool;
    while (pool.take() != nullptr) {
    }
    pool.reset();
    EXPECT_EQ(pool.free_count(), 3U);
    EXPECT_EQ(pool.index_of(*pool.take()), 0U);
    int n = 0;
    for (auto& it : pool) n += (it.value == 0) ? 1 : 0;
    EXPECT_EQ(n, 3);
}

}  // namespace
