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
#include "path.hpp"
#include "report.hpp"

#ifndef LOOM_BENCH_NCCL_PLUGIN
#define LOOM_BENCH_NCCL_PLUGIN "libnccl-net-loom.so"
#endif
#ifndef LOOM_BENCH_NVSHMEM_TRANSPORT
#define LOOM_BENCH_NVSHMEM_TRANSPORT "nvshmem_transport_libfabric.so.4"
#endif
#ifndef LOOM_BENCH_NIXL_PLUGIN
#define LOOM_BENCH_NIXL_PLUGIN "libplugin_LOOM.so"
#endif
#ifndef LOOM_BENCH_NIXL_CAPI
#define LOOM_BENCH_NIXL_CAPI ""
#endif

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

struct options {
    std::vector<std::string> paths{"raw", "loom", "nccl"};
    std::vector<operation> ops{operation::pingpong, operation::stream};
    std::string provider{"shm"};
    std::string iface;
    loom::threading_mode threading{loom::threading_mode::unspecified};  ///< unspecified: the provider's choice
    std::vector<std::size_t> sizes = default_sizes();
    int reps{5};
    int rounds{1};
    schedule_params sched{};
    int ranks{2};
    enum class launch { automatic, local, mpi } launcher{launch::automatic};
    std::string nccl_plugin{LOOM_BENCH_NCCL_PLUGIN};
    std::string nccl2_plugin{};  ///< empty: nccl_plugin
    std::string nixl_capi{LOOM_BENCH_NIXL_CAPI};
    std::string nixl_plugin{LOOM_BENCH_NIXL_PLUGIN};
    std::string nvshmem_transport{LOOM_BENCH_NVSHMEM_TRANSPORT};
    std::string json, csv, plot;
    bool quiet{false};
};

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

// ---------------------------------------------------------------- stack placement
/// Calls f() with the stack moved `shift` bytes further down (stack_offset in report.hpp): the
/// frames of the path and of the provider below it land at another place within their pages.
template <class F>
[[gnu::noinline]] auto with_stack_offset(std::size_t shift, F&& f) {
    void* pad = __builtin_alloca(shift + 16);
    asm volatile("" : : "r"(pad) : "memory");  // the allocation stays, below f's frames
    auto r = std::forward<F>(f)();
    asm volatile("" : : "r"(pad) : "memory");
    return r;
}

// ---------------------------------------------------------------- payload pattern
auto pattern(std::size_t size, std::size_t i) -> std::byte {
    return static_cast<std::byte>((i * 131U + size * 7U + (i >> 8) + (i >> 16)) & 0xffU);
}
void fill(std::byte* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) p[i] = pattern(n, i);
}
auto first_bad(const std::byte* p, std::size_t n) -> long {
    for (std::size_t i = 0; i < n; ++i)
        if (p[i] != pattern(n, i)) return static_cast<long>(i);
    return -1;
}

/// After `adds` fetch-adds of 1 in windows of `w`: the target's counter equals `adds`; the
/// initiator's last window fetched exactly the values adds-w .. adds-1 (in any order).
auto check_fetch_add(const buffers& buf, int rank, std::uint64_t adds, int w) -> std::string {
    if (rank == 1) {
        const std::uint64_t got = *buf.counter();
        if (got != adds) return "counter is " + std::to_string(got) + " after " + std::to_string(adds) + " fetch-adds";
        return {};
    }
    std::vector<std::uint64_t> fetched(buf.fetch_results(), buf.fetch_results() + w);
    std::sort(fetched.begin(), fetched.end());
    for (int k = 0; k < w; ++k) {
        const std::uint64_t want = adds - static_cast<std::uint64_t>(w) + static_cast<std::uint64_t>(k);
        if (fetched[static_cast<std::size_t>(k)] != want)
            return "the last window fetched " + std::to_string(fetched[static_cast<std::size_t>(k)]) + " where " +
                   std::to_string(want) + " was due";
    }
    return {};
}

/// What a rank reports after each measurement.
struct status {
    std::uint8_t ok{1};
    std::uint8_t verified{1};
    std::uint16_t error_len{0};
};

auto exchange_status(channel& ch, int rank, status mine, const std::string& my_error, status& peer,
                     std::string& peer_error) -> bool {
    mine.error_len = static_cast<std::uint16_t>(std::min<std::size_t>(my_error.size(), 1000));
    if (!ch.send(&mine, sizeof mine) || !ch.send(my_error.data(), mine.error_len)) return false;
    if (!ch.recv(&peer, sizeof peer)) return false;
    peer_error.resize(peer.error_len);
    (void)rank;
    return ch.recv(peer_error.data(), peer.error_len);
}

