// tools/bench/launch.hpp — the launchers besides --local: how the ranks of loom-bench find each
// other and get a channel (path.hpp) to exchange addresses, barriers and per-measurement status.
#pragma once

#include <functional>

#include "path.hpp"

namespace loom::bench {

/// The body a launcher runs on every rank it starts: `rank` is 0 or 1 within its pair (`ch`
/// reaches the other), `size` the number of ranks in the job, `pair` which pair this is (pair 0
/// reports). Returns the rank's exit status.
using rank_body = std::function<int(channel& ch, int rank, int size, int pair)>;

/// True when this process was started by Open MPI's mpirun/mpiexec (OMPI_COMM_WORLD_SIZE is set).
[[nodiscard]] auto started_by_mpirun() -> bool;

/// True when loom-bench was built with MPI (LOOM_BENCH_HAVE_MPI).
[[nodiscard]] auto mpi_available() -> bool;

/// The MPI launcher: MPI_Init, rank and size from MPI_COMM_WORLD. The ranks pair up, rank r
/// with rank r + size/2 (so that with mpirun's default mapping over two nodes every pair
/// crosses them), and every pair runs `body` at the same time over an MPI-backed channel of
/// its own; an odd size is refused (exit status 2, a message from rank 0). MPI_Finalize.
/// Built without MPI: a message and exit status 2.
[[nodiscard]] auto run_mpi(int& argc, char**& argv, const rank_body& body) -> int;

}  // namespace loom::bench
