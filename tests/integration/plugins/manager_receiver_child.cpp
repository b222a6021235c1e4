// The receiver that endpoint_manager_peers_test.cpp kills: an endpoint manager in a process of
// its own, started with fork and exec so that it shares no provider state with the test
// process (shm names what a process opens after its pid; a forked child's would be its
// parent's). It opens a receive endpoint and registers 1 MiB for one-sided operations, writes
// the endpoint's address and then the region's key to the descriptor its argument names, and
// polls until it is killed (or 30 s pass).
#include <loom/plugins/endpoint_manager.hpp>

#include <unistd.h>

#include <charconv>
#include <cstring>
#include <span>
#include <vector>

namespace {

auto write_all(int fd, std::span<const std::byte> b) -> bool {
    return ::write(fd, b.data(), b.size()) == static_cast<ssize_t>(b.size());
}

}  // namespace

auto main(int argc, char** argv) -> int {
    namespace lp = loom::plugins;
    int fd = -1;
    if (argc != 2 || std::from_chars(argv[1], argv[1] + std::strlen(argv[1]), fd).ec != std::errc{}) return 2;
    ::alarm(30);
    auto m = lp::endpoint_manager::create({.on_event = [](const lp::event&) {}});
    if (!m) return 1;
    std::vector<std::byte> target(1 << 20);
    auto mh = (*m)->register_memory(target);
    auto in = (*m)->open_receive_endpoint({});
    const auto address = in ? (*m)->address_of(*in) : std::unexpected(in.error());
    const auto key = mh ? (*m)->remote_key_of(*mh) : std::unexpected(mh.error());
    if (!address || !key || !write_all(fd, *address) || !write_all(fd, *key)) return 1;
    ::close(fd);
    for (;;) (*m)->poll();  // until killed
}