struct progress_line {
    bool enabled;
    bool tty;
    void show(const std::string& s) const {
        if (!enabled) return;
        if (tty)
            std::fprintf(stderr, "\r\033[K%s", s.c_str());
        else
            std::fprintf(stderr, "%s\n", s.c_str());
        std::fflush(stderr);
    }
    void clear() const {
        if (enabled && tty) std::fprintf(stderr, "\r\033[K");
    }
};

auto write_file(const std::string& file, const std::string& text) -> bool {
    if (file == "-") {
        std::fputs(text.c_str(), stdout);
        return true;
    }
    std::ofstream f(file, std::ios::binary);
    f << text;
    return static_cast<bool>(f);
}

/// One rank's whole run, the same under every launcher (`launcher` names it in the report):
/// `ch` reaches the other rank.
auto run_rank(const options& o, channel& ch, int rank, int ranks, const char* launcher, int pair = 0) -> int {
    const bool reporter = rank == 0 && pair == 0;  // the other pairs measure alongside, silently
    const auto wants = [&](auto pred) { return std::any_of(o.ops.begin(), o.ops.end(), pred); };
    std::size_t capacity = std::max<std::size_t>(8, *std::max_element(o.sizes.begin(), o.sizes.end()));
    for (operation op : o.ops)
        if (is_windowed(op)) capacity = std::max(capacity, buffer_bytes(sizes_for(op, o.sizes), o.sched));
    // Fetch-add results: one uint64 per request of a window, at the start of rx.
    if (wants(is_atomic)) capacity = std::max<std::size_t>(capacity, max_window * sizeof(std::uint64_t));
    // The control area after the payload starts 64-byte aligned (the atomic counter in it).
    capacity = (capacity + 63) / 64 * 64;
    buffers buf;
    buf.capacity = capacity;
    const std::size_t alloc = (buf.registered_size() + 4095) / 4096 * 4096;
    auto* tx = static_cast<std::byte*>(std::aligned_alloc(4096, alloc));
    auto* rx = static_cast<std::byte*>(std::aligned_alloc(4096, alloc));
    if (tx == nullptr || rx == nullptr) {
        std::fprintf(stderr, "loom-bench: rank %d: cannot allocate %zu bytes\n", rank, 2 * alloc);
        return ch.abandon(1);
    }
    std::memset(tx, 0, alloc);
    std::memset(rx, 0, alloc);
    buf.tx = tx;
    buf.rx = rx;
    *buf.operand() = 1;  // what every fetch-add adds

    path_config cfg;
    cfg.provider = o.provider;
    cfg.domain = o.iface;
    cfg.threading = o.threading;
    cfg.nccl_plugin = o.nccl_plugin;
    cfg.nixl_capi = o.nixl_capi;
    cfg.nixl_plugin = o.nixl_plugin;
    cfg.nvshmem_transport = o.nvshmem_transport;
    cfg.window = o.sched.window;
    cfg.rma = wants(is_rma);
    cfg.atomic = wants(is_atomic);

    run_info info;
    info.provider = o.provider;
    if (o.threading != loom::threading_mode::unspecified) info.threading = loom::to_string(o.threading);
    info.ranks = ranks;
    info.pairs = std::max(1, ranks / 2);
    info.launcher = launcher;
    info.window = o.sched.window;
    info.repetitions = o.reps;
    info.rounds = o.rounds;
    info.paths = o.paths;
    const progress_line prog{reporter && !o.quiet, ::isatty(2) != 0};

    // Every point, measured in every round; samples accumulate across rounds.
    std::vector<point> points;
    for (operation op : o.ops) {
        const auto op_sizes = sizes_for(op, o.sizes);
        if (op_sizes.empty() && reporter)
            std::fprintf(stderr, "loom-bench: %s: no size up to %s in --sizes, skipped\n",
                         std::string(name_of(op)).c_str(), format_size(msgrate_max_size).c_str());
        for (std::size_t size : op_sizes) {
            point pt;
            pt.op = op;
            pt.size = size;
            pt.iterations = iterations_for(op, size, o.sched);
            pt.window = is_windowed(op) ? window_for(size, o.sched) : 1;
            points.push_back(std::move(pt));
        }
    }

    bool failed = false, wrong = false;
    for (int round = 0; round < o.rounds && !failed; ++round) {
        // Each round opens every path anew (fresh endpoints, provider memory at new places)
        // and rotates the order they are opened in: what one instance of a path gains or loses
        // by where its objects landed, or by being opened first, is spread over all paths.
        const std::size_t n_paths = o.paths.size();
        std::vector<path_ptr> paths(n_paths);
        for (std::size_t j = 0; j < n_paths; ++j) {
            const std::size_t k = (j + static_cast<std::size_t>(round)) % n_paths;
            const auto& name = o.paths[k];
            const std::size_t at = path_offset(round, n_paths, k);  // a new layout every round
            const std::size_t copy = code_copy(round, k);           // and another copy of its code
            auto p = name == "loom"                      ? make_loom_path(at, copy)
                     : name == "sender"                  ? make_sender_path(at, copy)
                     : name == "asio"                    ? make_asio_path(at, copy)
                     : name == "nccl" || name == "nccl2" ? make_nccl_path(at, copy)
                     : name.starts_with("nixl")          ? make_nixl_path(at, copy)
                     : name == "nvshmem"                 ? make_nvshmem_path(at, copy)
                                                         : make_raw_path(at, copy);
            path_config this_cfg = cfg;
            this_cfg.nixl_backend = name == "nixl" ? "LOOM" : "UCX";
            if (name == "nccl2") {
                this_cfg.nccl_path_name = "nccl2";
                if (!o.nccl2_plugin.empty()) this_cfg.nccl_plugin = o.nccl2_plugin;
            }
            if (auto e = p->open(this_cfg, buf, ch, rank); !e.empty()) {
                std::fprintf(stderr, "loom-bench: rank %d: path %s over %s: %s\n", rank, name.c_str(),
                             o.provider.c_str(), e.c_str());
                return ch.abandon(1);
            }
            if (!ch.barrier()) {
                std::fprintf(stderr, "loom-bench: rank %d: peer gone while opening %s\n", rank, name.c_str());
                return ch.abandon(1);
            }
            paths[k] = std::move(p);
        }
        if (round == 0) info.domain = paths.front()->domain_name();
        std::size_t done_points = 0;
        for (auto& pt : points) {
            if (failed) break;
            const operation op = pt.op;
            const std::size_t size = pt.size;
            const int warmup = warmup_for(pt.iterations);
            const double messages = static_cast<double>(pt.iterations) * messages_per_iteration(op, size, o.sched);
            // Every message of a window has its own buffer range, each filled with the pattern.
            for (int k = 0; k < pt.window; ++k) fill(buf.tx + static_cast<std::size_t>(k) * size, size);
            // Who checks payload bytes: both ranks after a ping-pong, the receiver of a stream or
            // of message-rate traffic, the target of RMA writes, the initiator (rank 0) of reads.
            // Fetch-adds are checked separately (counter and fetched values).
            bool receives_data = true;
            switch (op) {
                case operation::stream:
                case operation::msgrate:
                case operation::rma_write: receives_data = rank == 1; break;
                case operation::rma_read: receives_data = rank == 0; break;
                case operation::atomic_fadd: receives_data = false; break;
                default: break;
            }
            for (int rep = 0; rep < o.reps && !failed; ++rep) {
                // The order the paths run in moves from repetition to repetition (and round to
                // round; run_order): each runs equally often in every place, after every path.
                for (std::size_t j = 0; j < paths.size() && !failed; ++j) {
                    const std::size_t k = run_order(paths.size(), round, o.reps, rep, j);
                    auto& p = *paths[k];
                    auto& samples = pt.paths[o.paths[k]];
                    if (auto why = p.unsupported(op); !why.empty()) {
                        samples.skipped = why;
                        continue;
                    }
                    if (prog.tty || (rep == 0 && j == 0))
                        prog.show(
                            "[loom-bench] " + o.provider + " " + std::string(name_of(op)) + " " + format_size(size) +
                            "  rep " + std::to_string(rep + 1) + "/" + std::to_string(o.reps) +
                            (o.rounds > 1 ? "  round " + std::to_string(round + 1) + "/" + std::to_string(o.rounds)
                                          : std::string{}) +
                            "  " + o.paths[k] + "  (" + std::to_string(done_points + 1) + "/" +
                            std::to_string(points.size()) + ")");
                    // The last repetition of every round checks the payload.
                    const bool verify = rep == o.reps - 1;
                    const std::size_t span = size * static_cast<std::size_t>(pt.window);
                    if (verify) std::memset(buf.rx, 0, span);
                    if (op == operation::atomic_fadd) *buf.counter() = 0;  // the peer adds to it
                    if (!ch.barrier()) {
                        std::fprintf(stderr, "loom-bench: rank %d: peer gone\n", rank);
                        return ch.abandon(1);
                    }
                    // Warm-up and timed run with the stack at this measurement's offset.
                    auto [err, secs] = with_stack_offset(stack_offset(round, o.reps, rep, paths.size(), k), [&] {
                        std::string e = p.run(op, rank, size, warmup, pt.window);
                        double t = 0;
                        if (e.empty()) {
                            const auto t0 = std::chrono::steady_clock::now();
                            e = p.run(op, rank, size, pt.iterations, pt.window);
                            t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                        }
                        return std::pair{std::move(e), t};
                    });
                    status mine;
                    mine.ok = err.empty() ? 1 : 0;
                    if (verify && err.empty() && receives_data) {
                        for (int w = 0; w < pt.window && mine.verified != 0; ++w) {
                            const long bad = first_bad(buf.rx + static_cast<std::size_t>(w) * size, size);
                            if (bad >= 0) {
                                mine.verified = 0;
                                err = "message " + std::to_string(w) + " of the window: byte " + std::to_string(bad) +
                                      " of " + std::to_string(size) + " is wrong";
                            }
                        }
                    }
                    if (verify && err.empty() && op == operation::atomic_fadd) {
                        const auto adds =
                            static_cast<std::uint64_t>(warmup + pt.iterations) * static_cast<std::uint64_t>(pt.window);
                        if (auto why = check_fetch_add(buf, rank, adds, pt.window); !why.empty()) {
                            mine.verified = 0;
                            err = why;
                        }
                    }
                    status peer;
                    std::string peer_err;
                    if (!exchange_status(ch, rank, mine, err, peer, peer_err)) {
                        std::fprintf(stderr, "loom-bench: rank %d: peer gone\n", rank);
                        return ch.abandon(1);
                    }
                    if (mine.ok == 0 || peer.ok == 0) {
                        samples.error = !err.empty() ? err : "peer: " + peer_err;
                        if (rank == 0)  // every pair's initiator: a failure in any pair is shown
                            std::fprintf(stderr, "\nloom-bench: %s %s %s: %s\n", o.paths[k].c_str(),
                                         std::string(name_of(op)).c_str(), format_size(size).c_str(),
                                         samples.error.c_str());
                        failed = true;  // requests may be in flight: stop measuring
                        break;
                    }
                    if (mine.verified == 0 || peer.verified == 0) {
                        samples.verified = false;
                        samples.error = !err.empty() ? err : "peer: " + peer_err;
                        wrong = true;
                        if (rank == 0)
                            std::fprintf(stderr, "\nloom-bench: WRONG BYTES: %s %s %s: %s\n", o.paths[k].c_str(),
                                         std::string(name_of(op)).c_str(), format_size(size).c_str(),
                                         samples.error.c_str());
                    }
                    samples.measured = true;
                    samples.seconds_per_message.push_back(secs / messages);
                }
            }
            ++done_points;
        }
        if (!ch.barrier()) failed = true;
    }
    prog.clear();
    if (!ch.barrier()) failed = true;
    // Every pair's initiator hands its medians to pair 0's (under MPI with several pairs), which
    // reports what all pairs did together next to pair 0's own figures.
    if (rank == 0) {
        std::vector<double> mine;
        for (const auto& pt : points)
            for (const auto& name : o.paths) {
                const auto it = pt.paths.find(name);
                const bool has = it != pt.paths.end() && it->second.measured && it->second.skipped.empty() &&
                                 !it->second.seconds_per_message.empty();
                mine.push_back(has ? median(it->second.seconds_per_message) : std::numeric_limits<double>::quiet_NaN());
            }
        std::vector<std::vector<double>> all;
        if (!ch.gather_initiators(mine, all)) {
            std::fprintf(stderr, "loom-bench: rank 0 of pair %d: gathering the pairs' figures failed\n", pair);
            failed = true;
        } else if (reporter && all.size() > 1) {
            std::size_t k = 0;
            for (auto& pt : points)
                for (const auto& name : o.paths) {
                    if (auto it = pt.paths.find(name); it != pt.paths.end())
                        for (const auto& v : all)
                            it->second.pair_seconds.push_back(k < v.size() ? v[k]
                                                                           : std::numeric_limits<double>::quiet_NaN());
                    ++k;
                }
        }
    }
    std::free(tx);
    std::free(rx);
    if (!reporter) return failed ? 1 : (wrong ? 3 : 0);
    // A failure stops the measurements: the points never reached are not reported.
    std::erase_if(points, [](const point& p) { return p.paths.empty(); });

    const bool json_stdout = o.json == "-";
    const std::string table = render_table(info, points);
    std::fputs(table.c_str(), json_stdout || o.csv == "-" ? stderr : stdout);
    if (!o.json.empty() && !write_file(o.json, render_json(info, points)))
        std::fprintf(stderr, "loom-bench: cannot write %s\n", o.json.c_str());
    if (!o.csv.empty() && !write_file(o.csv, render_csv(info, points)))
        std::fprintf(stderr, "loom-bench: cannot write %s\n", o.csv.c_str());
    if (!o.plot.empty()) {
        if (write_file(o.plot, render_svg(info, points)))
            std::fprintf(json_stdout ? stderr : stdout, "# plot: %s\n", o.plot.c_str());
        else
            std::fprintf(stderr, "loom-bench: cannot write %s\n", o.plot.c_str());
    }
    std::fflush(stdout);
    if (failed) return 1;
    return wrong ? 3 : 0;
}

}  // namespace
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
