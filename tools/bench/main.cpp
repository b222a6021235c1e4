// loom-bench: latency and bandwidth through the raw libfabric C API, the loom API and the NCCL
// net plugin's ABI — same provider, same sizes, same buffers, repetitions interleaved across
// the paths — in one table (nccl-tests style), JSON/CSV and an SVG plot. See --help.
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "launch.hpp"
#include "options.hpp"
#include "path.hpp"
#include "rank.hpp"

namespace loom::bench {

// ---------------------------------------------------------------- channel
auto socket_channel::send(const void* p, std::size_t n) -> bool {
    for (auto* c = static_cast<const char*>(p); n > 0;) {
        const auto w = ::write(fd_, c, n);
        if (w <= 0) return false;
        c += w;
        n -= static_cast<std::size_t>(w);
    }
    return true;
}
auto socket_channel::recv(void* p, std::size_t n) -> bool {
    for (auto* c = static_cast<char*>(p); n > 0;) {
        const auto r = ::read(fd_, c, n);
        if (r <= 0) return false;
        c += r;
        n -= static_cast<std::size_t>(r);
    }
    return true;
}
auto channel::send_blob(const std::vector<std::byte>& b) -> bool {
    const auto n = static_cast<std::uint32_t>(b.size());
    return send(&n, sizeof n) && send(b.data(), b.size());
}
auto channel::recv_blob(std::vector<std::byte>& b) -> bool {
    std::uint32_t n = 0;
    if (!recv(&n, sizeof n) || n > (1U << 20)) return false;
    b.resize(n);
    return recv(b.data(), n);
}
auto socket_channel::barrier() -> bool {
    char c = 'b';
    return send(&c, 1) && recv(&c, 1) && c == 'b';
}

}  // namespace loom::bench

int main(int argc, char** argv) {
    using namespace loom::bench;
    options o;
    if (const int rc = parse_args(argc, argv, o); rc >= 0) return rc;
    // The plugin reads its provider from the environment: make it the one benchmarked.
    ::setenv("LOOM_PROVIDER", o.provider.c_str(), 1);
    const bool network = o.provider.find("shm") == std::string::npos;
    if (network && o.iface.empty()) o.iface = "lo";
    if (!o.iface.empty()) ::setenv("LOOM_IFACE", o.iface.c_str(), 1);
    ::signal(SIGPIPE, SIG_IGN);

    // Under mpirun every process is one rank: MPI gives rank and size and carries the channel.
    // Else (or with --local / --launcher local) fork the two ranks here over a socketpair.
    const bool mpi =
        o.launcher == options::launch::mpi || (o.launcher == options::launch::automatic && started_by_mpirun());
    if (mpi) {
        if (!mpi_available() && o.launcher == options::launch::automatic)
            std::fprintf(stderr, "loom-bench: started by mpirun (OMPI_COMM_WORLD_SIZE is set)\n");
        return run_mpi(argc, argv, [&o](channel& ch, int rank, int size, int pair) {
            const int rc = run_rank(o, ch, rank, size, "mpi", pair);
            remove_nixl_plugin_dir();
            return rc;
        });
    }

    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        std::perror("loom-bench: socketpair");
        return 1;
    }
    std::fflush(nullptr);
    const pid_t child = ::fork();
    if (child < 0) {
        std::perror("loom-bench: fork");
        return 1;
    }
    if (child == 0) {
        ::close(sv[0]);
        socket_channel ch(sv[1]);
        const int rc = run_rank(o, ch, 1, o.ranks, "local");
        remove_nixl_plugin_dir();
        std::fflush(nullptr);
        ::_exit(rc);
    }
    ::close(sv[1]);
    socket_channel ch(sv[0]);
    const int rc = run_rank(o, ch, 0, o.ranks, "local");
    remove_nixl_plugin_dir();
    ::close(sv[0]);
    int st = 0;
    ::waitpid(child, &st, 0);
    const int child_rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    if (child_rc != 0 && rc == 0) std::fprintf(stderr, "loom-bench: rank 1 exited with status %d\n", child_rc);
    // The NIXL wheel's UCX and libfabric bring two libnl-route copies whose destructors crash
    // at exit (rtnl_tc_unregister): once the results are out, end without them.
    if (std::find(o.paths.begin(), o.paths.end(), "nixl-ucx") != o.paths.end()) {
        std::fflush(nullptr);
        ::_exit(rc != 0 ? rc : child_rc);
    }
    return rc != 0 ? rc : child_rc;
}
