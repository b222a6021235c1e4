// tools/bench/options.cpp — loom-bench's usage text and command-line parsing.
#include "options.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <utility>

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
                             handler, run by io_context::run_one (fabric_service polling);
                             in ping-pongs each handler starts the next operation, as an
                             Asio program chains them
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
  --added-ns         the table's columns against raw show the nanoseconds each message adds
                     over raw (median of the paired differences, with its 95 % interval)
                     instead of the ratio; JSON and CSV carry both
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

/// The command line, one argument at a time.
class arg_reader {
public:
    arg_reader(int argc, char** argv) : argc_(argc), argv_(argv) {}
    /// The next option; nothing at the end.
    auto next() -> std::optional<std::string_view> {
        if (++i_ >= argc_) return std::nullopt;
        return std::string_view{argv_[i_]};
    }
    /// The option's value (the argument after it); null when there is none.
    auto value() -> const char* { return i_ + 1 < argc_ ? argv_[++i_] : nullptr; }
    /// The value as an integer in [lo, hi].
    auto int_value(int lo, int hi, int& out) -> bool {
        const char* v = value();
        if (v == nullptr) return false;
        char* end = nullptr;
        const long n = std::strtol(v, &end, 10);
        if (*end != '\0' || n < lo || n > hi) return false;
        out = static_cast<int>(n);
        return true;
    }

private:
    int argc_;
    char** argv_;
    int i_{0};
};

/// What a parser says of one option: empty when it took it, else the complaint.
using complaint = std::string;

auto known_path(std::string_view p) -> bool {
    return p == "raw" || p == "raw2" || p == "loom" || p == "sender" || p == "asio" || p == "nccl" || p == "nccl2" ||
           p == "nixl" || p == "nixl-ucx" || p == "nvshmem";
}

auto parse_paths(const char* v, options& o) -> complaint {
    if (v == nullptr) return "--paths needs a list";
    o.paths = split(v);
    for (const auto& p : o.paths)
        if (!known_path(p)) return "unknown path '" + p + "'";
    return {};
}

auto parse_ops(const char* v, options& o) -> complaint {
    if (v == nullptr) return "--ops needs a list";
    o.ops.clear();
    for (const auto& s : split(v)) {
        const auto op = parse_operation(s);
        if (!op) {
            if (s == "rma") return "operation 'rma': say rma_write or rma_read";
            if (s == "atomic") return "operation 'atomic': say atomic_fadd";
            return "unknown operation '" + s + "'";
        }
        o.ops.push_back(*op);
    }
    return {};
}

auto parse_threading(const char* v, options& o) -> complaint {
    const std::string_view t = v == nullptr ? std::string_view{} : std::string_view{v};
    if (t == "safe")
        o.threading = loom::threading_mode::safe;
    else if (t == "domain")
        o.threading = loom::threading_mode::domain;
    else if (t == "completion")
        o.threading = loom::threading_mode::completion;
    else
        return "--threading needs safe, domain or completion";
    return {};
}

auto parse_launcher(const char* v, options& o) -> complaint {
    const std::string_view l = v != nullptr ? v : "";
    if (l == "local")
        o.launcher = options::launch::local;
    else if (l == "mpi")
        o.launcher = options::launch::mpi;
    else
        return "--launcher wants local or mpi";
    return {};
}

/// The options whose value is one string (a name, a library, an output file).
auto string_option(std::string_view a) -> std::string options::* {
    static constexpr std::pair<std::string_view, std::string options::*> table[] = {
        {"--provider", &options::provider},
        {"-p", &options::provider},
        {"--iface", &options::iface},
        {"--nccl-plugin", &options::nccl_plugin},
        {"--nccl2-plugin", &options::nccl2_plugin},
        {"--nixl-capi", &options::nixl_capi},
        {"--nixl-plugin", &options::nixl_plugin},
        {"--nvshmem-transport", &options::nvshmem_transport},
        {"--json", &options::json},
        {"--csv", &options::csv},
        {"--plot", &options::plot},
    };
    for (const auto& [name, member] : table)
        if (name == a) return member;
    return nullptr;
}

