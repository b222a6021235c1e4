// loom/plugins/manager_messages.hpp — what the endpoint manager puts on the wire, each an
// encode/decode pair validated on decode (little-endian, fixed offsets, static_asserts in
// manager_messages.cpp):
//
// Batch (a buffered send endpoint's network message: several records coalesced):
//   0 u32 magic "BAT1"  4 u16 version  6 u16 record count  8 u32 total bytes  12 u32 0
//  16 records, each: u32 payload length, u16 kind, u16 0, payload, zero padding to 8 bytes
// Zero-copy header (sent before each zero-copy message, from a header slot):
//   0 u32 magic "ZCH1"  4 u16 version  6 u16 header length  8 u64 data length  16 header bytes
// Remote key (what a peer needs for one-sided operations on a registration):
//   0 u32 magic "RKEY"  4 u16 version 2  6 u16 rails  8 u64 length
//  16 per rail of max_rails: u64 base, u64 key (zero beyond `rails`)
// 144 u32 checksum: FNV-1a over bytes [0, 144)  148 u32 0
#pragma once

#include <loom/error.hpp>
#include <loom/plugins/memory_key.hpp>
#include <loom/plugins/wire.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace loom::plugins {

/// Bytes of a batch's header.
inline constexpr std::size_t batch_header_size = 16;
/// Bytes of a record's header.
inline constexpr std::size_t record_header_size = 8;
inline constexpr std::size_t max_header_bytes = 48;  ///< user header of a zero-copy message
/// Bytes of a zero-copy header with the largest user header.
inline constexpr std::size_t zero_copy_header_size = 16 + max_header_bytes;
/// Bytes of an encoded remote key.
inline constexpr std::size_t remote_key_size = 16 + 16 * max_rails + 8;

/// An encoded remote key.
using remote_key_bytes = std::array<std::byte, remote_key_size>;

/// Bytes a record of `payload` bytes takes in a batch (header and padding included).
[[nodiscard]] constexpr auto record_size(std::size_t payload) noexcept -> std::size_t {
    return record_header_size + (payload + 7) / 8 * 8;
}

/// What a batch record is. The user's messages are kind 0; the runtime's own components
/// (a transfer's notifications, staged atomics) take kinds from `first_component_kind` to
/// `last_component_kind`; the manager keeps the top kinds for itself.
enum class record_kind : std::uint16_t {
    message = 0,       ///< a user's message
    goodbye = 0xffff,  ///< a send endpoint closes: how many network messages it sent before (goodbye)
};
/// The first record kind the runtime's components may use.
inline constexpr std::uint16_t first_component_kind = 1;
/// The last record kind the runtime's components may use.
inline constexpr std::uint16_t last_component_kind = 0xfeff;

/// A closing send endpoint's last record: the batches and zero-copy messages it sent, so that
/// the receiver closes the connection only once every one of them has been handled.
struct goodbye {
    std::uint64_t batches{0};    ///< batches it sent before
    std::uint64_t zero_copy{0};  ///< zero-copy messages it sent before
};
/// Bytes of a goodbye record's payload.
inline constexpr std::size_t goodbye_size = 16;
/// A whole batch holding one goodbye record.
inline constexpr std::size_t goodbye_batch_size = batch_header_size + record_header_size + goodbye_size;
/// Writes a whole batch holding the goodbye record into `out`; its length, or no_space.
[[nodiscard]] auto encode(const goodbye& g, std::span<std::byte> out) -> result<std::size_t>;
/// Decodes a goodbye record's payload; protocol_error for another length.
[[nodiscard]] auto decode_goodbye(std::span<const std::byte> payload) -> result<goodbye>;

/// Fills a buffer with records; finish() writes the batch header.
class batch_writer {
public:
    /// `buffer` holds at least batch_header_size bytes.
    explicit batch_writer(std::span<std::byte> buffer) noexcept : buf_(buffer) {}
    /// false (nothing written) when the record does not fit or the count is at its maximum.
    [[nodiscard]] auto append(std::uint16_t kind, std::span<const std::byte> payload) noexcept -> bool;
    /// True when no record was appended.
    [[nodiscard]] auto empty() const noexcept -> bool { return count_ == 0; }
    /// Records appended.
    [[nodiscard]] auto records() const noexcept -> int { return count_; }
    /// The batch, header written (appending more and finishing again is allowed).
    [[nodiscard]] auto finish() noexcept -> std::span<const std::byte>;
    /// Empty again, for the buffer's next batch.
    void reset() noexcept {
        used_ = batch_header_size;
        count_ = 0;
    }
    /// Whether a record of `payload` bytes fits a batch buffer of `capacity` bytes at all.
    [[nodiscard]] static constexpr auto fits(std::size_t payload, std::size_t capacity) noexcept -> bool {
        return capacity >= batch_header_size && payload <= capacity &&
               record_size(payload) <= capacity - batch_header_size;
    }

private:
    std::span<std::byte> buf_;
    std::size_t used_{batch_header_size};
    int count_{0};
};

/// One record of a received batch.
struct batch_record {
    std::uint16_t kind{0};                 ///< what the record is (record_kind, or a component's kind)
    std::span<const std::byte> payload{};  ///< its payload, inside the received bytes
};

/// Walks a received batch. open() checks the header against the bytes received; next()
/// checks every record (protocol_error for a length beyond the batch, nonzero padding fields,
/// or a count that disagrees with the records found).
class batch_reader {
public:
    /// A reader of `received`; protocol_error for a malformed header or a length beyond the bytes.
    [[nodiscard]] static auto open(std::span<const std::byte> received) -> result<batch_reader>;
    /// The next record; nullopt after the last one.
    [[nodiscard]] auto next() -> result<std::optional<batch_record>>;
    /// Records the header announces.
    [[nodiscard]] auto records() const noexcept -> int { return count_; }

private:
    batch_reader(std::span<const std::byte> b, int count) noexcept : buf_(b), count_(count) {}
    std::span<const std::byte> buf_;
    std::size_t at_{batch_header_size};
    int count_{0};
    int seen_{0};
};

/// The header of a zero-copy message: how many data bytes follow and the user's header.
struct zero_copy_header {
    std::uint64_t data_length{0};         ///< bytes of data that follow
    std::span<const std::byte> header{};  ///< at most max_header_bytes (decode: into the input)
};
/// Writes the header into `out`; its length; invalid_argument for a user header over max_header_bytes, no_space for a
/// short `out`.
[[nodiscard]] auto encode(const zero_copy_header& h, std::span<std::byte> out) -> result<std::size_t>;
/// Decodes a zero-copy header; protocol_error for anything malformed.
[[nodiscard]] auto decode_zero_copy_header(std::span<const std::byte> in) -> result<zero_copy_header>;

/// Encodes a registration's remote key; invalid_argument for a rail count out of range.
[[nodiscard]] auto encode(const memory_key& k) -> result<remote_key_bytes>;
/// protocol_error for malformed bytes.
[[nodiscard]] auto decode_remote_key(std::span<const std::byte> in) -> result<memory_key>;

}  // namespace loom::plugins
