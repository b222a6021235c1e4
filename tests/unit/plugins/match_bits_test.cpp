// Match bits and rendezvous immediate data: the fields are disjoint, cover 64 bits, and hold
// every value the pools can produce.
#include <loom/plugins/match_bits.hpp>

#include <gtest/gtest.h>

namespace lp = loom::plugins;
namespace mb = loom::plugins::match_bits;
namespace imm = loom::plugins::immediate;

namespace {

TEST(MatchBits, TagFieldsRoundTripAtTheirLimits) {
    for (auto kind : {lp::message_kind::data, lp::message_kind::rendezvous_request, lp::message_kind::control,
                      lp::message_kind::clear_to_send}) {
        for (std::uint32_t chan : {1U, 12345U, mb::max_channel_id}) {
            for (std::uint32_t seq : {0U, 1U, mb::sequence_mask}) {
                for (std::uint32_t user : {0U, 0x80000000U, 0xffffffffU}) {
                    const auto t = mb::make_tag(kind, chan, seq, user);
                    EXPECT_EQ(mb::kind_of(t), kind);
                    EXPECT_EQ(mb::channel_of(t), chan);
                    EXPECT_EQ(mb::sequence_of(t), seq);
                    EXPECT_EQ(mb::user_tag_of(t), user);
                }
            }
        }
    }
}

TEST(MatchBits, SequenceWrapsInsteadOfSpillingIntoTheChannel) {
    const auto t = mb::make_tag(lp::message_kind::data, 3, mb::sequence_mask + 1, 9);
    EXPECT_EQ(mb::sequence_of(t), 0U);
    EXPECT_EQ(mb::channel_of(t), 3U);
}

TEST(MatchBits, RendezvousIgnoreMaskJoinsDataAndRequestsOnly) {
    const auto data = mb::make_tag(lp::message_kind::data, 5, 6, 7);
    const auto rts = mb::make_tag(lp::message_kind::rendezvous_request, 5, 6, 7);
    const auto cts = mb::make_tag(lp::message_kind::clear_to_send, 5, 6, 7);
    const auto ctrl = mb::make_tag(lp::message_kind::control, 5, 6, 7);
    auto matches = [](std::uint64_t posted, std::uint64_t sent) {
        return (posted | mb::rendezvous_ignore) == (sent | mb::rendezvous_ignore);
    };
    EXPECT_TRUE(matches(data, rts));
    EXPECT_FALSE(matches(data, cts));
    EXPECT_FALSE(matches(data, ctrl));
}

TEST(Immediate, FieldsAreSizedFromThePools) {
    EXPECT_GE(1 << imm::request_bits, lp::recv_pool_size);
    EXPECT_GE(1 << imm::slot_bits, lp::max_slots);
    EXPECT_EQ(imm::channel_bits + imm::request_bits + imm::slot_bits + imm::length_bits, 64);
    EXPECT_GE(imm::length_mask, lp::max_rma_chunk);
}

TEST(Immediate, EveryTargetTheReceiverCanNameRoundTripsWithAnyLength) {
    for (std::uint32_t chan : {1U, mb::max_channel_id}) {
        for (std::uint32_t req = 0; req < static_cast<std::uint32_t>(lp::recv_pool_size); ++req) {
            for (std::uint32_t slot = 0; slot < static_cast<std::uint32_t>(lp::max_slots); ++slot) {
                const imm::write_target t{.channel = chan, .request = req, .slot = slot};
                for (std::uint64_t len :
                     {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{lp::max_rma_chunk}, imm::length_mask}) {
                    const auto v = imm::make_base(t) | len;
                    ASSERT_EQ(imm::target_of(v), t);
                    ASSERT_EQ(imm::length_of(v), len);
                    ASSERT_EQ(imm::base_of(v), imm::make_base(t));
                }
            }
        }
    }
}

}  // namespace
