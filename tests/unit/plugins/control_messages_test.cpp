// The runtime's control messages: round trips, fixed layout, and every malformed input refused
// (truncated at every length, any single bit flipped, random bytes) without reading past the end.
#include <loom/plugins/control_messages.hpp>

#include <gtest/gtest.h>

#include "address_support.hpp"

#include <cstring>
#include <random>
#include <vector>

namespace lp = loom::plugins;

namespace {

using address_support::str_address;

auto sample_connect() -> lp::connect_message {
    return {.sender_channel = 7,
            .listen_channel = 0x3ffff,
            .pid = 4242,
            .host = 0x0102030405060708ULL,
            .sender_address = loom::ipv4_address::parse("10.1.2.3", 5000).value(),
            .rails = {loom::ipv4_address::parse("10.1.2.4", 5001).value(), str_address("fi_shm://9:0:0")},
            .liveness = loom::ipv4_address::parse("10.1.2.3", 5002).value()};
}

auto sample_accept() -> lp::accept_message {
    return {.receiver_channel = 11,
            .sender_channel = 7,
            .pid = 99,
            .host = 0xfeedfacecafebeefULL,
            .rails = {loom::ipv6_address::parse("fe80::2", 9).value()},
            .liveness = loom::ipv6_address::parse("fe80::1", 10).value()};
}

auto sample_cts() -> lp::clear_to_send {
    lp::clear_to_send c{.target = {.channel = 5, .request = lp::recv_pool_size - 1, .slot = lp::max_slots - 1},
                        .capacity = loom::plugins::immediate::length_mask,
                        .rails = 3};
    for (int k = 0; k < 3; ++k) c.rail[static_cast<std::size_t>(k)] = {0x1000ULL * (k + 1), 0xabc0ULL + k};
    return c;
}

template <class M>
auto bytes_of(const M& m) -> std::vector<std::byte> {
    std::vector<std::byte> out(lp::control_capacity);
    out.resize(lp::encode(m, out).value());
    return out;
}

void expect_same(const lp::connect_message& a, const lp::connect_message& b) {
    EXPECT_EQ(a.sender_channel, b.sender_channel);
    EXPECT_EQ(a.listen_channel, b.listen_channel);
    EXPECT_EQ(a.pid, b.pid);
    EXPECT_EQ(a.host, b.host);
    EXPECT_EQ(a.sender_address, b.sender_address);
    EXPECT_EQ(a.rails, b.rails);
    EXPECT_EQ(a.liveness, b.liveness);
}

TEST(ControlMessages, ConnectRoundTrips) {
    const auto m = sample_connect();
    const auto b = bytes_of(m);
    EXPECT_EQ(b.size(), lp::encoded_size(m));
    auto d = lp::decode_connect(b);
    ASSERT_TRUE(d) << d.error().message();
    expect_same(*d, m);
}

TEST(ControlMessages, ConnectWithoutALivenessEndpointRoundTrips) {
    auto m = sample_connect();
    m.liveness.reset();  // a peer without one (LOOM_LIVENESS_ENDPOINT=0, or it failed to open)
    const auto b = bytes_of(m);
    EXPECT_EQ(b.size(), lp::encoded_size(sample_connect()) - 16);  // an empty entry: no sockaddr_in
    EXPECT_EQ(b[b.size() - 6], std::byte{0});                      // length 0, format 0
    EXPECT_EQ(b[b.size() - 2], std::byte{0});
    auto d = lp::decode_connect(b);
    ASSERT_TRUE(d) << d.error().message();
    expect_same(*d, m);
}

TEST(ControlMessages, AcceptRoundTripsWithAndWithoutRailsAndLivenessEndpoint) {
    for (int pass = 0; pass < 4; ++pass) {
        auto m = sample_accept();
        if ((pass & 1) != 0) m.rails.clear();
        if ((pass & 2) != 0) m.liveness.reset();
        const auto b = bytes_of(m);
        auto d = lp::decode_accept(b);
        ASSERT_TRUE(d) << d.error().message();
        EXPECT_EQ(d->receiver_channel, m.receiver_channel);
        EXPECT_EQ(d->sender_channel, m.sender_channel);
        EXPECT_EQ(d->pid, m.pid);
        EXPECT_EQ(d->host, m.host);
        EXPECT_EQ(d->rails, m.rails);
        EXPECT_EQ(d->liveness, m.liveness);
    }
}

TEST(ControlMessages, ClearToSendRoundTripsEveryTargetField) {
    const auto m = sample_cts();
    const auto b = bytes_of(m);
    EXPECT_EQ(b.size(), 16U + 16U * 3U);
    auto d = lp::decode_cts(b);
    ASSERT_TRUE(d) << d.error().message();
    EXPECT_EQ(d->target, m.target);
    EXPECT_EQ(d->capacity, m.capacity);
    ASSERT_EQ(d->rails, 3);
    for (std::size_t k = 0; k < 3; ++k) {
        EXPECT_EQ(d->rail[k].address, m.rail[k].address);
        EXPECT_EQ(d->rail[k].key, m.rail[k].key);
    }
}

TEST(ControlMessages, LayoutIsLittleEndianAtFixedOffsets) {
    const auto c = bytes_of(sample_connect());
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(c.data()), 4), "CONN");
    EXPECT_EQ(c[4], std::byte{lp::wire_version});
    EXPECT_EQ(c[8], std::byte{7});      // sender channel
    EXPECT_EQ(c[12], std::byte{0xff});  // listen channel 0x3ffff, low byte first
    EXPECT_EQ(c[14], std::byte{0x03});
    EXPECT_EQ(c[24], std::byte{0x08});                         // host, low byte first
    EXPECT_EQ(c[lp::connect_header_size + 16], std::byte{2});  // after the 16-byte sockaddr_in: two rails
    // The liveness entry closes the message: u16 length, u32 format, the sockaddr_in (port 5002).
    const std::size_t live = c.size() - 6 - 16;
    EXPECT_EQ(c[live], std::byte{16});
    EXPECT_EQ(c[live + 1], std::byte{0});
    EXPECT_EQ(c[live + 2], std::byte{static_cast<unsigned char>(loom::address_format::sockaddr_in)});
    EXPECT_EQ(c[live + 6 + 2], std::byte{0x13});  // port 5002 = 0x138a, network order
    EXPECT_EQ(c[live + 6 + 3], std::byte{0x8a});
    const auto a = bytes_of(sample_accept());
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(a.data()), 4), "ACPT");
    EXPECT_EQ(a[8], std::byte{11});
    EXPECT_EQ(a[lp::accept_header_size], std::byte{1});
    const auto t = bytes_of(sample_cts());
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(t.data()), 4), "CTS1");
    EXPECT_EQ(t[4], std::byte{3});
    EXPECT_EQ(t[16], std::byte{0x00});  // rail 0 address 0x1000
    EXPECT_EQ(t[17], std::byte{0x10});
}

