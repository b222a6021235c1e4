// tools/bench/options.hpp — loom-bench's command line: what it measures and how (see --help).
#pragma once

#include <loom/flags.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "report.hpp"

namespace loom::bench {

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
    bool added_ns{false};  ///< --added-ns: the table shows ns added over raw, not the ratio
};

/// Reads the command line into `o`: -1 to go on, else the exit status (0 after --help, 2 after
/// a bad option, with a message on stderr).
[[nodiscard]] auto parse_args(int argc, char** argv, options& o) -> int;

}  // namespace loom::bench
