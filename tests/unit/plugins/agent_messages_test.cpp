// The transfer agent's byte strings: connection info and public data round trip, and every
// damaged string (truncated at every length, any single bit flipped, another version, extra
// bytes) is refused; notifications keep sender and message apart.
#include <loom/plugins/agent_messages.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace lp = loom::plugins;

namespace {

auto bytes(const std::string& s) { return lp::as_bytes_of(s); }

auto sample_info() -> lp::connection_info {
    lp::connection_info info{.agent = "prefill-0"};
    for (std::size_t i = 0; i < info.address.size(); ++i) info.address[i] = static_cast<std::byte>(i * 7 + 1);
    return info;
}

auto sample_public() -> lp::public_data {
    lp::memory_key k{.length = 1 << 20, .rails = 1, .rail = {{{.base = 0x7f0000001000, .key = 42}}}};
    return {.address = 0x7f0000001000, .length = 1 << 20, .key = lp::encode(k).value()};
}

/// Every prefix and every single-bit flip of `good` is refused by `decode`.
template <class Decode>
void expect_damage_refused(const std::string& good, Decode decode) {
    for (std::size_t n = 0; n < good.size(); ++n) EXPECT_FALSE(decode(bytes(good.substr(0, n)))) << "prefix " << n;
    for (std::size_t i = 0; i < good.size() * 8; ++i) {
        std::string bad = good;
        bad[i / 8] = static_cast<char>(bad[i / 8] ^ (1 << (i % 8)));
        EXPECT_FALSE(decode(bytes(bad))) << "bit " << i;
    }
    EXPECT_FALSE(decode(bytes(good + '\0')));
}

}  // namespace

TEST(AgentMessages, ConnectionInfoRoundTrips) {
    const auto info = sample_info();
    const auto s = lp::encode(info).value();
    auto back = lp::decode_connection_info(bytes(s));
    ASSERT_TRUE(back);
    EXPECT_EQ(back->agent, info.agent);
    EXPECT_EQ(back->address, info.address);
}

TEST(AgentMessages, DamagedConnectionInfoIsRefused) {
    const auto s = lp::encode(sample_info()).value();
    expect_damage_refused(s, [](auto b) { return lp::decode_connection_info(b).has_value(); });
    std::string other = s;
    other[4] = 2;  // a later version, resealed with a good checksum
    const auto sum = lp::fnv1a(bytes(other).first(other.size() - 4));
    std::memcpy(other.data() + other.size() - 4, &sum, 4);  // little-endian machine
    EXPECT_FALSE(lp::decode_connection_info(bytes(other)));
}

TEST(AgentMessages, OverlongNamesAreRefused) {
    EXPECT_EQ(lp::encode(lp::connection_info{.agent = std::string(lp::max_agent_name + 1, 'a')}).error(),
              make_error_code(loom::errc::message_too_long));
    EXPECT_EQ(lp::encode_notification(std::string(lp::max_agent_name + 1, 'a'), "m").error(),
              make_error_code(loom::errc::message_too_long));
}

TEST(AgentMessages, PublicDataRoundTrips) {
    const auto pd = sample_public();
    auto back = lp::decode_public_data(bytes(lp::encode(pd)));
    ASSERT_TRUE(back);
    EXPECT_EQ(back->address, pd.address);
    EXPECT_EQ(back->length, pd.length);
    EXPECT_EQ(back->key, pd.key);
}

TEST(AgentMessages, DamagedPublicDataIsRefused) {
    expect_damage_refused(lp::encode(sample_public()), [](auto b) { return lp::decode_public_data(b).has_value(); });
    auto wraps = sample_public();
    wraps.address = ~std::uint64_t{0} - 10;  // address + length wraps around
    EXPECT_FALSE(lp::decode_public_data(bytes(lp::encode(wraps))));
    auto empty = sample_public();
    empty.length = 0;
    EXPECT_FALSE(lp::decode_public_data(bytes(lp::encode(empty))));
}

TEST(AgentMessages, NotificationsKeepSenderAndMessage) {
    const std::string msg("with\0zero", 9);
    auto back = lp::decode_notification(bytes(lp::encode_notification("A", msg).value()));
    ASSERT_TRUE(back);
    EXPECT_EQ(back->agent, "A");
    EXPECT_EQ(back->message, msg);
    auto empty = lp::decode_notification(bytes(lp::encode_notification("agent", "").value()));
    ASSERT_TRUE(empty);
    EXPECT_EQ(empty->message, "");
    EXPECT_FALSE(
        lp::decode_notification(bytes(std::string("\x05\x00"
                                                  "abc",
                                                  5))));  // name past the end
    EXPECT_FALSE(lp::decode_notification(bytes(std::string("\x01", 1))));
}
