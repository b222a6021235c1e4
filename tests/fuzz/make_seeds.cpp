// Writes the checked-in seed corpora (tests/fuzz/corpus/<target>/): one valid input per message
// kind each target decodes, made with the project's own encoders. Run again after a wire format
// changes: loom-fuzz-seeds <corpus directory>.
#include <loom/address.hpp>
#include <loom/plugins/agent_messages.hpp>
#include <loom/plugins/control_messages.hpp>
#include <loom/plugins/manager_messages.hpp>
#include <loom/plugins/region_descriptor.hpp>
#include <loom/plugins/wire.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

using namespace loom::plugins;
namespace fs = std::filesystem;

fs::path root;
int written = 0;

/// Writes <root>/<target>/<name>: `selector` (when not negative) as the first byte, then `body`.
void seed(const char* target, const char* name, int selector, std::span<const std::byte> body) {
    const fs::path dir = root / target;
    fs::create_directories(dir);
    std::ofstream out(dir / name, std::ios::binary);
    if (selector >= 0) out.put(static_cast<char>(selector));
    out.write(reinterpret_cast<const char*>(body.data()), static_cast<std::streamsize>(body.size()));
    ++written;
}
template <class Container>
auto as_bytes(const Container& c) -> std::span<const std::byte> {
    return std::as_bytes(std::span{c.data(), c.size()});
}
template <class Message>
void seed_encoded(const char* target, const char* name, int selector, const Message& m, std::size_t capacity) {
    std::vector<std::byte> out(capacity);
    auto n = encode(m, std::span<std::byte>{out});
    if (!n) {
        std::fprintf(stderr, "cannot encode the %s seed\n", name);
        std::exit(1);
    }
    out.resize(*n);
    seed(target, name, selector, out);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: loom-fuzz-seeds CORPUS_DIRECTORY\n");
        return 2;
    }
    root = argv[1];
    const loom::address v4 = loom::ipv4_address::parse("127.0.0.1", 4242).value();
    const loom::address v6 = loom::ipv6_address::parse("::1", 4242).value();
    const std::string shm = "fi_shm://4242";
    const std::vector<std::byte> shm_bytes(reinterpret_cast<const std::byte*>(shm.c_str()),
                                           reinterpret_cast<const std::byte*>(shm.c_str()) + shm.size() + 1);
    const loom::address str = loom::opaque_address{loom::address_format::str, shm_bytes};

    seed("address", "sockaddr_in", static_cast<int>(loom::address_format::sockaddr_in), loom::to_raw(v4));
    seed("address", "sockaddr_in6", static_cast<int>(loom::address_format::sockaddr_in6), loom::to_raw(v6));
    seed("address", "sockaddr_ib", static_cast<int>(loom::address_format::sockaddr_ib),
         loom::to_raw(loom::address{loom::ib_socket_address{.pkey = 0xffff, .service_id = 7}}));
    seed("address", "str", static_cast<int>(loom::address_format::str), shm_bytes);
    seed("address", "efa", static_cast<int>(loom::address_format::efa), std::vector<std::byte>(32, std::byte{1}));

    seed("nccl_handle", "ipv4", -1, as_bytes(encode_handle({.channel_id = 7, .endpoint_address = v4}).value()));
    seed("nccl_handle", "str", -1, as_bytes(encode_handle({.channel_id = 8, .endpoint_address = str}).value()));

    seed_encoded("wire_messages", "connect", 0,
                 connect_message{.sender_channel = 1,
                                 .listen_channel = 2,
                                 .pid = 3,
                                 .host = 4,
                                 .sender_address = v4,
                                 .rails = {v6},
                                 .liveness = v4},
                 4096);
    seed_encoded("wire_messages", "accept", 1,
                 accept_message{.receiver_channel = 5, .sender_channel = 1, .pid = 6, .host = 4, .rails = {v4}}, 4096);
    clear_to_send cts{.target = {.channel = 1, .request = 2, .slot = 0}, .capacity = 4096, .rails = 2};
    cts.rail[0] = {0x1000, 0x22};
    cts.rail[1] = {0x2000, 0x33};
    seed_encoded("wire_messages", "cts", 2, cts, cts_max_size);
    seed_encoded("wire_messages", "liveness", 3, liveness_message{.kind = liveness_kind::pong, .sequence = 9},
                 liveness_size);
    // A goodbye travels as a batch of one record: the batch is one seed, its payload another.
    std::array<std::byte, goodbye_batch_size> bye_batch{};
    const auto bye_size = encode(goodbye{.batches = 3, .zero_copy = 1}, bye_batch).value();
    auto bye_reader = batch_reader::open(std::span{bye_batch}.first(bye_size)).value();
    seed("wire_messages", "goodbye", 4, bye_reader.next().value()->payload);
    seed("wire_messages", "goodbye_batch", 7, std::span{bye_batch}.first(bye_size));
    const std::array<std::byte, 5> user_header{std::byte{'h'}, std::byte{'e'}, std::byte{'a'}, std::byte{'d'},
                                               std::byte{'r'}};
    seed_encoded("wire_messages", "zero_copy_header", 5, zero_copy_header{.data_length = 65536, .header = user_header},
                 256);
    memory_key key{.length = 4096, .rails = 2};
    key.rail[0] = {0x10000, 0x44};
    key.rail[1] = {0x20000, 0x55};
    seed("wire_messages", "remote_key", 6, as_bytes(encode(key).value()));
    std::array<std::byte, 256> batch{};
    batch_writer w{batch};
    if (!w.append(notification_record, as_bytes(encode_notification("agent-a", "ready").value())) ||
        !w.append(2, user_header))
        return 1;
    seed("wire_messages", "batch", 7, w.finish());

    seed("nixl", "connection_info", 0,
         as_bytes(encode(connection_info{.agent = "agent-a",
                                         .address = encode_handle({.channel_id = 1, .endpoint_address = v4}).value()})
                      .value()));
    seed("nixl", "public_data", 1,
         as_bytes(encode(public_data{.address = 0x7000, .length = 4096, .key = encode(key).value()})));
    seed("nixl", "notification", 2, as_bytes(encode_notification("agent-a", "done").value()));

    seed("nvshmem_region", "two_rails", -1,
         as_bytes(encode_region(
             {.base = 0x7000, .length = 4096, .owner = 1, .key_bytes = encode(key).value(), .key = key})));
    std::printf("wrote %d seeds under %s\n", written, root.c_str());
    return 0;
}
