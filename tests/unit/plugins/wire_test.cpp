// The plugins' listen-handle codec: round trips, and every malformed input rejected.
#include <loom/plugins/wire.hpp>

#include <gtest/gtest.h>

#include "address_support.hpp"

#include <cstring>
#include <random>

namespace lp = loom::plugins;

namespace {

auto shm_address(const char* text) -> loom::address { return address_support::str_address(text); }

/// Re-seals a handle after a test edited its fields.
void reseal(lp::handle_bytes& b) {
    const auto h = lp::fnv1a(std::span{b}.first(124));
    for (int i = 0; i < 4; ++i) b[124 + i] = static_cast<std::byte>((h >> (8 * i)) & 0xff);
}

auto error_of(const loom::result<lp::listen_info>& r) -> std::error_code { return r ? std::error_code{} : r.error(); }

TEST(WireHandle, RoundTripsEveryAddressKind) {
    const loom::address addrs[] = {
        loom::ipv4_address::parse("127.0.0.1", 4242).value(),
        loom::ipv6_address::parse("fe80::1", 7).value(),
        shm_address("fi_shm://12345:0:0"),
        loom::opaque_address{loom::address_format::efa, std::vector<std::byte>(32, std::byte{0x5a})},
    };
    for (const auto& a : addrs) {
        const lp::listen_info in{.channel_id = 0x1122334455667788ULL, .flags = 0x0102, .endpoint_address = a};
        auto bytes = lp::encode_handle(in);
        ASSERT_TRUE(bytes) << loom::to_string(a);
        auto out = lp::decode_handle(*bytes);
        ASSERT_TRUE(out) << out.error().message();
        EXPECT_EQ(out->channel_id, in.channel_id);
        EXPECT_EQ(out->flags, in.flags);
        EXPECT_EQ(out->endpoint_address, a) << loom::to_string(a);
    }
}

TEST(WireHandle, LayoutIsLittleEndianWithMagicFirst) {
    auto b = lp::encode_handle({.channel_id = 1, .endpoint_address = shm_address("fi_shm://1")}).value();
    EXPECT_EQ(b[0], std::byte{'L'});
    EXPECT_EQ(b[1], std::byte{'O'});
    EXPECT_EQ(b[2], std::byte{'O'});
    EXPECT_EQ(b[3], std::byte{'M'});
    EXPECT_EQ(b[4], std::byte{lp::wire_version});  // the version, low byte first
    EXPECT_EQ(b[5], std::byte{0});
    EXPECT_EQ(b[8], std::byte{1});  // channel id 1
    EXPECT_EQ(b[16], std::byte{static_cast<unsigned char>(loom::address_format::str)});
}

TEST(WireHandle, EncodeRejectsAddressesThatDoNotFit) {
    const loom::opaque_address big{loom::address_format::cxi,
                                   std::vector<std::byte>(lp::handle_address_capacity + 1, std::byte{1})};
    EXPECT_EQ(lp::encode_handle({.endpoint_address = big}).error(), loom::errc::invalid_argument);
    const loom::opaque_address exact{loom::address_format::cxi,
                                     std::vector<std::byte>(lp::handle_address_capacity, std::byte{1})};
    EXPECT_TRUE(lp::encode_handle({.endpoint_address = exact}));
    EXPECT_EQ(lp::encode_handle({.endpoint_address = loom::opaque_address{}}).error(), loom::errc::invalid_argument);
}

TEST(WireHandle, DecodeRejectsShortForeignAndCorruptedHandles) {
    auto good = lp::encode_handle({.channel_id = 9, .endpoint_address = shm_address("fi_shm://77:0:0")}).value();
    EXPECT_EQ(error_of(lp::decode_handle(std::span{good}.first(127))), loom::errc::invalid_argument);
    EXPECT_EQ(error_of(lp::decode_handle({})), loom::errc::invalid_argument);
    lp::handle_bytes zero{};
    EXPECT_EQ(error_of(lp::decode_handle(zero)), loom::errc::invalid_argument) << "foreign (all zero)";
    // Any single flipped bit in the sealed part is caught.
    for (std::size_t i = 0; i < 124; ++i) {
        for (int bit = 0; bit < 8; ++bit) {
            auto b = good;
            b[i] ^= static_cast<std::byte>(1 << bit);
            ASSERT_FALSE(lp::decode_handle(b)) << "byte " << i << " bit " << bit;
        }
    }
}

TEST(WireHandle, DecodeValidatesFieldsEvenWithAValidChecksum) {
    auto base = lp::encode_handle({.endpoint_address = loom::ipv4_address::parse("10.0.0.1", 1).value()}).value();
    auto next_version = base;
    next_version[4] = std::byte{lp::wire_version + 1};
    reseal(next_version);
    EXPECT_EQ(error_of(lp::decode_handle(next_version)), loom::errc::not_supported);
    auto no_len = base;
    no_len[20] = no_len[21] = std::byte{0};
    reseal(no_len);
    EXPECT_EQ(error_of(lp::decode_handle(no_len)), loom::errc::invalid_argument);
    auto long_len = base;
    long_len[20] = std::byte{static_cast<unsigned char>(lp::handle_address_capacity + 1)};
    reseal(long_len);
    EXPECT_EQ(error_of(lp::decode_handle(long_len)), loom::errc::invalid_argument);
    auto wrong_family = base;
    wrong_family[22] = std::byte{10};  // AF_INET6 bytes under the sockaddr_in format
    reseal(wrong_family);
    EXPECT_EQ(error_of(lp::decode_handle(wrong_family)), loom::errc::invalid_argument);
    auto bad_format = base;
    bad_format[16] = std::byte{200};
    reseal(bad_format);
    EXPECT_EQ(error_of(lp::decode_handle(bad_format)), loom::errc::invalid_argument);
    // Bytes after the handle are ignored.
    std::vector<std::byte> longer(base.begin(), base.end());
    longer.resize(300, std::byte{0xff});
    EXPECT_TRUE(lp::decode_handle(longer));
}

TEST(WireHandle, RandomGarbageNeverDecodes) {
    std::mt19937_64 rng(12345);
    int accepted = 0;
    for (int n = 0; n < 20000; ++n) {
        lp::handle_bytes b;
        for (auto& x : b) x = static_cast<std::byte>(rng());
        if (n % 2 == 0) {  // half of them with a valid magic and checksum: only field checks stand
            b[0] = std::byte{'L'}, b[1] = std::byte{'O'}, b[2] = std::byte{'O'}, b[3] = std::byte{'M'};
            reseal(b);
        }
        if (lp::decode_handle(b)) ++accepted;
    }
    EXPECT_EQ(accepted, 0);
}

TEST(WireHandle, Fnv1aKnownValues) {
    EXPECT_EQ(lp::fnv1a({}), 2166136261U);
    const std::byte a[] = {std::byte{'a'}};
    EXPECT_EQ(lp::fnv1a(a), 0xe40c292cU);
}

}  // namespace
