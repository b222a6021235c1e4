// The endpoint manager's wire formats: batches of records, zero-copy headers and remote keys
// round trip with their fixed layout, and every malformed input (truncated at every length,
// any single bit flipped, random bytes) is refused or read within its bounds.
#include <loom/plugins/manager_messages.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace lp = loom::plugins;

namespace {

auto as_bytes(const std::string& s) -> std::span<const std::byte> {
    return std::as_bytes(std::span{s.data(), s.size()});
}

/// Every record of a batch, or the error that stopped the walk.
auto read_all(std::span<const std::byte> batch) -> loom::result<std::vector<std::pair<std::uint16_t, std::string>>> {
    auto r = lp::batch_reader::open(batch);
    if (!r) return std::unexpected(r.error());
    std::vector<std::pair<std::uint16_t, std::string>> out;
    for (;;) {
        auto rec = r->next();
        if (!rec) return std::unexpected(rec.error());
        if (!*rec) return out;
        const auto p = (*rec)->payload;
        EXPECT_GE(p.data(), batch.data());
        EXPECT_LE(p.data() + p.size(), batch.data() + batch.size());  // never beyond what arrived
        out.emplace_back((*rec)->kind, std::string(reinterpret_cast<const char*>(p.data()), p.size()));
    }
}

auto sample_batch(std::vector<std::byte>& buf) -> std::vector<std::byte> {
    lp::batch_writer w(buf);
    EXPECT_TRUE(w.append(0, as_bytes("first")));
    EXPECT_TRUE(w.append(0, {}));
    EXPECT_TRUE(w.append(7, as_bytes("a record of a component")));
    auto b = w.finish();
    return {b.begin(), b.end()};
}

TEST(ManagerMessages, BatchRoundTripsInOrder) {
    std::vector<std::byte> buf(256);
    const auto batch = sample_batch(buf);
    EXPECT_EQ(batch.size(), lp::batch_header_size + lp::record_size(5) + lp::record_size(0) + lp::record_size(23));
    EXPECT_EQ(batch.size() % 8, 0U);  // records padded: payloads stay 8-byte aligned
    auto all = read_all(batch);
    ASSERT_TRUE(all);
    ASSERT_EQ(all->size(), 3U);
    EXPECT_EQ((*all)[0], (std::pair<std::uint16_t, std::string>{0, "first"}));
    EXPECT_EQ((*all)[1], (std::pair<std::uint16_t, std::string>{0, ""}));
    EXPECT_EQ((*all)[2], (std::pair<std::uint16_t, std::string>{7, "a record of a component"}));
}

TEST(ManagerMessages, BatchLayoutIsFixed) {
    std::vector<std::byte> buf(64);
    lp::batch_writer w(buf);
    ASSERT_TRUE(w.append(3, as_bytes("xyz")));
    const auto b = w.finish();
    unsigned char want[] = {'B', 'A', 'T', '1', 0, 0, 1, 0, 32,  0,   0,   0, 0, 0, 0, 0,  // header
                            3,   0,   0,   0,   3, 0, 0, 0, 'x', 'y', 'z', 0, 0, 0, 0, 0};
    want[4] = lp::wire_version;  // u16, low byte first
    ASSERT_EQ(b.size(), sizeof(want));
    EXPECT_EQ(std::memcmp(b.data(), want, sizeof(want)), 0);
}

TEST(ManagerMessages, WriterRefusesWhatDoesNotFitAndKeepsWhatIsThere) {
    std::vector<std::byte> buf(lp::batch_header_size + lp::record_size(8) + lp::record_size(4));
    lp::batch_writer w(buf);
    EXPECT_TRUE(w.append(0, as_bytes("12345678")));
    EXPECT_FALSE(w.append(0, as_bytes("123456789")));  // one byte too many for the rest
    EXPECT_TRUE(w.append(0, as_bytes("abcd")));
    EXPECT_FALSE(w.append(0, {}));
    EXPECT_EQ(w.records(), 2);
    auto all = read_all(w.finish());
    ASSERT_TRUE(all);
    EXPECT_EQ(all->size(), 2U);
    w.reset();
    EXPECT_TRUE(w.empty());
    EXPECT_TRUE(lp::batch_writer::fits(buf.size() - lp::batch_header_size - 8, buf.size()));
    EXPECT_FALSE(lp::batch_writer::fits(buf.size() - lp::batch_header_size - 7, buf.size()));
    EXPECT_FALSE(lp::batch_writer::fits(0, lp::batch_header_size - 1));
}

TEST(ManagerMessages, TruncatedBatchesAreRefused) {
    std::vector<std::byte> buf(256);
    const auto batch = sample_batch(buf);
    for (std::size_t n = 0; n < batch.size(); ++n) EXPECT_FALSE(read_all(std::span{batch}.first(n))) << n;
}

TEST(ManagerMessages, EveryBitFlipIsRefusedOrStaysInBounds) {
    std::vector<std::byte> buf(256);
    const auto batch = sample_batch(buf);
    int refused = 0;
    for (std::size_t bit = 0; bit < batch.size() * 8; ++bit) {
        auto b = batch;
        b[bit / 8] ^= static_cast<std::byte>(1U << (bit % 8));
        refused += read_all(b) ? 0 : 1;  // payload bits change content only; read_all checks bounds
    }
    EXPECT_GE(refused, static_cast<int>(lp::batch_header_size * 8));  // every header bit is checked
}

TEST(ManagerMessages, RandomBytesNeverReadOutOfBounds) {
    std::mt19937_64 rng(7);
    for (int i = 0; i < 20000; ++i) {
        std::vector<std::byte> b(rng() % 96);
        for (auto& x : b) x = static_cast<std::byte>(rng());
        if (b.size() >= lp::batch_header_size && (i % 2) == 0) {  // a plausible header over random records
            const std::uint32_t total = static_cast<std::uint32_t>(b.size());
            std::memcpy(b.data(), "BAT1\1\0", 6);
            std::memcpy(b.data() + 8, &total, 4);
            std::memset(b.data() + 12, 0, 4);
        }
        (void)read_all(b);
    }
}

TEST(ManagerMessages, ZeroCopyHeaderRoundTripsAndRefusesMalformed) {
    std::array<std::byte, lp::zero_copy_header_size> slot{};
    const std::string user = "zc 3";
    const auto n = lp::encode(lp::zero_copy_header{.data_length = 1ULL << 40, .header = as_bytes(user)}, slot);
    ASSERT_TRUE(n);
    EXPECT_EQ(*n, 16 + user.size());
    auto h = lp::decode_zero_copy_header(std::span{slot}.first(*n));
    ASSERT_TRUE(h);
    EXPECT_EQ(h->data_length, 1ULL << 40);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(h->header.data()), h->header.size()), user);
    for (std::size_t k = 0; k < *n; ++k) EXPECT_FALSE(lp::decode_zero_copy_header(std::span{slot}.first(k))) << k;
    EXPECT_FALSE(lp::decode_zero_copy_header(std::span{slot}.first(*n + 1)));  // length disagrees
    std::vector<std::byte> big(lp::max_header_bytes + 1);
    EXPECT_EQ(lp::encode(lp::zero_copy_header{.data_length = 0, .header = big}, slot).error(),
              loom::make_error_code(loom::errc::invalid_argument));
    for (std::size_t bit = 0; bit < 48; ++bit) {  // magic and version bits
        auto b = slot;
        b[bit / 8] ^= static_cast<std::byte>(1U << (bit % 8));
        EXPECT_FALSE(lp::decode_zero_copy_header(std::span{b}.first(*n))) << bit;
    }
}

