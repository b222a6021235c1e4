// tools/bench/code_shift.cpp — padding linked ahead of the tool's own code. The code copies
// (path.hpp: place_copy) move each path's loops from round to round, but not the out-of-line
// functions the copies share (inline functions the linker keeps once): their place is fixed by
// the build. LOOM_BENCH_CODE_SHIFT bytes (a multiple of 64, set by the CMake variable of that
// name) move every function after this one, so that rebuilding with a few shifts shows whether
// a ratio belongs to the code or to where the linker placed it (docs/bench.md).
#ifndef LOOM_BENCH_CODE_SHIFT
#define LOOM_BENCH_CODE_SHIFT 0
#endif

static_assert(LOOM_BENCH_CODE_SHIFT >= 0 && LOOM_BENCH_CODE_SHIFT % 64 == 0,
              "LOOM_BENCH_CODE_SHIFT: a multiple of 64 bytes");

#if LOOM_BENCH_CODE_SHIFT > 0
#define LOOM_BENCH_STRING2(x) #x
#define LOOM_BENCH_STRING(x) LOOM_BENCH_STRING2(x)
// Exactly LOOM_BENCH_CODE_SHIFT bytes: the skipped bytes and the return (functions start on
// 64-byte boundaries in this tool).
[[gnu::used, gnu::noinline]] void loom_bench_code_shift() {
    asm volatile(".skip " LOOM_BENCH_STRING(LOOM_BENCH_CODE_SHIFT) " - 1, 0x90");
}
#endif
