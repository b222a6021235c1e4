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
    switch (data[0] % 3) {
        case 0: {
            auto dec = [](bytes b) -> std::optional<connection_info> {
                auto r = decode_connection_info(b);
                if (!r) return std::nullopt;
                return std::move(*r);
            };
            auto enc = [](const connection_info& i) -> std::optional<std::string> {
                auto r = encode(i);
                if (!r) return std::nullopt;
                return std::move(*r);
            };
            loom::fuzz::require_stable(in, dec, enc, "connection info encoding is stable");
            break;
        }
        case 1: {
            auto dec = [](bytes b) -> std::optional<public_data> {
                auto r = decode_public_data(b);
                if (!r) return std::nullopt;
                return *r;
            };
            auto enc = [](const public_data& p) -> std::optional<std::string> { return encode(p); };
            loom::fuzz::require_stable(in, dec, enc, "public data encoding is stable");
            break;
        }
        case 2: {
            auto dec = [](bytes b) -> std::optional<notification> {
                auto r = decode_notification(b);
                if (!r) return std::nullopt;
                return std::move(*r);
            };
            auto enc = [](const notification& n) -> std::optional<std::string> {
                auto r = encode_notification(n.agent, n.message);
                if (!r) return std::nullopt;
                return std::move(*r);
            };
            loom::fuzz::require_stable(in, dec, enc, "notification encoding is stable");
            break;
        }
    }
    return 0;
}
