// loom/plugins/limits.hpp — the runtime's fixed sizes. Pools are fixed so that the data path
// allocates nothing; the match bits and immediate data (match_bits.hpp) are derived from these
// numbers, so raising one cannot silently overflow a field.
#pragma once

#include <cstddef>
#include <cstdint>

namespace loom::plugins {

inline constexpr int max_slots = 8;                    ///< sub-receives per grouped receive
inline constexpr int recv_pool_size = 32;              ///< receive requests per receive channel
inline constexpr int send_pool_size = 32 * max_slots;  ///< send requests per send channel
inline constexpr std::size_t scratch_size = 64;        ///< receives smaller than this land in scratch first
inline constexpr int tag_table_size = 128;             ///< distinct user tags per channel
inline constexpr int max_rails = 8;                    ///< NICs fused into one virtual device
inline constexpr std::size_t stripe_min = 65536;       ///< a rendezvous stripes only when every rail gets this much
inline constexpr std::size_t control_capacity = 1024;  ///< largest CONNECT / ACCEPT message
inline constexpr std::size_t max_rma_chunk = std::size_t{1} << 30;  ///< largest single RMA write

}  // namespace loom::plugins
