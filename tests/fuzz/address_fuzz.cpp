// address_from_raw for every native format: the first byte picks the format, the rest are the
// bytes. An accepted address encodes back to bytes that decode to the same address.
#include "fuzz_support.hpp"

#include <loom/address.hpp>

#include <optional>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const auto format = static_cast<loom::address_format>(data[0] % 19);  // every format and one past
    const auto bytes = loom::fuzz::input(data + 1, size - 1);
    auto decode = [format](std::span<const std::byte> b) -> std::optional<loom::address> {
        auto a = loom::address_from_raw(format, b);
        if (!a) return std::nullopt;
        return std::move(*a);
    };
    auto encode = [](const loom::address& a) -> std::optional<std::vector<std::byte>> { return loom::to_raw(a); };
    if (auto a = decode(bytes)) {
        (void)loom::to_string(*a);
        const auto raw = loom::to_raw(*a);
        auto again = loom::address_from_raw(loom::native_format(*a), raw);
        loom::fuzz::require(again.has_value() && *again == *a, "an accepted address decodes again to itself");
    }
    loom::fuzz::require_stable(bytes, decode, encode, "address encoding is stable");
    return 0;
}
