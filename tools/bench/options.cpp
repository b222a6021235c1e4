// tools/bench/options.cpp — loom-bench's usage text and command-line parsing.
#include "options.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "path.hpp"

namespace loom::bench {
namespace {

const char* const usage_text = R"(usage: loom-bench [options]

Measures the same transfers through several paths over one libfabric provider, repetitions
interleaved (raw, loom, nccl, then the paths again in another order: every path runs equally
often in every place and after every other path), and reports median, spread (MAD %), the
ratio of every path to raw and the ratio's 95 % interval.

  --paths LIST       comma list of raw, loom, sender, asio, nccl, raw2, nccl2, nixl, nixl-ucx, nvshmem
                     (default raw,loom,nccl)
                       raw   plain libfabric C calls written for the benchmark (the floor)
                       raw2  a second, separate instance of raw (own fabric, domain and
                             endpoint): the A/A control. Its ratio to raw is the machine's
                             noise floor; a path's ratio means little closer to 1 than that.
                       loom  the loom core API
                       sender  every operation a loom::execution sender (poll_completions)
                       asio  every operation a loom::asio::endpoint operation with a
                             handler, run by io_context::run_one (fabric_service polling)
                       nccl  the built libnccl-net-loom.so driven through ncclNetPlugin_v12
                       nccl2 a second NCCL plugin (--nccl2-plugin), e.g. an older build,
                             measured interleaved with nccl: an A/B run (the same plugin
                             by default: an A/A control of the plugin path)
                       nixl  the built libplugin_LOOM.so inside the real NIXL agent (its C
                             API, libnixl_capi.so from the NIXL wheel): rma_write and
                             rma_read as prepared WRITE / READ requests, one per window slot
                       nixl-ucx  the same through NIXL's own UCX backend (UCX picks its
                             transports; the provider applies to the other paths only)
                       nvshmem  the built nvshmem_transport_libfabric.so.4 through its host
                             ops, as NVSHMEM's proxy drives it: rma_write and rma_read as
                             non-blocking put/get (--window, then quiet), atomic_fadd as
                             fetch-adds
  --ops LIST         comma list of (default pingpong,stream):
                       pingpong           tagged ping-pong, one-way latency (half round trip)
                       pingpong_untagged  untagged ping-pong (raw and loom; NCCL's ABI has none)
                       stream             streaming bandwidth, --window messages in flight,
                                          then an acknowledgement
                       rma_write          RMA write bandwidth: --window fi_write into the peer's
                                          registered buffer in flight (raw and loom)
                       rma_read           RMA read bandwidth, the same with fi_read (raw, loom)
                       atomic_fadd        uint64 fetch-add rate at the peer, --window in flight
                                          (raw and loom; one point, size 8; skipped where the
                                          provider has no atomics, e.g. tcp)
                       msgrate            small-message rate: --window tagged sends then an
                                          acknowledgement, sizes up to 4K only (all paths)
                     FI_RMA / FI_ATOMIC are asked of the provider only when an RMA / atomic
                     operation is listed; the NCCL ABI has neither (nccl is skipped there).
  --provider P       libfabric provider: shm (default), tcp, "tcp;ofi_rxm", ... (sockets is
                     refused: its progress threads starve on few cores)
  --iface NAME       domain to use (default lo for network providers); also LOOM_IFACE for
                     the plugin
  --ep-type rdm      endpoint type (only rdm is implemented)
  --threading MODEL  threading model asked of the provider by the raw, loom, sender and asio
                     paths: safe, domain or completion (default: the provider's choice, which
                     is safe here). Under domain and completion the benchmark's one thread per
                     rank is all the serialization they require: loom's completion registry
                     then takes no lock, and the asio path's io_context is created with
                     ASIO_CONCURRENCY_HINT_UNSAFE. Refused with the plugin paths (their hosts
                     choose).
  --sizes LIST       e.g. 8,4K,1M or a power-of-two range 8:64M (default 8:64M)
  --reps N           interleaved repetitions per point and round (default 5)
  --rounds N         open every path N times, one after the other, and measure every point
                     in each (default 1): each round's endpoints, queues and provider memory
                     land at new places and the paths are opened in a rotated order, so what
                     a single instance gains or loses by placement is spread over the paths
                     (on shm two instances of raw differ by up to 20% at some sizes). The
                     statistics pool all rounds x reps samples; the ratio is the median of
                     the paired (same round, same repetition) ratios.
  --iters N          timed iterations per measurement at every size (default: scaled by size)
  --budget BYTES     payload bytes one measurement aims to move when scaling (default 16M)
  --window N         requests in flight for stream, rma_*, atomic_fadd, msgrate: 1..30 (default 16)
  --local N          fork N ranks on this machine (the default launcher; N must be 2)
  --launcher L       local (fork, as --local 2) or mpi (MPI_Init; rank and size from MPI,
                     addresses, barriers and results exchanged through MPI; an even number
                     of ranks: rank r pairs with rank r + size/2 and all pairs measure at
                     once). Default: mpi when started by Open MPI's mpirun
                     (OMPI_COMM_WORLD_SIZE is set), else local. Under mpi rank 0 prints its
                     pair's table and writes the files; with several pairs it adds what all
                     pairs did together (sum of bandwidths or rates; latency: the slowest
                     pair's median), from every pair's medians.
  --nccl-plugin PATH plugin to load (default: the one built with this tool)
  --nccl2-plugin PATH plugin the nccl2 path loads (default: the --nccl-plugin one). Both
                     are loaded into one process; they share its libloom.so.0
  --nixl-capi PATH   NIXL's C API library (default: the wheel scripts/setup installs)
  --nixl-plugin PATH the LOOM backend the nixl path loads (default: the one built here)
  --nvshmem-transport PATH  the transport the nvshmem path loads (default: the major-4 one
                     built here)
  --json FILE        write results as JSON ("-": stdout, the table then goes to stderr)
  --csv FILE         write results as CSV ("-": stdout)
  --plot FILE.svg    draw latency and bandwidth against size, one series per path, log axes
  --quiet            no progress line on stderr
  -h, --help         this text

Every measurement runs warm-up iterations first. The last repetition of every path at every
size clears the receive buffer first and checks every received byte afterwards (RMA write: the
target's buffer; RMA read: what the initiator read; fetch-add: the target's counter equals the
number of adds and the last window fetched the values before it), and every receive
completion's length is checked: wrong bytes fail the run (exit status 3).
Under mpirun (Open MPI; in a container as root, e.g.):
  mpirun --allow-run-as-root --oversubscribe -np 2 --bind-to none --mca pml ob1 \
         --mca btl self,vader,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo \
         loom-bench --provider shm ...
(pml ob1 with these BTLs keeps Open MPI itself off libfabric.)
shm needs both ranks on one node; tcp/"tcp;ofi_rxm" across nodes want --iface NAME.
Not implemented yet: the nvshmem path (its plugin does not exist yet).
)";

auto split(std::string_view s) -> std::vector<std::string> {
    std::vector<std::string> out;
    std::size_t start = 0;
    for (;;) {
        const auto comma = s.find(',', start);
        out.emplace_back(s.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return out;
}

}  // namespace

auto parse_args(int argc, char** argv, options& o) -> int {
    auto bad = [](const std::string& what) {
        std::fprintf(stderr, "loom-bench: %s (see --help)\n", what.c_str());
        return 2;
    };
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
        auto int_value = [&](int lo, int hi, int& out) -> bool {
            const char* v = value();
            if (v == nullptr) return false;
            char* end = nullptr;
            const long n = std::strtol(v, &end, 10);
            if (*end != '\0' || n < lo || n > hi) return false;
            out = static_cast<int>(n);
            return true;
        };
        if (a == "-h" || a == "--help") {
            std::fputs(usage_text, stdout);
            return 0;
        }
        if (a == "--paths") {
            const char* v = value();
            if (v == nullptr) return bad("--paths needs a list");
            o.paths = split(v);
            for (const auto& p : o.paths)
                if (p != "raw" && p != "raw2" && p != "loom" && p != "sender" && p != "asio" && p != "nccl" &&
                    p != "nccl2" && p != "nixl" && p != "nixl-ucx" && p != "nvshmem")
                    return bad("unknown path '" + p + "'");
        } else if (a == "--ops") {
            const char* v = value();
            if (v == nullptr) return bad("--ops needs a list");
            o.ops.clear();
            for (const auto& s : split(v)) {
                const auto op = parse_operation(s);
                if (!op) {
                    if (s == "rma") return bad("operation 'rma': say rma_write or rma_read");
                    if (s == "atomic") return bad("operation 'atomic': say atomic_fadd");
                    return bad("unknown operation '" + s + "'");
                }
                o.ops.push_back(*op);
            }
        } else if (a == "--provider" || a == "-p") {
            const char* v = value();
            if (v == nullptr) return bad("--provider needs a name");
            o.provider = v;
        } else if (a == "--iface") {
            const char* v = value();
            if (v == nullptr) return bad("--iface needs a name");
            o.iface = v;
        } else if (a == "--threading") {
            const char* v = value();
            const std::string_view t = v == nullptr ? std::string_view{} : std::string_view{v};
            if (t == "safe")
                o.threading = loom::threading_mode::safe;
            else if (t == "domain")
                o.threading = loom::threading_mode::domain;
            else if (t == "completion")
                o.threading = loom::threading_mode::completion;
            else
                return bad("--threading needs safe, domain or completion");
        } else if (a == "--ep-type") {
            const char* v = value();
            if (v == nullptr || std::string_view(v) != "rdm") return bad("--ep-type: only rdm is implemented");
        } else if (a == "--sizes") {
            const char* v = value();
            if (v == nullptr) return bad("--sizes needs a list");
            auto s = parse_sizes(v);
            if (!s) return bad(s.error());
            o.sizes = *s;
        } else if (a == "--reps") {
            if (!int_value(1, 1000, o.reps)) return bad("--reps wants 1..1000");
        } else if (a == "--rounds") {
            if (!int_value(1, 1000, o.rounds)) return bad("--rounds wants 1..1000");
        } else if (a == "--iters") {
            if (!int_value(1, 10000000, o.sched.fixed_iterations)) return bad("--iters wants a positive count");
        } else if (a == "--budget") {
            const char* v = value();
            const auto b = v != nullptr ? parse_size(v) : std::nullopt;
            if (!b || *b == 0) return bad("--budget wants a size");
            o.sched.byte_budget = *b;
        } else if (a == "--window") {
            if (!int_value(1, max_window, o.sched.window))
                return bad("--window wants 1.." + std::to_string(max_window));
        } else if (a == "--local") {
            if (!int_value(2, 2, o.ranks)) return bad("--local: only 2 ranks are supported");
            o.launcher = options::launch::local;
        } else if (a == "--launcher") {
            const char* v = value();
            const std::string_view l = v != nullptr ? v : "";
            if (l == "local")
                o.launcher = options::launch::local;
            else if (l == "mpi")
                o.launcher = options::launch::mpi;
            else
                return bad("--launcher wants local or mpi");
        } else if (a == "--nccl-plugin") {
            const char* v = value();
            if (v == nullptr) return bad("--nccl-plugin needs a path");
            o.nccl_plugin = v;
        } else if (a == "--nixl-capi") {
            const char* v = value();
            if (v == nullptr) return bad("--nixl-capi needs a path");
            o.nixl_capi = v;
        } else if (a == "--nvshmem-transport") {
            const char* v = value();
            if (v == nullptr) return bad("--nvshmem-transport needs a path");
            o.nvshmem_transport = v;
        } else if (a == "--nixl-plugin") {
            const char* v = value();
            if (v == nullptr) return bad("--nixl-plugin needs a path");
            o.nixl_plugin = v;
        } else if (a == "--nccl2-plugin") {
            const char* v = value();
            if (v == nullptr) return bad("--nccl2-plugin needs a path");
            o.nccl2_plugin = v;
        } else if (a == "--json" || a == "--csv" || a == "--plot") {
            const char* v = value();
            if (v == nullptr) return bad(std::string(a) + " needs a file");
            (a == "--json" ? o.json : a == "--csv" ? o.csv : o.plot) = v;
        } else if (a == "--quiet" || a == "-q") {
            o.quiet = true;
        } else {
            return bad("unknown option '" + std::string(a) + "'");
        }
    }
    if (o.provider == "sockets" || o.provider.find("sockets") != std::string::npos)
        return bad("the sockets provider is for functional tests only, never benchmarks");
    if (o.paths.empty()) return bad("no paths");
    if (o.threading != loom::threading_mode::unspecified)
        for (const auto& p : o.paths)
            if (p != "raw" && p != "raw2" && p != "loom" && p != "sender" && p != "asio")
                return bad("--threading applies to the raw, raw2, loom, sender and asio paths, not " + p);
    // raw first: ratios are to raw and interleaving starts with the floor.
    // (std::sort on (rank, name): stable_sort trips clang's deprecation of libstdc++ 12's
    // get_temporary_buffer.)
    std::sort(o.paths.begin(), o.paths.end(), [](const std::string& a, const std::string& b) {
        auto rank = [](const std::string& p) { return p == "raw" ? 0 : p == "raw2" ? 1 : p == "loom" ? 2 : 3; };
        return std::pair{rank(a), std::string_view{a}} < std::pair{rank(b), std::string_view{b}};
    });
    o.paths.erase(std::unique(o.paths.begin(), o.paths.end()), o.paths.end());
    return -1;
}

}  // namespace loom::bench
