// Unit tests for loom/detail/inline_vector.hpp.
#include <loom/detail/inline_vector.hpp>

#include <gtest/gtest.h>

#include <sys/uio.h>

#include <cstdint>
#include <numeric>
#include <span>
#include <utility>
#include <vector>

namespace {

using small_vec = loom::detail::inline_vector<int, 4>;

auto contents(std::span<const int> s) -> std::vector<int> { return {s.begin(), s.end()}; }

auto iota_vec(int n) -> std::vector<int> {
    std::vector<int> v(static_cast<std::size_t>(n));
    std::iota(v.begin(), v.end(), 100);
    return v;
}

TEST(InlineVector, InlineUpToNHeapAbove) {
    const small_vec none;
    EXPECT_TRUE(none.empty());
    EXPECT_EQ(none.size(), 0u);
    EXPECT_TRUE(none.is_inline());
    EXPECT_EQ(none.begin(), none.end());
    for (int n = 0; n <= 9; ++n) {
        const auto src = iota_vec(n);
        const small_vec v{std::span<const int>(src)};
        EXPECT_EQ(v.size(), src.size()) << n;
        EXPECT_EQ(v.is_inline(), n <= 4) << n;
        EXPECT_EQ(contents(v), src) << n;
        if (v.is_inline()) {
            // Inline storage lives inside the object.
            const auto* self = reinterpret_cast<const std::byte*>(&v);
            const auto* d = reinterpret_cast<const std::byte*>(v.data());
            EXPECT_TRUE(d >= self && d < self + sizeof v) << n;
        }
    }
    const small_vec four{1, 2, 3, 4};
    EXPECT_TRUE(four.is_inline());
    const small_vec five{1, 2, 3, 4, 5};
    EXPECT_FALSE(five.is_inline());
    EXPECT_EQ(contents(five), (std::vector<int>{1, 2, 3, 4, 5}));
}

TEST(InlineVector, PushBackGrowsAcrossNAndKeepsEveryEntry) {
    small_vec v;
    for (int i = 0; i < 1000; ++i) {
        v.push_back(i * 3);
        ASSERT_EQ(v.size(), static_cast<std::size_t>(i + 1));
        ASSERT_EQ(v.is_inline(), i < 4) << i;
        ASSERT_EQ(v[static_cast<std::size_t>(i)], i * 3);
    }
    for (std::size_t i = 0; i < v.size(); ++i) ASSERT_EQ(v[i], static_cast<int>(i) * 3) << i;
    int expected = 0;
    for (int x : v) {
        EXPECT_EQ(x, expected);
        expected += 3;
    }
}

TEST(InlineVector, CopyIsDeepAndIndependent) {
    for (int n : {3, 4, 11}) {
        const auto src = iota_vec(n);
        small_vec a{std::span<const int>(src)};
        small_vec b = a;
        EXPECT_EQ(contents(b), src);
        EXPECT_EQ(b.is_inline(), a.is_inline());
        EXPECT_NE(b.data(), a.data());
        b[0] = -1;
        EXPECT_EQ(a[0], 100);

        small_vec c{7};
        c = a;
        EXPECT_EQ(contents(c), src);
        c[1] = -2;
        EXPECT_EQ(a[1], 101);

        // Assigning a smaller vector over a heap one shrinks the contents.
        small_vec big{std::span<const int>(iota_vec(20))};
        big = a;
        EXPECT_EQ(contents(big), src);

        // Self-assignment keeps the contents.
        auto& alias = a;
        a = alias;
        EXPECT_EQ(contents(a), src);
    }
}

TEST(InlineVector, MoveLeavesSourceEmpty) {
    // Heap storage is taken over, not copied.
    const auto src = iota_vec(10);
    small_vec heap{std::span<const int>(src)};
    const int* buffer = heap.data();
    small_vec moved = std::move(heap);
    EXPECT_EQ(moved.data(), buffer);
    EXPECT_EQ(contents(moved), src);
    EXPECT_FALSE(moved.is_inline());
    EXPECT_TRUE(heap.empty());  // NOLINT(bugprone-use-after-move): moved-from state is specified
    EXPECT_EQ(heap.size(), 0u);
    EXPECT_TRUE(heap.is_inline());
    heap.push_back(5);  // still usable
    EXPECT_EQ(contents(heap), std::vector<int>{5});

    // Inline contents are copied across.
    small_vec in{1, 2, 3};
    small_vec moved_in = std::move(in);
    EXPECT_EQ(contents(moved_in), (std::vector<int>{1, 2, 3}));
    EXPECT_TRUE(moved_in.is_inline());
    EXPECT_TRUE(in.empty());  // NOLINT(bugprone-use-after-move)

    // Move-assignment over a heap vector from an inline one, and the other way round.
    small_vec target{std::span<const int>(iota_vec(8))};
    small_vec inline_src{9, 8};
    target = std::move(inline_src);
    EXPECT_EQ(contents(target), (std::vector<int>{9, 8}));
    EXPECT_TRUE(target.is_inline());
    EXPECT_TRUE(inline_src.empty());  // NOLINT(bugprone-use-after-move)

    small_vec target2{1};
    small_vec heap_src{std::span<const int>(src)};
    target2 = std::move(heap_src);
    EXPECT_EQ(contents(target2), src);
    EXPECT_TRUE(heap_src.empty());  // NOLINT(bugprone-use-after-move)
}

TEST(InlineVector, ResizeZeroFillsAndPreservesPrefix) {
    small_vec v{1, 2, 3};
    v.resize(4);
    EXPECT_EQ(contents(v), (std::vector<int>{1, 2, 3, 0}));
    EXPECT_TRUE(v.is_inline());
    v.resize(1);
    EXPECT_EQ(contents(v), std::vector<int>{1});
    v.resize(3);  // the bytes beyond the old size are cleared again
    EXPECT_EQ(contents(v), (std::vector<int>{1, 0, 0}));
    v[2] = 7;
    v.resize(9);
    EXPECT_FALSE(v.is_inline());
    EXPECT_EQ(contents(v), (std::vector<int>{1, 0, 7, 0, 0, 0, 0, 0, 0}));
    v.resize(2);
    v.resize(6);  // within the heap capacity
    EXPECT_EQ(contents(v), (std::vector<int>{1, 0, 0, 0, 0, 0}));
    v.resize(0);
    EXPECT_TRUE(v.empty());
    v.clear();
    EXPECT_EQ(v.size(), 0u);
}

TEST(InlineVector, SpanConversion) {
    small_vec v{4, 5, 6, 7, 8, 9};
    const std::span<const int> s = v;
    EXPECT_EQ(s.data(), v.data());
    EXPECT_EQ(s.size(), 6u);
    EXPECT_EQ(s[5], 9);
    const small_vec empty;
    const std::span<const int> e = empty;
    EXPECT_TRUE(e.empty());
    // Writes through the vector are visible through the span (no copy).
    v[0] = 40;
    EXPECT_EQ(s[0], 40);
}

TEST(InlineVector, NativeIovecEntries) {
    // The real use: native IOV arrays of the default capacity (16).
    loom::detail::inline_vector<::iovec> iov;
    std::vector<char> buffers(40);
    for (std::size_t i = 0; i < 40; ++i) iov.push_back(::iovec{&buffers[i], i + 1});
    EXPECT_FALSE(iov.is_inline());
    ASSERT_EQ(iov.size(), 40u);
    for (std::size_t i = 0; i < 40; ++i) {
        EXPECT_EQ(iov[i].iov_base, &buffers[i]) << i;
        EXPECT_EQ(iov[i].iov_len, i + 1) << i;
    }
    const loom::detail::inline_vector<void*> sixteen(std::span<void* const>(std::vector<void*>(16, nullptr)));
    EXPECT_TRUE(sixteen.is_inline());
}

}  // namespace
