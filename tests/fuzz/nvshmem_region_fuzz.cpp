// An NVSHMEM memory handle as another PE sends it (decode_region); an accepted descriptor
// encodes stably.
#include "fuzz_support.hpp"

#include <loom/plugins/region_descriptor.hpp>

#include <optional>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace loom::plugins;
    auto dec = loom::fuzz::optional_of([](std::span<const std::byte> b) { return decode_region(b); });
    auto enc = [](const remote_view& v) -> std::optional<region_descriptor> { return encode_region(v); };
    loom::fuzz::require_stable(loom::fuzz::input(data, size), dec, enc, "region descriptor encoding is stable");
    return 0;
}
