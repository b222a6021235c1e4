// Region descriptors: a round trip keeps every field, and every damaged descriptor (truncated,
// any single bit flipped in the bytes it uses, a foreign magic, another version) is refused.
#include <loom/plugins/region_descriptor.hpp>

#include <gtest/gtest.h>

namespace lp = loom::plugins;

namespace {

auto sample() -> lp::remote_view {
    lp::memory_key k{
        .length = 4 << 20, .rails = 2, .rail = {{{.base = 0x7f0000001000, .key = 42}, {.base = 0, .key = 7}}}};
    return {.base = 0x7f0000001000, .length = 4 << 20, .owner = 3, .key_bytes = lp::encode(k).value()};
}

TEST(RegionDescriptor, RoundTripKeepsEveryField) {
    const auto d = lp::encode_region(sample());
    auto v = lp::decode_region(d);
    ASSERT_TRUE(v) << v.error().message();
    EXPECT_EQ(v->base, 0x7f0000001000U);
    EXPECT_EQ(v->length, 4U << 20);
    EXPECT_EQ(v->owner, 3);
    EXPECT_EQ(v->key.rails, 2);
    EXPECT_EQ(v->key.rail[0].key, 42U);
    EXPECT_EQ(v->key.rail[1].key, 7U);
    EXPECT_EQ(lp::region_base(d, 3).value(), 0x7f0000001000U);
    EXPECT_FALSE(lp::region_base(d, 2)) << "another PE's descriptor";
}

TEST(RegionDescriptor, DamageIsRefused) {
    const auto good = lp::encode_region(sample());
    const std::size_t used = 32 + lp::remote_key_size + 4;
    for (std::size_t n = 0; n < used; ++n) EXPECT_FALSE(lp::decode_region(std::span(good).first(n))) << "prefix " << n;
    for (std::size_t bit = 0; bit < used * 8; ++bit) {
        auto bad = good;
        bad[bit / 8] ^= static_cast<std::byte>(1U << (bit % 8));
        EXPECT_FALSE(lp::decode_region(bad)) << "bit " << bit;
    }
    lp::region_descriptor zero{};
    EXPECT_FALSE(lp::decode_region(zero));
}

TEST(RegionDescriptor, AnotherVersionIsNotSupported) {
    auto d = lp::encode_region(sample());
    d[4] = std::byte{2};
    EXPECT_EQ(lp::decode_region(d).error(), make_error_code(loom::errc::not_supported));
}

TEST(RegionDescriptor, InconsistentContentIsRefused) {
    auto v = sample();
    v.length = 1;  // the key says 4 MiB
    EXPECT_FALSE(lp::decode_region(lp::encode_region(v)));
    v = sample();
    v.base = ~0ULL - 10;  // wraps around
    EXPECT_FALSE(lp::decode_region(lp::encode_region(v)));
}

}  // namespace