/// The options that count or measure.
auto parse_number(std::string_view a, arg_reader& args, options& o) -> std::optional<complaint> {
    if (a == "--reps") return args.int_value(1, 1000, o.reps) ? "" : "--reps wants 1..1000";
    if (a == "--rounds") return args.int_value(1, 1000, o.rounds) ? "" : "--rounds wants 1..1000";
    if (a == "--iters")
        return args.int_value(1, 10000000, o.sched.fixed_iterations) ? "" : "--iters wants a positive count";
    if (a == "--window")
        return args.int_value(1, max_window, o.sched.window) ? complaint{}
                                                             : "--window wants 1.." + std::to_string(max_window);
    if (a == "--local") {
        if (!args.int_value(2, 2, o.ranks)) return "--local: only 2 ranks are supported";
        o.launcher = options::launch::local;
        return "";
    }
    if (a == "--sizes") {
        const char* v = args.value();
        if (v == nullptr) return "--sizes needs a list";
        auto s = parse_sizes(v);
        if (!s) return s.error();
        o.sizes = *s;
        return "";
    }
    if (a == "--budget") {
        const char* v = args.value();
        const auto b = v != nullptr ? parse_size(v) : std::nullopt;
        if (!b || *b == 0) return "--budget wants a size";
        o.sched.byte_budget = *b;
        return "";
    }
    return std::nullopt;
}

/// One option (and its value).
auto parse_option(std::string_view a, arg_reader& args, options& o) -> complaint {
    if (auto member = string_option(a)) {
        const char* v = args.value();
        if (v == nullptr) return std::string(a) + " needs a value";
        o.*member = v;
        return {};
    }
    if (auto number = parse_number(a, args, o)) return *number;
    if (a == "--paths") return parse_paths(args.value(), o);
    if (a == "--ops") return parse_ops(args.value(), o);
    if (a == "--threading") return parse_threading(args.value(), o);
    if (a == "--launcher") return parse_launcher(args.value(), o);
    if (a == "--ep-type") {
        const char* v = args.value();
        return v != nullptr && std::string_view(v) == "rdm" ? "" : "--ep-type: only rdm is implemented";
    }
    if (a == "--quiet" || a == "-q") {
        o.quiet = true;
        return {};
    }
    if (a == "--added-ns") {
        o.added_ns = true;
        return {};
    }
    return "unknown option '" + std::string(a) + "'";
}

/// Checks across options, then the paths in their measuring order.
auto finish(options& o) -> complaint {
    if (o.provider.find("sockets") != std::string::npos)
        return "the sockets provider is for functional tests only, never benchmarks";
    if (o.paths.empty()) return "no paths";
    if (o.threading != loom::threading_mode::unspecified)
        for (const auto& p : o.paths)
            if (p != "raw" && p != "raw2" && p != "loom" && p != "sender" && p != "asio")
                return "--threading applies to the raw, raw2, loom, sender and asio paths, not " + p;
    // raw first: ratios are to raw and interleaving starts with the floor.
    // (A sort on (rank, name): stable_sort trips clang's deprecation of libstdc++ 12's
    // get_temporary_buffer.)
    std::ranges::sort(o.paths, [](const std::string& a, const std::string& b) {
        auto rank = [](const std::string& p) { return p == "raw" ? 0 : p == "raw2" ? 1 : p == "loom" ? 2 : 3; };
        return std::pair{rank(a), std::string_view{a}} < std::pair{rank(b), std::string_view{b}};
    });
    const auto [first, last] = std::ranges::unique(o.paths);
    o.paths.erase(first, last);
    return {};
}

}  // namespace

auto parse_args(int argc, char** argv, options& o) -> int {
    auto bad = [](const std::string& what) {
        std::fprintf(stderr, "loom-bench: %s (see --help)\n", what.c_str());
        return 2;
    };
    arg_reader args(argc, argv);
    while (const auto a = args.next()) {
        if (*a == "-h" || *a == "--help") {
            std::fputs(usage_text, stdout);
            return 0;
        }
        if (const complaint c = parse_option(*a, args, o); !c.empty()) return bad(c);
    }
    if (const complaint c = finish(o); !c.empty()) return bad(c);
    return -1;
}

}  // namespace loom::bench
