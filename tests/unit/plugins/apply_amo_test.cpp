// The staged atomics' read-modify-write (what a target performs for a peer) on 4- and 8-byte
// words: every verb's new value and returned old value, and a 4-byte verb leaves its
// neighbour in the same 8-byte word alone.
#include <loom/plugins/pe_group.hpp>

#include <loom/gpu/cuda.hpp>

#include <gtest/gtest.h>

#include <cstdint>

namespace lp = loom::plugins;
using lp::amo_op;

namespace {

struct amo_case {
    amo_op op;
    std::uint64_t start, operand, compare, after, returned;
};

template <class T>
void check(const amo_case& c) {
    alignas(8) T words[2] = {static_cast<T>(c.start), static_cast<T>(0x5a5a5a5a5a5a5a5aULL)};
    const auto old =
        lp::apply_amo(&words[0], {.op = c.op, .size = sizeof(T), .operand = c.operand, .compare = c.compare});
    EXPECT_EQ(words[0], static_cast<T>(c.after)) << "verb " << static_cast<int>(c.op) << " size " << sizeof(T);
    if (lp::is_fetching(c.op)) {
        EXPECT_EQ(old, static_cast<T>(c.returned)) << "verb " << static_cast<int>(c.op);
    }
    EXPECT_EQ(words[1], static_cast<T>(0x5a5a5a5a5a5a5a5aULL)) << "the neighbour changed";
}

TEST(ApplyAmo, EveryVerbOnBothSizes) {
    const amo_case cases[] = {
        {amo_op::set, 5, 9, 0, 9, 0},
        {amo_op::swap, 5, 9, 0, 9, 5},
        {amo_op::compare_swap, 5, 9, 5, 9, 5},
        {amo_op::compare_swap, 5, 9, 4, 5, 5},
        {amo_op::add, 5, 3, 0, 8, 0},
        {amo_op::fetch_add, 0xffffffffULL, 1, 0, 0x100000000ULL, 0xffffffffULL},
        {amo_op::bit_and, 0b1100, 0b1010, 0, 0b1000, 0},
        {amo_op::fetch_and, 0b1100, 0b1010, 0, 0b1000, 0b1100},
        {amo_op::bit_or, 0b1100, 0b1010, 0, 0b1110, 0},
        {amo_op::fetch_or, 0b1100, 0b1010, 0, 0b1110, 0b1100},
        {amo_op::bit_xor, 0b1100, 0b1010, 0, 0b0110, 0},
        {amo_op::fetch_xor, 0b1100, 0b1010, 0, 0b0110, 0b1100},
        {amo_op::fetch, 77, 0, 0, 77, 77},
    };
    for (const auto& c : cases) {
        check<std::uint64_t>(c);
        check<std::uint32_t>(c);  // the 4-byte version wraps where the 8-byte one carries
    }
}

TEST(ApplyAmo, FetchingVerbsAreTheOnesThatReturn) {
    for (auto op : {amo_op::swap, amo_op::compare_swap, amo_op::fetch_add, amo_op::fetch_and, amo_op::fetch_or,
                    amo_op::fetch_xor, amo_op::fetch})
        EXPECT_TRUE(lp::is_fetching(op));
    for (auto op : {amo_op::set, amo_op::add, amo_op::bit_and, amo_op::bit_or, amo_op::bit_xor})
        EXPECT_FALSE(lp::is_fetching(op));
}

// On device memory (through the CUDA driver: the real one, or the test's fake under
// plugins_apply_amo_on_fake_driver): the same verbs, the same results.
TEST(ApplyAmo, OnDeviceMemoryThroughTheDriver) {
    auto drv = loom::gpu::cuda_driver::instance();
    if (!drv || (*drv)->device_count() < 1) GTEST_SKIP() << "no CUDA driver with a device";
    auto mem = (*drv)->alloc(64);
    ASSERT_TRUE(mem);
    auto* word = static_cast<std::byte*>(*mem);
    std::uint64_t v = 5;
    ASSERT_TRUE((*drv)->copy_to_device(word, &v, 8));
    EXPECT_EQ(lp::apply_amo_on_device(word, {.op = amo_op::fetch_add, .size = 8, .operand = 3}).value(), 5U);
    EXPECT_EQ(
        lp::apply_amo_on_device(word, {.op = amo_op::compare_swap, .size = 8, .operand = 1, .compare = 8}).value(), 8U);
    EXPECT_EQ(lp::apply_amo_on_device(word, {.op = amo_op::swap, .size = 4, .operand = 9}).value(), 1U);
    EXPECT_EQ(lp::apply_amo_on_device(word, {.op = amo_op::fetch, .size = 8}).value(), 9U);
    ASSERT_TRUE((*drv)->copy_to_host(&v, word, 8));
    EXPECT_EQ(v, 9U);
    EXPECT_FALSE(lp::apply_amo_on_device(word, {.op = amo_op::add, .size = 2, .operand = 1}));
    EXPECT_TRUE((*drv)->free(*mem));
}

}  // namespace
