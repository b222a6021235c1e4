// tools/bench/launch.hpp — the launchers besides --local: how the ranks of loom-bench find each
// other and get a channel (path.hpp) to exchange addresses, barriers and per-measurement status.
#pragma once

#include <functional>

#include "path.hpp"

namespace loom::bench {

/// The body a launcher runs on every rank it starts: returns the rank's exit status.
using rank_body = std::function<int(channel& ch, int rank, int size)>;

/// True when this process was started by Open MPI's mpirun/mpiexec (OMPI_COMM_WORLD_SIZE is set).
[[nodiscard]] auto started_by_mpirun() -> bool;

/// True when loom-bench was built with MPI (LOOM_BENCH_HAVE_MPI).
[[nodiscard]] auto mpi_available() -> bool;

/// The MPI launcher: MPI_Init, rank and size from MPI_COMM_WORLD (exactly 2 ranks, else exit
/// status 2 with a message from rank 0), `body` over an MPI-backed channel between ranks 0 and
/// 1, MPI_Finalize. Built without MPI: a message and exit status 2.
[[nodiscard]] auto run_mpi(int& argc, char**& argv, const rank_body& body) -> int;

}  // namespace loom::bench
