// Unit tests for loom/memory_region.hpp that need no provider: remote_memory arithmetic and the
// behaviour of a default-constructed (never registered) memory_region.
#include <loom/endpoint.hpp>
#include <loom/memory_region.hpp>

#include "unit_support.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <limits>

namespace {

using loom::errc;
using loom::remote_memory;
using loom::test::error_of;

constexpr auto size_max = std::numeric_limits<std::size_t>::max();
constexpr auto u64_max = std::numeric_limits<std::uint64_t>::max();

TEST(RemoteMemory, SubregionInside) {
    const remote_memory r{0x1000, 77, 100};
    const auto s = r.subregion(10, 20);
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(*s, (remote_memory{0x100a, 77, 20}));
    EXPECT_EQ(r.subregion(0, 100).value_or(remote_memory{}), r);
    EXPECT_EQ(r.subregion(99, 1).value_or(remote_memory{}), (remote_memory{0x1063, 77, 1}));
    EXPECT_EQ(r.subregion(0, 0).value_or(remote_memory{}), (remote_memory{0x1000, 77, 0}));
    // Equality looks at every field.
    EXPECT_NE((remote_memory{1, 2, 3}), (remote_memory{1, 2, 4}));
    EXPECT_NE((remote_memory{1, 2, 3}), (remote_memory{1, 3, 3}));
    EXPECT_NE((remote_memory{1, 2, 3}), (remote_memory{2, 2, 3}));
}

TEST(RemoteMemory, SubregionEmptyAtEnd) {
    const remote_memory r{0x1000, 5, 100};
    const auto end = r.subregion(100, 0);
    ASSERT_TRUE(end.has_value());
    EXPECT_EQ(*end, (remote_memory{0x1064, 5, 0}));
    // An empty region has one valid empty subregion.
    const remote_memory empty{0x2000, 5, 0};
    EXPECT_EQ(empty.subregion(0, 0).value_or(remote_memory{1, 1, 1}), empty);
    EXPECT_EQ(error_of(empty.subregion(0, 1)), errc::invalid_argument);
    EXPECT_EQ(error_of(empty.subregion(1, 0)), errc::invalid_argument);
}

TEST(RemoteMemory, SubregionOutside) {
    const remote_memory r{0x1000, 5, 100};
    EXPECT_EQ(error_of(r.subregion(101, 0)), errc::invalid_argument);
    EXPECT_EQ(error_of(r.subregion(100, 1)), errc::invalid_argument);
    EXPECT_EQ(error_of(r.subregion(50, 51)), errc::invalid_argument);
    EXPECT_EQ(error_of(r.subregion(0, 101)), errc::invalid_argument);
    EXPECT_EQ(error_of(r.subregion(size_max, 0)), errc::invalid_argument);
}

TEST(RemoteMemory, SubregionOverflow) {
    // offset + len wraps around size_t: must not slip past the bound check.
    const remote_memory huge{0, 1, size_max};
    EXPECT_EQ(error_of(huge.subregion(10, size_max)), errc::invalid_argument);
    EXPECT_EQ(error_of(huge.subregion(size_max, 1)), errc::invalid_argument);
    EXPECT_EQ(error_of(huge.subregion(2, size_max - 1)), errc::invalid_argument);
    EXPECT_TRUE(huge.subregion(1, size_max - 1).has_value());
    const remote_memory small{0x1000, 1, 16};
    EXPECT_EQ(error_of(small.subregion(8, size_max - 4)), errc::invalid_argument);  // 8 + len wraps to 4

    // The remote address range itself would wrap around 2^64: its start, or its exclusive end
    // (a range ending at the last byte of the address space has no representable end).
    const remote_memory top{u64_max - 10, 1, 100};
    EXPECT_EQ(error_of(top.subregion(20, 1)), errc::invalid_argument);  // start wraps
    EXPECT_EQ(error_of(top.subregion(5, 10)), errc::invalid_argument);  // last byte wraps
    EXPECT_EQ(error_of(top.subregion(5, 6)), errc::invalid_argument);   // last byte 2^64 - 1, end 2^64
    const auto last = top.subregion(5, 5);                              // end is 2^64 - 1
    ASSERT_TRUE(last.has_value());
    EXPECT_EQ(*last, (remote_memory{u64_max - 5, 1, 5}));
    const auto empty_end = top.subregion(10, 0);  // an empty range at 2^64 - 1: representable
    ASSERT_TRUE(empty_end.has_value());
    EXPECT_EQ(error_of(top.subregion(11, 0)), errc::invalid_argument);  // at 2^64: not
}

TEST(RemoteMemory, OffsetBy) {
    const remote_memory r{0x4000, 9, 64};
    EXPECT_EQ(r.offset_by(0).value_or(remote_memory{}), r);
    EXPECT_EQ(r.offset_by(16).value_or(remote_memory{}), (remote_memory{0x4010, 9, 48}));
    const auto end = r.offset_by(64);  // empty at the end
    ASSERT_TRUE(end.has_value());
    EXPECT_EQ(*end, (remote_memory{0x4040, 9, 0}));
    EXPECT_EQ(error_of(r.offset_by(65)), errc::invalid_argument);
    EXPECT_EQ(error_of(r.offset_by(size_max)), errc::invalid_argument);
    const remote_memory top{u64_max - 3, 9, 8};
    EXPECT_EQ(error_of(top.offset_by(4)), errc::invalid_argument);
}

TEST(MemoryRegion, DefaultConstructedIsEmpty) {
    loom::memory_region mr;
    EXPECT_FALSE(mr.valid());
    EXPECT_EQ(mr.native(), nullptr);
    EXPECT_EQ(mr.descriptor(), nullptr);
    EXPECT_EQ(mr.address(), nullptr);
    EXPECT_EQ(mr.size(), 0u);
    EXPECT_TRUE(mr.access().empty());
    EXPECT_EQ(mr.domain_native(), nullptr);
    EXPECT_EQ(error_of(mr.key()), errc::invalid_argument);
    EXPECT_EQ(error_of(remote_memory::from_mr(mr)), errc::invalid_argument);
    // Closing nothing succeeds, repeatedly; moving keeps it invalid.
    EXPECT_TRUE(mr.close().has_value());
    EXPECT_TRUE(mr.close().has_value());
    const loom::memory_region moved = std::move(mr);
    EXPECT_FALSE(moved.valid());
}

TEST(MemoryRegion, DefaultConstructedContainsNothing) {
    const loom::memory_region mr;
    std::array<std::byte, 16> buf{};
    EXPECT_FALSE(mr.contains(nullptr, 0));
    EXPECT_FALSE(mr.contains(buf.data(), 0));
    EXPECT_FALSE(mr.contains(buf.data(), buf.size()));
    EXPECT_FALSE(mr.contains(std::span<const std::byte>(buf)));
    EXPECT_FALSE(mr.contains(std::span<const std::byte>{}));
    const loom::endpoint ep;
    EXPECT_FALSE(mr.usable_with(ep));
}

}  // namespace