TEST(ControlMessages, EncodeRefusesWhatCannotTravel) {
    auto m = sample_connect();
    std::vector<std::byte> out(lp::control_capacity);
    m.sender_address = loom::opaque_address{};
    EXPECT_EQ(lp::encode(m, out).error(), loom::errc::invalid_argument);
    m = sample_connect();
    m.sender_address = loom::opaque_address{loom::address_format::cxi,
                                            std::vector<std::byte>(lp::handle_address_capacity + 1, std::byte{1})};
    EXPECT_EQ(lp::encode(m, out).error(), loom::errc::invalid_argument);
    m = sample_connect();
    m.rails.assign(lp::max_rails, m.sender_address);  // rails 1.. are at most max_rails - 1
    EXPECT_EQ(lp::encode(m, out).error(), loom::errc::invalid_argument);
    m = sample_connect();
    m.liveness = loom::opaque_address{};
    EXPECT_EQ(lp::encode(m, out).error(), loom::errc::invalid_argument);
    auto a = sample_accept();
    a.liveness = loom::opaque_address{};
    EXPECT_EQ(lp::encode(a, out).error(), loom::errc::invalid_argument);
    m = sample_connect();
    std::vector<std::byte> small(lp::encoded_size(m) - 1);
    EXPECT_EQ(lp::encode(m, small).error(), loom::errc::no_space);
    auto c = sample_cts();
    c.rails = 0;
    EXPECT_EQ(lp::encode(c, out).error(), loom::errc::invalid_argument);
    c.rails = lp::max_rails + 1;
    EXPECT_EQ(lp::encode(c, out).error(), loom::errc::invalid_argument);
    c = sample_cts();
    c.capacity = loom::plugins::immediate::length_mask + 1;
    EXPECT_EQ(lp::encode(c, out).error(), loom::errc::invalid_argument);
}

/// decode(bytes) either fails with protocol_error or yields a message that encodes back to
/// exactly `bytes`: nothing is read that the message does not say it has.
template <class Decode>
void expect_refused_or_faithful(std::span<const std::byte> b, Decode decode, const char* what, std::size_t i) {
    auto d = decode(b);
    if (!d) {
        ASSERT_EQ(d.error(), loom::errc::protocol_error) << what << " " << i;
        return;
    }
    std::vector<std::byte> again(lp::control_capacity);
    auto n = lp::encode(*d, again);
    ASSERT_TRUE(n) << what << " " << i;
    again.resize(*n);
    ASSERT_TRUE(std::ranges::equal(again, b)) << what << " " << i << ": decoded, but not faithfully";
}

