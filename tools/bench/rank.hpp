// tools/bench/rank.hpp — one rank's whole loom-bench run, the same under every launcher.
#pragma once

#include "options.hpp"
#include "path.hpp"

namespace loom::bench {

/// Opens every path, measures every point in every round and (rank 0 of pair 0) writes the
/// report. `ch` reaches the other rank; `launcher` names the launcher in the report. Returns
/// the process's exit status: 0, 1 (a failure) or 3 (wrong bytes).
[[nodiscard]] auto run_rank(const options& o, channel& ch, int rank, int ranks, const char* launcher, int pair = 0)
    -> int;

}  // namespace loom::bench
