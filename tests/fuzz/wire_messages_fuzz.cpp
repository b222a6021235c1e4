// Every message the plugin runtime reads from a peer: the first byte picks the decoder (control
// messages, the endpoint manager's batches and records, remote keys), the rest is the message.
// Accepted messages encode stably.
#include "fuzz_support.hpp"

#include <loom/plugins/agent_messages.hpp>
#include <loom/plugins/control_messages.hpp>
#include <loom/plugins/manager_messages.hpp>

#include <array>
#include <optional>
#include <vector>

namespace {

using namespace loom::plugins;
using bytes = std::span<const std::byte>;

/// Decoder and encoder of a message type written into a buffer of `capacity` bytes.
template <class Message, std::size_t capacity, class Decode>
void stable(bytes in, Decode decode, const char* what) {
    auto dec = loom::fuzz::optional_of(decode);
    auto enc = [](const Message& m) -> std::optional<std::vector<std::byte>> {
        std::vector<std::byte> out(capacity);
        auto n = encode(m, std::span<std::byte>{out});
        if (!n) return std::nullopt;
        out.resize(*n);
        return out;
    };
    loom::fuzz::require_stable(in, dec, enc, what);
}

void walk_batch(bytes in) {
    auto reader = batch_reader::open(in);
    if (!reader) return;
    int seen = 0;
    for (;;) {
        auto rec = reader->next();
        if (!rec || !*rec) break;
        loom::fuzz::require((*rec)->payload.data() >= in.data() &&
                                (*rec)->payload.data() + (*rec)->payload.size() <= in.data() + in.size(),
                            "a record lies inside its batch");
        ++seen;
        loom::fuzz::require(seen <= reader->records(), "no more records than the header counts");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const bytes in = loom::fuzz::input(data + 1, size - 1);
    switch (data[0] % 8) {
        case 0: stable<connect_message, 4096>(in, decode_connect, "connect encoding is stable"); break;
        case 1: stable<accept_message, 4096>(in, decode_accept, "accept encoding is stable"); break;
        case 2: stable<clear_to_send, cts_max_size>(in, decode_cts, "clear-to-send encoding is stable"); break;
        case 3: stable<liveness_message, liveness_size>(in, decode_liveness, "liveness encoding is stable"); break;
        case 4: {
            // A goodbye is encoded as a batch of one record: back through the batch reader.
            auto g = decode_goodbye(in);
            if (!g) break;
            std::array<std::byte, goodbye_batch_size> batch{};
            auto n = encode(*g, batch);
            loom::fuzz::require(n.has_value(), "an accepted goodbye encodes");
            auto reader = batch_reader::open(std::span{batch}.first(*n));
            loom::fuzz::require(reader.has_value(), "a goodbye's batch opens");
            auto rec = reader->next();
            loom::fuzz::require(rec && *rec, "a goodbye's batch holds its record");
            auto again = decode_goodbye((*rec)->payload);
            loom::fuzz::require(again && again->batches == g->batches && again->zero_copy == g->zero_copy,
                                "a goodbye survives its batch");
            break;
        }
        case 5: {
            if (auto h = decode_zero_copy_header(in))
                loom::fuzz::require(h->header.empty() || (h->header.data() >= in.data() &&
                                                          h->header.data() + h->header.size() <= in.data() + in.size()),
                                    "a zero-copy header points into its message");
            break;
        }
        case 6: {
            auto dec = loom::fuzz::optional_of([](bytes b) { return decode_remote_key(b); });
            auto enc = loom::fuzz::optional_of([](const memory_key& k) { return encode(k); });
            loom::fuzz::require_stable(in, dec, enc, "remote key encoding is stable");
            break;
        }
        case 7: walk_batch(in); break;
    }
    return 0;
}
