// The NCCL listen handle as a peer sends it (decode_handle); an accepted handle encodes stably.
#include "fuzz_support.hpp"

#include <loom/plugins/wire.hpp>

#include <optional>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace loom::plugins;
    loom::fuzz::require_stable(loom::fuzz::input(data, size),
                               loom::fuzz::optional_of([](std::span<const std::byte> b) { return decode_handle(b); }),
                               loom::fuzz::optional_of([](const listen_info& i) { return encode_handle(i); }),
                               "listen handle encoding is stable");
    return 0;
}
