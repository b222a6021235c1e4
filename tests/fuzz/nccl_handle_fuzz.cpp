// The NCCL listen handle as a peer sends it (decode_handle); an accepted handle encodes stably.
#include "fuzz_support.hpp"

#include <loom/plugins/wire.hpp>

#include <optional>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace loom::plugins;
    auto decode = [](std::span<const std::byte> b) -> std::optional<listen_info> {
        auto r = decode_handle(b);
        if (!r) return std::nullopt;
        return *r;
    };
    auto encode = [](const listen_info& i) -> std::optional<handle_bytes> {
        auto r = encode_handle(i);
        if (!r) return std::nullopt;
        return *r;
    };
    loom::fuzz::require_stable(loom::fuzz::input(data, size), decode, encode, "listen handle encoding is stable");
    return 0;
}
