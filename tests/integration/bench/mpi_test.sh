#!/usr/bin/env bash
# loom-bench under mpirun (Open MPI): two MPI ranks over shm, every path, JSON checked like the
# --local test (every path present and verified at every point); then -np 3 must be refused.
# usage: mpi_test.sh LOOM_BENCH MPIRUN  (MPIRUN empty: MPI was not found at configure time, skip)
set -u
bench=$1 mpirun=${2:-}
if [ -z "$mpirun" ]; then
  echo "SKIP: no MPI found at configure time (install libopenmpi-dev openmpi-bin: ./scripts/setup)"
  exit 77
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/loom-bench-mpi.XXXXXX")
trap 'rm -rf "$dir"' EXIT
fail=0
check() {  # check WHAT EXPECTED ACTUAL
  if [ "$2" != "$3" ]; then echo "FAIL: $1: expected $2, got $3"; fail=1; fi
}
count() { grep -oF -- "$1" "$2" | wc -l; }

# Root in a container: --allow-run-as-root; --oversubscribe and --bind-to none for few cores;
# pml ob1 with the self/vader/tcp BTLs keeps Open MPI off its own libfabric (ofi MTL/BTL), which
# would share the libfabric.so.1 that loom-bench benchmarks; loopback for its TCP and out-of-band.
mpi=(--allow-run-as-root --oversubscribe -np 2 --bind-to none --mca pml ob1 --mca btl self,vader,tcp
     --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)
export OMPI_MCA_plm_rsh_agent=  # single node: never ssh

json=$dir/out.json
"$mpirun" "${mpi[@]}" "$bench" --provider shm --paths raw,loom,nccl --sizes 8,4K --reps 2 --quiet \
  --json "$json" >"$dir/table.txt" 2>&1
rc=$?
check "mpirun exit status" 0 "$rc"
[ "$rc" -eq 0 ] || cat "$dir/table.txt"
[ -s "$json" ] || { echo "FAIL: no JSON written"; exit 1; }
check "tool" 1 "$(count '"tool": "loom-bench"' "$json")"
check "launcher" 1 "$(count '"launcher": "mpi"' "$json")"
check "ranks" 1 "$(count '"ranks": 2,' "$json")"
check "provider" 1 "$(count '"provider": "shm"' "$json")"
check "paths" 1 "$(count '"paths": ["raw", "loom", "nccl"]' "$json")"
check "all_verified" 1 "$(count '"all_verified": true' "$json")"
# 2 operations (ping-pong, stream) x 2 sizes, each with all three paths, verified and timed.
for p in '"op": "pingpong", "size": 8,' '"op": "pingpong", "size": 4096,' \
         '"op": "stream", "size": 8,' '"op": "stream", "size": 4096,'; do
  check "point $p" 1 "$(count "$p" "$json")"
done
for p in raw loom nccl; do
  check "$p verified at every point" 4 "$(count "\"$p\": {\"verified\": true, \"time_us\"" "$json")"
done
check "ratio_to_raw null (raw only)" 4 "$(count '"ratio_to_raw": null' "$json")"
check "verified false" 0 "$(count '"verified": false' "$json")"
# Only rank 0 prints the table, once per operation.
check "tables" 1 "$(count 'loom-bench pingpong: provider shm domain shm, 2 ranks (mpi)' "$dir/table.txt")"
check "stream table" 1 "$(count 'loom-bench stream:' "$dir/table.txt")"

# Four ranks: two pairs (0-2, 1-3) measure at once; rank 0 reports pair 0 once, every path
# verified. Few iterations: four spinning ranks share this machine's cores.
mpi4=("${mpi[@]}")
mpi4[3]=4
json4=$dir/out4.json
"$mpirun" "${mpi4[@]}" "$bench" --provider shm --paths raw,loom,nccl --sizes 8,4K --reps 2 --iters 20 --quiet \
  --json "$json4" >"$dir/np4.txt" 2>&1
rc=$?
check "-np 4 exit status" 0 "$rc"
[ "$rc" -eq 0 ] || cat "$dir/np4.txt"
check "-np 4 ranks" 1 "$(count '"ranks": 4,' "$json4")"
check "-np 4 pairs" 1 "$(count '  "pairs": 2,' "$json4")"
check "-np 4 all_verified" 1 "$(count '"all_verified": true' "$json4")"
for p in raw loom nccl; do
  check "-np 4 $p verified at every point" 4 "$(count "\"$p\": {\"verified\": true, \"time_us\"" "$json4")"
done
check "-np 4 one table" 1 "$(count 'loom-bench pingpong: provider shm domain shm, 4 ranks (mpi), 2 pairs at once (figures of pair 0; all pairs below)' "$dir/np4.txt")"
# What both pairs did together: every pair's median per path and point, and their sum / slowest.
check "-np 4 pair figures" 12 "$(count '"pairs_time_us": [' "$json4")"
check "-np 4 aggregates of both pairs" 12 "$(count '"aggregate": {"pairs": 2,' "$json4")"
check "-np 4 latency of all pairs" 1 "$(count "# all 2 pairs together: the slowest pair's median one-way latency (us)" "$dir/np4.txt")"
check "-np 4 bandwidth of all pairs" 1 "$(count "# all 2 pairs together: sum of the pairs' bandwidths (GB/s)" "$dir/np4.txt")"
# One pair: nothing to add up.
check "-np 2 no aggregate" 0 "$(count '"aggregate"' "$json")"

# Point-to-point needs partners: three ranks are refused with a clear message.
mpi3=("${mpi[@]}")
mpi3[3]=3
"$mpirun" "${mpi3[@]}" "$bench" --provider shm --sizes 8 --reps 1 --quiet >"$dir/np3.txt" 2>&1
rc=$?
[ "$rc" -ne 0 ] || { echo "FAIL: -np 3 succeeded"; fail=1; }
check "-np 3 message" 1 "$(count 'the MPI launcher needs an even number of ranks (pairs: rank r with rank r + size/2), not 3' "$dir/np3.txt")"

[ "$fail" -eq 0 ] && echo "PASS: loom-bench under mpirun -np 2 and -np 4, every path verified at every point, both pairs' figures added up"
exit "$fail"