TEST(ManagerMessages, RemoteKeyRoundTripsEveryRailAndRefusesMalformed) {
    lp::memory_key k{.length = 65536, .rails = 3};
    for (std::size_t i = 0; i < 3; ++i)
        k.rail[i] = {.base = 0x7f0012345000ULL + i * 4096, .key = 0xdeadbeefcafeULL + i};
    const auto b = lp::encode(k).value();
    auto d = lp::decode_remote_key(b);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->length, k.length);
    ASSERT_EQ(d->rails, 3);
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(d->rail[i].base, k.rail[i].base) << i;
        EXPECT_EQ(d->rail[i].key, k.rail[i].key) << i;
    }
    for (std::size_t n = 0; n < b.size(); ++n) EXPECT_FALSE(lp::decode_remote_key(std::span{b}.first(n)));
    auto flipped = [&](std::size_t bit) {
        auto x = b;
        x[bit / 8] ^= static_cast<std::byte>(1U << (bit % 8));
        return x;
    };
    for (std::size_t bit = 0; bit < b.size() * 8; ++bit) EXPECT_FALSE(lp::decode_remote_key(flipped(bit))) << bit;
    k.rails = 0;
    EXPECT_EQ(lp::encode(k).error(), loom::errc::invalid_argument);
    k.rails = lp::max_rails + 1;
    EXPECT_EQ(lp::encode(k).error(), loom::errc::invalid_argument);
    const auto wraps =
        lp::encode(lp::memory_key{.length = 100, .rails = 1, .rail = {{{.base = ~0ULL - 10, .key = 1}}}}).value();
    EXPECT_FALSE(lp::decode_remote_key(wraps));
}

TEST(ManagerMessages, GoodbyeIsABatchOfOneRecord) {
    std::array<std::byte, lp::goodbye_batch_size> buf{};
    const auto n = lp::encode(lp::goodbye{.batches = 12, .zero_copy = 1ULL << 33}, buf);
    ASSERT_TRUE(n);
    EXPECT_EQ(*n, lp::goodbye_batch_size);
    auto r = lp::batch_reader::open(std::span{buf}.first(*n));
    ASSERT_TRUE(r);
    auto rec = r->next();
    ASSERT_TRUE(rec && *rec);
    EXPECT_EQ((*rec)->kind, static_cast<std::uint16_t>(lp::record_kind::goodbye));
    auto g = lp::decode_goodbye((*rec)->payload);
    ASSERT_TRUE(g);
    EXPECT_EQ(g->batches, 12U);
    EXPECT_EQ(g->zero_copy, 1ULL << 33);
    EXPECT_FALSE(lp::decode_goodbye((*rec)->payload.first(15)));
    std::array<std::byte, lp::goodbye_batch_size - 1> small{};
    EXPECT_FALSE(lp::encode(lp::goodbye{}, small));
    EXPECT_LT(lp::last_component_kind, static_cast<std::uint16_t>(lp::record_kind::goodbye));
}

}  // namespace
