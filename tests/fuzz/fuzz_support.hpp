// tests/fuzz/fuzz_support.hpp — what every libFuzzer target shares: the input as bytes, and a
// check that stops the run (a finding) when a property of the decoder fails.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <span>
#include <type_traits>

namespace loom::fuzz {

[[nodiscard]] inline auto input(const std::uint8_t* data, std::size_t size) -> std::span<const std::byte> {
    return {reinterpret_cast<const std::byte*>(data), size};
}

/// A property every accepted input must keep; aborts (libFuzzer records the input) otherwise.
inline void require(bool holds, const char* what) {
    if (holds) return;
    std::fprintf(stderr, "fuzz property failed: %s\n", what);
    std::abort();
}

/// `fn` (returning a loom::result) as a function returning std::optional, for require_stable.
template <class Fn>
[[nodiscard]] auto optional_of(Fn fn) {
    return [fn](const auto& arg) {
        auto r = fn(arg);
        using value = std::remove_cvref_t<decltype(*r)>;
        return r ? std::optional<value>{std::move(*r)} : std::nullopt;
    };
}

/// Decoded, encoded again, decoded again and encoded again: the two encodings agree (the
/// decoder keeps everything the encoder writes, and nothing it accepts encodes two ways).
template <class Decode, class Encode>
void require_stable(std::span<const std::byte> in, Decode decode, Encode encode, const char* what) {
    auto first = decode(in);
    if (!first) return;
    auto once = encode(*first);
    if (!once) return;  // accepted values the encoder refuses are not the decoder's fault
    auto second = decode(std::as_bytes(std::span{once->data(), once->size()}));
    require(second.has_value(), what);
    auto twice = encode(*second);
    require(twice.has_value() && *twice == *once, what);
}

}  // namespace loom::fuzz