template <class M, class Decode>
void torture(const M& m, Decode decode, const char* what) {
    const auto good = bytes_of(m);
    for (std::size_t n = 0; n < good.size(); ++n)
        EXPECT_FALSE(decode(std::span{good}.first(n))) << what << " truncated to " << n;
    auto longer = good;
    longer.push_back(std::byte{0});
    EXPECT_FALSE(decode(longer)) << what << " with a trailing byte";
    for (std::size_t i = 0; i < good.size(); ++i) {
        for (int bit = 0; bit < 8; ++bit) {
            auto b = good;
            b[i] ^= static_cast<std::byte>(1 << bit);
            expect_refused_or_faithful(b, decode, what, i * 8 + static_cast<std::size_t>(bit));
        }
    }
    // Magic and version bytes are never accepted flipped.
    for (std::size_t i = 0; i < 4; ++i) {
        auto b = good;
        b[i] ^= std::byte{0x20};
        EXPECT_FALSE(decode(b)) << what << " magic byte " << i;
    }
}

TEST(ControlMessages, LivenessRoundTripsAndHasItsLayout) {
    using enum lp::liveness_kind;
    for (const auto kind : {ping, pong, closed}) {
        const lp::liveness_message m{.kind = kind, .sequence = 0xdeadbeef};
        const auto b = bytes_of(m);
        ASSERT_EQ(b.size(), lp::liveness_size);
        EXPECT_EQ(std::string(reinterpret_cast<const char*>(b.data()), 4), "LIVE");
        EXPECT_EQ(b[6], static_cast<std::byte>(kind));
        EXPECT_EQ(b[8], std::byte{0xef});
        auto d = lp::decode_liveness(b);
        ASSERT_TRUE(d);
        EXPECT_EQ(d->kind, kind);
        EXPECT_EQ(d->sequence, 0xdeadbeefU);
    }
    auto b = bytes_of(lp::liveness_message{});
    b[6] = std::byte{4};
    EXPECT_EQ(lp::decode_liveness(b).error(), loom::errc::protocol_error);
    b[6] = std::byte{0};
    EXPECT_EQ(lp::decode_liveness(b).error(), loom::errc::protocol_error);
    std::array<std::byte, 8> small{};
    EXPECT_EQ(lp::encode(lp::liveness_message{}, small).error(), loom::errc::no_space);
}

TEST(ControlMessages, TruncatedOrBitFlippedMessagesAreRefusedOrReadFaithfully) {
    torture(
        lp::liveness_message{.kind = lp::liveness_kind::pong, .sequence = 77},
        [](auto b) { return lp::decode_liveness(b); }, "liveness");
    torture(sample_connect(), [](auto b) { return lp::decode_connect(b); }, "connect");
    torture(sample_accept(), [](auto b) { return lp::decode_accept(b); }, "accept");
    torture(sample_cts(), [](auto b) { return lp::decode_cts(b); }, "cts");
}

TEST(ControlMessages, VersionAndChannelIdsAreChecked) {
    auto c = bytes_of(sample_connect());
    c[4] = std::byte{lp::wire_version + 1};
    EXPECT_EQ(lp::decode_connect(c).error(), loom::errc::protocol_error);
    auto zero_sender = sample_connect();
    zero_sender.sender_channel = 0;
    EXPECT_EQ(lp::decode_connect(bytes_of(zero_sender)).error(), loom::errc::protocol_error);
    auto big_listen = sample_connect();
    big_listen.listen_channel = loom::plugins::match_bits::max_channel_id + 1;
    EXPECT_EQ(lp::decode_connect(bytes_of(big_listen)).error(), loom::errc::protocol_error);
    auto zero_receiver = sample_accept();
    zero_receiver.receiver_channel = 0;
    EXPECT_EQ(lp::decode_accept(bytes_of(zero_receiver)).error(), loom::errc::protocol_error);
    auto cts = sample_cts();
    cts.target.channel = 0;
    EXPECT_EQ(lp::decode_cts(bytes_of(cts)).error(), loom::errc::protocol_error);
}

TEST(ControlMessages, RandomBytesNeverCrashAndRarelyDecode) {
    std::mt19937_64 rng(777);
    const auto connect = bytes_of(sample_connect());
    const auto accept = bytes_of(sample_accept());
    const auto cts = bytes_of(sample_cts());
    for (int n = 0; n < 20000; ++n) {
        std::vector<std::byte> b(rng() % 200);
        for (auto& x : b) x = static_cast<std::byte>(rng());
        const std::vector<std::byte>* like = n % 3 == 0 ? &connect : n % 3 == 1 ? &accept : &cts;
        // Two of three keep a valid magic and version, so the field checks are what stands.
        if (n % 3 != 2 && b.size() >= 8) std::copy_n(like->begin(), 6, b.begin());
        expect_refused_or_faithful(
            b, [](auto s) { return lp::decode_connect(s); }, "connect", static_cast<std::size_t>(n));
        expect_refused_or_faithful(
            b, [](auto s) { return lp::decode_accept(s); }, "accept", static_cast<std::size_t>(n));
        expect_refused_or_faithful(b, [](auto s) { return lp::decode_cts(s); }, "cts", static_cast<std::size_t>(n));
        expect_refused_or_faithful(
            b, [](auto s) { return lp::decode_liveness(s); }, "liveness", static_cast<std::size_t>(n));
    }
}

}  // namespace
