// loom/plugins/match_bits.hpp — what the runtime puts in a tagged message's 64 match bits and
// in a rendezvous write's 64 bits of immediate data. Both layouts are derived from the pool
// sizes in limits.hpp; the static_asserts below refuse a pool that no longer fits its field.
//
// Tag:        63..62 kind | 61..44 channel id (of the side that receives) | 43..32 sequence
//             number per (channel, user tag), wrapping | 31..0 the user's tag
// Immediate:  63..46 receiving channel | 45..41 receive request | 40..38 slot | 37..0 length
//             (channel 0: a user's value in bits 45..0, from a one-sided write)
#pragma once

#include <loom/plugins/limits.hpp>

#include <bit>
#include <cstdint>

namespace loom::plugins {

/// What a tagged message is; the top bits of its tag.
enum class message_kind : std::uint64_t {
    data = 0,                ///< eager payload (or the user's data)
    rendezvous_request = 1,  ///< RTS: no payload, the size as immediate data
    control = 2,             ///< CONNECT / ACCEPT and later control messages
    clear_to_send = 3,       ///< CTS: where a rendezvous write goes
};

/// The layout of a tagged message's 64 match bits.
namespace match_bits {

/// Bits of the message kind.
inline constexpr int kind_bits = 2;
/// Bits of the receiving side's channel id.
inline constexpr int channel_bits = 18;
/// Bits of the sequence number.
inline constexpr int sequence_bits = 12;
/// Bits of the user's tag.
inline constexpr int user_tag_bits = 32;
static_assert(kind_bits + channel_bits + sequence_bits + user_tag_bits == 64);

/// Where the sequence number starts.
inline constexpr int sequence_shift = user_tag_bits;
/// Where the channel id starts.
inline constexpr int channel_shift = sequence_shift + sequence_bits;
/// Where the kind starts.
inline constexpr int kind_shift = channel_shift + channel_bits;

/// The largest channel id.
inline constexpr std::uint32_t max_channel_id = (std::uint32_t{1} << channel_bits) - 1;
/// Channel ids start here: 0 is never a channel (an RMA write's immediate data with channel 0
/// carries a user's value, see immediate::make_user_value).
inline constexpr std::uint32_t first_channel_id = 1;
/// Mask of the sequence number.
inline constexpr std::uint32_t sequence_mask = (std::uint32_t{1} << sequence_bits) - 1;

/// The ignore mask a receive for data posts so that it also takes a rendezvous request.
inline constexpr std::uint64_t rendezvous_ignore = std::uint64_t{1} << kind_shift;
static_assert(
    (static_cast<std::uint64_t>(message_kind::data) ^ static_cast<std::uint64_t>(message_kind::rendezvous_request))
        << kind_shift ==
    rendezvous_ignore);

/// The tag of a message of `kind` to `channel` with `sequence` and the user's tag.
[[nodiscard]] constexpr auto make_tag(message_kind kind, std::uint32_t channel, std::uint32_t sequence,
                                      std::uint32_t user_tag) noexcept -> std::uint64_t {
    return (static_cast<std::uint64_t>(kind) << kind_shift) |
           (std::uint64_t{channel & max_channel_id} << channel_shift) |
           (std::uint64_t{sequence & sequence_mask} << sequence_shift) | user_tag;
}
/// The message kind of `tag`.
[[nodiscard]] constexpr auto kind_of(std::uint64_t tag) noexcept -> message_kind {
    return static_cast<message_kind>(tag >> kind_shift);
}
/// The channel id of `tag`.
[[nodiscard]] constexpr auto channel_of(std::uint64_t tag) noexcept -> std::uint32_t {
    return static_cast<std::uint32_t>(tag >> channel_shift) & max_channel_id;
}
/// The sequence number of `tag`.
[[nodiscard]] constexpr auto sequence_of(std::uint64_t tag) noexcept -> std::uint32_t {
    return static_cast<std::uint32_t>(tag >> sequence_shift) & sequence_mask;
}
/// The user's tag in `tag`.
[[nodiscard]] constexpr auto user_tag_of(std::uint64_t tag) noexcept -> std::uint32_t {
    return static_cast<std::uint32_t>(tag);
}

}  // namespace match_bits

/// The layout of a rendezvous write's 64 bits of immediate data.
namespace immediate {

/// Bits of the receiving channel (as in tags).
inline constexpr int channel_bits = match_bits::channel_bits;
/// Bits of the receive request's index in its pool.
inline constexpr int request_bits = std::bit_width(static_cast<unsigned>(recv_pool_size - 1));
/// Bits of the sub-receive of a grouped receive.
inline constexpr int slot_bits = std::bit_width(static_cast<unsigned>(max_slots - 1));
/// Bits of the write's length.
inline constexpr int length_bits = 64 - channel_bits - request_bits - slot_bits;
static_assert((1U << request_bits) >= static_cast<unsigned>(recv_pool_size), "receive pool outgrew its field");
static_assert((1U << slot_bits) >= static_cast<unsigned>(max_slots), "grouped receive outgrew its field");

/// Where the slot starts.
inline constexpr int slot_shift = length_bits;
/// Where the request index starts.
inline constexpr int request_shift = slot_shift + slot_bits;
/// Where the channel starts.
inline constexpr int channel_shift = request_shift + request_bits;

/// Mask of the length (also the largest CTS capacity).
inline constexpr std::uint64_t length_mask = (std::uint64_t{1} << length_bits) - 1;
static_assert(max_rma_chunk <= length_mask, "an RMA chunk's length must fit the immediate data");

/// The receive a rendezvous write lands in.
struct write_target {
    std::uint32_t channel{0};  ///< the receiving channel
    std::uint32_t request{0};  ///< index into the channel's receive pool
    std::uint32_t slot{0};     ///< sub-receive of a grouped receive
    /// Same receive.
    friend constexpr auto operator==(const write_target&, const write_target&) -> bool = default;
};

/// The immediate data with the length field zero (the CTS carries it; each write adds its length).
[[nodiscard]] constexpr auto make_base(write_target t) noexcept -> std::uint64_t {
    return (std::uint64_t{t.channel & match_bits::max_channel_id} << channel_shift) |
           (std::uint64_t{t.request & ((1U << request_bits) - 1)} << request_shift) |
           (std::uint64_t{t.slot & ((1U << slot_bits) - 1)} << slot_shift);
}
/// The receive the immediate data `imm` routes to.
[[nodiscard]] constexpr auto target_of(std::uint64_t imm) noexcept -> write_target {
    return {.channel = static_cast<std::uint32_t>(imm >> channel_shift) & match_bits::max_channel_id,
            .request = static_cast<std::uint32_t>(imm >> request_shift) & ((1U << request_bits) - 1),
            .slot = static_cast<std::uint32_t>(imm >> slot_shift) & ((1U << slot_bits) - 1)};
}
/// A user's immediate data: channel 0, the value in the bits below the channel field.
inline constexpr int user_value_bits = 64 - channel_bits;
/// The largest user value.
inline constexpr std::uint64_t max_user_value = (std::uint64_t{1} << user_value_bits) - 1;
/// Immediate data carrying user value `v` (truncated to max_user_value).
[[nodiscard]] constexpr auto make_user_value(std::uint64_t v) noexcept -> std::uint64_t { return v & max_user_value; }
/// True when `imm` carries a user value (channel 0).
[[nodiscard]] constexpr auto is_user_value(std::uint64_t imm) noexcept -> bool { return (imm >> channel_shift) == 0; }
/// The user value `imm` carries.
[[nodiscard]] constexpr auto user_value_of(std::uint64_t imm) noexcept -> std::uint64_t { return imm & max_user_value; }
static_assert(channel_shift == user_value_bits);

/// The write length in `imm`.
[[nodiscard]] constexpr auto length_of(std::uint64_t imm) noexcept -> std::uint64_t { return imm & length_mask; }
/// `imm` with the length cleared.
[[nodiscard]] constexpr auto base_of(std::uint64_t imm) noexcept -> std::uint64_t { return imm & ~length_mask; }

}  // namespace immediate
}  // namespace loom::plugins
