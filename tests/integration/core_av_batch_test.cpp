// Batch insertion into address vectors: binary addresses of one length (tcp) and string
// addresses of different lengths (shm), each handle looking up to the address it came from;
// the refusals before the provider is asked.
#include <loom/loom.hpp>

#include <gtest/gtest.h>

#include "core_support.hpp"

#include <array>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

using core_test::outcome;

namespace {

/// `n` enabled endpoints of one domain sharing a queue and the vector under test.
struct endpoints {
    core_test::loop_stack s;
    std::deque<loom::endpoint> more;
    void open(const std::string& provider, std::size_t n) {
        ASSERT_NO_FATAL_FAILURE(core_test::must_open_loop(provider, core_test::loop_options{}, s));
        while (more.size() + 1 < n) {
            auto e = loom::endpoint::create(s.domain, s.info);
            ASSERT_TRUE(e);
            ASSERT_TRUE(e->bind_cq(s.cq, loom::cq_bind::transmit | loom::cq_bind::recv));
            ASSERT_TRUE(e->bind_av(s.av));
            ASSERT_TRUE(e->enable());
            more.push_back(std::move(*e));
        }
    }
    auto name(std::size_t i) -> std::vector<std::byte> {
        return loom::to_raw((i == 0 ? s.ep : more[i - 1]).name().value());
    }
};

}  // namespace

TEST(AvBatch, binary_addresses_of_one_length_insert_together) {
    endpoints e;
    ASSERT_NO_FATAL_FAILURE(e.open("tcp", 3));
    auto fresh = loom::address_vector::create(e.s.domain);
    ASSERT_TRUE(fresh);
    std::vector<std::byte> packed;
    std::vector<std::vector<std::byte>> names;
    for (std::size_t i = 0; i < 3; ++i) {
        names.push_back(e.name(i));
        packed.insert(packed.end(), names.back().begin(), names.back().end());
    }
    const std::size_t size = names[0].size();
    std::array<loom::fabric_addr, 3> out{};
    auto n = fresh->insert_batch(packed, size, out);
    ASSERT_TRUE(n) << outcome(n.error());
    EXPECT_EQ(*n, 3u);
    for (std::size_t i = 0; i < 3; ++i) {
        ASSERT_NE(out[i], loom::fabric_addrs::not_available);
        EXPECT_TRUE(fresh->contains(out[i]));
        EXPECT_EQ(loom::to_raw(fresh->lookup(out[i]).value()), names[i]) << "address " << i;
    }

    // Refused before the provider is asked; nothing more is inserted.
    std::array<loom::fabric_addr, 2> two{};
    EXPECT_EQ(outcome(fresh->insert_batch(packed, 0, out)), "invalid_argument");
    EXPECT_EQ(outcome(fresh->insert_batch(std::span{packed}.first(packed.size() - 1), size, out)), "invalid_argument");
    EXPECT_EQ(outcome(fresh->insert_batch(packed, size, two)), "invalid_argument") << "one handle per address";
    std::vector<std::byte> malformed = packed;
    std::memset(malformed.data() + size, 0, size);  // the second address has no family
    EXPECT_EQ(outcome(fresh->insert_batch(malformed, size, out)), "invalid_argument");
    const char* strings[] = {"fi_shm://1:0:0"};
    std::array<loom::fabric_addr, 1> one{};
    EXPECT_EQ(outcome(fresh->insert_strings(strings, one)), "invalid_argument") << "not a string-format vector";
    loom::address_vector closed;
    EXPECT_EQ(outcome(closed.insert_batch(packed, size, out)), "bad_state");
}

TEST(AvBatch, string_addresses_of_different_lengths_insert_together) {
    endpoints e;
    ASSERT_NO_FATAL_FAILURE(e.open("shm", 11));
    auto fresh = loom::address_vector::create(e.s.domain);
    ASSERT_TRUE(fresh);
    const auto first = e.name(1), last = e.name(10);
    const std::string a(reinterpret_cast<const char*>(first.data())), b(reinterpret_cast<const char*>(last.data()));
    ASSERT_NE(a.size(), b.size()) << a << " " << b;
    const char* strings[] = {a.c_str(), b.c_str()};
    std::array<loom::fabric_addr, 2> out{};
    auto n = fresh->insert_strings(strings, out);
    ASSERT_TRUE(n) << outcome(n.error());
    EXPECT_EQ(*n, 2u);
    // The same as inserting them one by one (shm answers lookups without the "fi_shm://"
    // prefix, in both cases).
    auto single = loom::address_vector::create(e.s.domain);
    ASSERT_TRUE(single);
    const auto one_first = single->insert_raw(first), one_last = single->insert_raw(last);
    ASSERT_TRUE(one_first && one_last);
    EXPECT_EQ(loom::to_raw(fresh->lookup(out[0]).value()), loom::to_raw(single->lookup(*one_first).value()));
    EXPECT_EQ(loom::to_raw(fresh->lookup(out[1]).value()), loom::to_raw(single->lookup(*one_last).value()));
    EXPECT_NE(loom::to_raw(fresh->lookup(out[0]).value()), loom::to_raw(fresh->lookup(out[1]).value()));

    const char* with_null[] = {a.c_str(), nullptr};
    EXPECT_EQ(outcome(fresh->insert_strings(with_null, out)), "invalid_argument");
    EXPECT_EQ(outcome(fresh->insert_strings(std::span{strings}.first(1), out)), "invalid_argument");
    EXPECT_EQ(outcome(fresh->insert_batch(first, first.size(), std::span{out}.first(1))), "invalid_argument")
        << "string vectors take insert_strings";
}
