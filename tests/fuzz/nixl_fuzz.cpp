// What NIXL hands the backend from a remote agent: connection info, public (metadata) data and
// notification records. The first byte picks the decoder; accepted values encode stably.
#include "fuzz_support.hpp"

#include <loom/plugins/agent_messages.hpp>

#include <optional>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace loom::plugins;
    using bytes = std::span<const std::byte>;
    if (size == 0) return 0;
    const bytes in = loom::fuzz::input(data + 1, size - 1);
    using loom::fuzz::optional_of;
    switch (data[0] % 3) {
        case 0:
            loom::fuzz::require_stable(in, optional_of([](bytes b) { return decode_connection_info(b); }),
                                       optional_of([](const connection_info& i) { return encode(i); }),
                                       "connection info encoding is stable");
            break;
        case 1:
            loom::fuzz::require_stable(
                in, optional_of([](bytes b) { return decode_public_data(b); }),
                [](const public_data& p) { return std::optional<std::string>{encode(p)}; },
                "public data encoding is stable");
            break;
        case 2:
            loom::fuzz::require_stable(
                in, optional_of([](bytes b) { return decode_notification(b); }),
                optional_of([](const notification& n) { return encode_notification(n.agent, n.message); }),
                "notification encoding is stable");
            break;
    }
    return 0;
}
