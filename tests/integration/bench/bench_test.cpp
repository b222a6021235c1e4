// Runs loom-bench for real (two forked ranks over shm, two small sizes, every path) and checks
// its JSON: every path present at every point, every payload verified, sane numbers; the
// one-sided operations and the message rate likewise, and fetch-add skipped over tcp.
#include <glob.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

auto run(const std::string& cmd) -> int {
    const int st = std::system(cmd.c_str());
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

auto slurp(const std::string& file) -> std::string {
    std::ifstream f(file);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

auto count(const std::string& s, const std::string& what) -> std::size_t {
    std::size_t n = 0;
    for (std::size_t pos = s.find(what); pos != std::string::npos; pos = s.find(what, pos + 1)) ++n;
    return n;
}

class BenchRun : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = "/tmp/loom-bench-test-" + std::to_string(::getpid());
        ASSERT_EQ(run("mkdir -p " + dir_), 0);
    }
    void TearDown() override { (void)run("rm -rf " + dir_); }
    std::string dir_;
};

TEST_F(BenchRun, ShmTwoSizesEveryPathVerified) {
    const std::string json = dir_ + "/out.json", svg = dir_ + "/out.svg", csv = dir_ + "/out.csv";
    const std::string cmd = std::string(LOOM_BENCH_PATH) + " --local 2 --provider shm --paths raw,loom,nccl" +
                            " --sizes 8,64K --reps 2 --iters 20 --quiet --json " + json + " --csv " + csv + " --plot " +
                            svg + " > " + dir_ + "/table.txt";
    ASSERT_EQ(run(cmd), 0) << slurp(dir_ + "/table.txt");
    const std::string j = slurp(json);
    ASSERT_FALSE(j.empty());
    EXPECT_NE(j.find("\"tool\": \"loom-bench\""), std::string::npos);
    EXPECT_NE(j.find("\"provider\": \"shm\""), std::string::npos);
    EXPECT_NE(j.find("\"paths\": [\"raw\", \"loom\", \"nccl\"]"), std::string::npos) << j;
    EXPECT_NE(j.find("\"all_verified\": true"), std::string::npos) << j;
    // 2 operations (ping-pong, stream) x 2 sizes, each with all three paths, verified and timed.
    EXPECT_EQ(count(j, "\"op\": \"pingpong\", \"size\": 8,"), 1U);
    EXPECT_EQ(count(j, "\"op\": \"pingpong\", \"size\": 65536,"), 1U);
    EXPECT_EQ(count(j, "\"op\": \"stream\", \"size\": 8,"), 1U);
    EXPECT_EQ(count(j, "\"op\": \"stream\", \"size\": 65536,"), 1U);
    for (const char* p : {"\"raw\": {\"verified\": true, \"time_us\"", "\"loom\": {\"verified\": true, \"time_us\"",
                          "\"nccl\": {\"verified\": true, \"time_us\""})
        EXPECT_EQ(count(j, p), 4U) << p << "\n" << j;
    EXPECT_EQ(count(j, "\"ratio_to_raw\": null"), 4U);  // raw's own entries only
    EXPECT_EQ(count(j, "\"added_ns\": "), 8U);          // loom and nccl at every point
    EXPECT_EQ(count(j, "\"verified\": false"), 0U);
    // The table, the CSV and the plot came out too.
    const std::string table = slurp(dir_ + "/table.txt");
    EXPECT_NE(table.find("loom-bench pingpong"), std::string::npos) << table;
    EXPECT_NE(table.find("# plot: " + svg), std::string::npos) << table;
    EXPECT_EQ(count(slurp(csv), "\n"), 1U + 4U * 3U);
    const std::string s = slurp(svg);
    EXPECT_EQ(count(s, "class=\"series\""), 6U);  // 3 paths x 2 panels
}

TEST_F(BenchRun, ShmRmaAtomicsAndMessageRateVerified) {
    const std::string json = dir_ + "/one_sided.json";
    const std::string cmd =
        std::string(LOOM_BENCH_PATH) +
        " --local 2 --provider shm --paths raw,loom,nccl --ops rma_write,rma_read,atomic_fadd,msgrate"
        " --sizes 8,64K --reps 2 --iters 20 --added-ns --quiet --json " +
        json + " > " + dir_ + "/table.txt 2>&1";
    ASSERT_EQ(run(cmd), 0) << slurp(dir_ + "/table.txt");
    const std::string j = slurp(json);
    ASSERT_FALSE(j.empty());
    EXPECT_NE(j.find("\"all_verified\": true"), std::string::npos) << j;
    // RMA at both sizes, one fetch-add point (size 8), msgrate at 8 only (64K is above 4K).
    EXPECT_EQ(count(j, "\"op\": \"rma_write\", \"size\": 8,"), 1U) << j;
    EXPECT_EQ(count(j, "\"op\": \"rma_write\", \"size\": 65536,"), 1U) << j;
    EXPECT_EQ(count(j, "\"op\": \"rma_read\", \"size\": 8,"), 1U) << j;
    EXPECT_EQ(count(j, "\"op\": \"rma_read\", \"size\": 65536,"), 1U) << j;
    EXPECT_EQ(count(j, "\"op\": \"atomic_fadd\""), 1U) << j;
    EXPECT_EQ(count(j, "\"op\": \"atomic_fadd\", \"size\": 8,"), 1U) << j;
    EXPECT_EQ(count(j, "\"op\": \"msgrate\""), 1U) << j;
    EXPECT_EQ(count(j, "\"op\": \"msgrate\", \"size\": 8,"), 1U) << j;
    // raw and loom ran and verified every point; nccl only msgrate, skipped (with a note) elsewhere.
    EXPECT_EQ(count(j, "\"raw\": {\"verified\": true, \"time_us\""), 6U) << j;
    EXPECT_EQ(count(j, "\"loom\": {\"verified\": true, \"time_us\""), 6U) << j;
    EXPECT_EQ(count(j, "\"nccl\": {\"verified\": true, \"time_us\""), 1U) << j;
    EXPECT_EQ(count(j, "\"nccl\": {\"skipped\": true, \"note\": \"the NCCL net ABI has no RMA\"}"), 4U) << j;
    EXPECT_EQ(count(j, "\"nccl\": {\"skipped\": true, \"note\": \"the NCCL net ABI has no atomics\"}"), 1U) << j;
    EXPECT_EQ(count(j, "\"rate_per_s\""), 5U) << j;  // atomic_fadd: raw, loom; msgrate: raw, loom, nccl
    EXPECT_EQ(count(j, "\"verified\": false"), 0U);
    const std::string table = slurp(dir_ + "/table.txt");
    EXPECT_NE(table.find("# nccl: skipped, the NCCL net ABI has no RMA"), std::string::npos) << table;
    // --added-ns: the columns against raw are the nanoseconds added, in every operation's table.
    EXPECT_EQ(count(table, "     +ns           ci95"), 8U) << table;  // loom and nccl, four tables
    EXPECT_EQ(count(table, "   ratio           ci95"), 0U) << table;
}

TEST_F(BenchRun, TcpHasNoAtomicsSoFetchAddIsSkipped) {
    // libfabric 2.1's tcp provider has RMA but no atomics: reported as skipped, not a failure.
    const std::string json = dir_ + "/tcp.json";
    const std::string cmd = std::string(LOOM_BENCH_PATH) +
                            " --local 2 --provider tcp --iface lo --paths raw,loom --ops atomic_fadd,rma_write"
                            " --sizes 8 --reps 1 --iters 5 --quiet --json " +
                            json + " > " + dir_ + "/table.txt 2>&1";
    ASSERT_EQ(run(cmd), 0) << slurp(dir_ + "/table.txt");
    const std::string j = slurp(json);
    EXPECT_NE(j.find("\"all_verified\": true"), std::string::npos) << j;
    EXPECT_EQ(count(j, "{\"skipped\": true, \"note\": \"provider tcp offers no FI_ATOMIC\"}"), 2U) << j;
    EXPECT_EQ(count(j, "\"verified\": true, \"time_us\""), 2U) << j;  // RMA write, raw and loom
}

// The nixl paths: the real NIXL agent with our LOOM backend and with NIXL's UCX backend, WRITE
// and READ verified at the target / initiator; NIXL has no two-sided messages (skipped).
TEST_F(BenchRun, NixlPathsWriteAndReadThroughTheRealAgent) {
#ifndef LOOM_BENCH_HAS_NIXL
    GTEST_SKIP() << "no NIXL wheel (scripts/setup installs it)";
#else
    const auto plugin_dirs = [] {
        ::glob_t g{};
        const std::size_t n = ::glob("/tmp/loom-bench-nixl.*", 0, nullptr, &g) == 0 ? g.gl_pathc : 0;
        ::globfree(&g);
        return n;
    };
    const std::size_t dirs_before = plugin_dirs();
    const std::string json = dir_ + "/nixl.json";
    const std::string cmd = std::string(LOOM_BENCH_PATH) +
                            " --local 2 --provider shm --paths raw,nixl,nixl-ucx --ops pingpong,rma_write,rma_read"
                            " --sizes 8,64K --reps 1 --iters 5 --window 4 --quiet --json " +
                            json + " > " + dir_ + "/table.txt 2>&1";
    ASSERT_EQ(run(cmd), 0) << slurp(dir_ + "/table.txt");
    const std::string j = slurp(json);
    EXPECT_NE(j.find("\"all_verified\": true"), std::string::npos) << j;
    EXPECT_EQ(count(j, "\"nixl\": {\"verified\": true, \"time_us\""), 4U) << j;
    EXPECT_EQ(count(j, "\"nixl-ucx\": {\"verified\": true, \"time_us\""), 4U) << j;
    EXPECT_EQ(count(j, "{\"skipped\": true, \"note\": \"NIXL moves data by one-sided READ and WRITE only\"}"), 4U) << j;
    EXPECT_NE(j.find("\"domain\": \"shm\""), std::string::npos) << j;
    EXPECT_EQ(plugin_dirs(), dirs_before) << "a rank left its private NIXL plugin folder in /tmp";
#endif
}

// --rounds opens every path anew per round (rotating the open order) and pools the samples;
// raw2 is a second, separate instance of raw (the A/A control), with a ratio like any path.
TEST_F(BenchRun, RoundsReopenThePathsAndRaw2IsAControlInstance) {
    const std::string json = dir_ + "/rounds.json";
    const std::string cmd = std::string(LOOM_BENCH_PATH) +
                            " --local 2 --provider shm --paths loom,raw2,raw,nccl --ops pingpong,stream"
                            " --sizes 8,4K --reps 2 --rounds 3 --iters 20 --quiet --json " +
                            json + " > " + dir_ + "/table.txt";
    ASSERT_EQ(run(cmd), 0) << slurp(dir_ + "/table.txt");
    const std::string j = slurp(json);
    EXPECT_NE(j.find("\"paths\": [\"raw\", \"raw2\", \"loom\", \"nccl\"]"), std::string::npos) << j;
    EXPECT_NE(j.find("\"repetitions\": 2,"), std::string::npos) << j;
    EXPECT_NE(j.find("\"rounds\": 3,"), std::string::npos) << j;
    EXPECT_NE(j.find("\"all_verified\": true"), std::string::npos) << j;
    // 4 points x 4 paths, each with rounds x reps = 6 samples; every path but raw has a ratio.
    EXPECT_EQ(count(j, "\"samples\": 6}"), 16U) << j;
    EXPECT_EQ(count(j, "\"ratio_to_raw\": null"), 4U) << j;
    // Six paired samples are enough for a 95 % interval of every ratio (4 points x 3 paths).
    EXPECT_EQ(count(j, "\"ratio_ci95\": ["), 12U) << j;
    EXPECT_NE(slurp(dir_ + "/table.txt").find("3 rounds x 2 repetitions interleaved"), std::string::npos);
    EXPECT_NE(slurp(dir_ + "/table.txt").find("ci95"), std::string::npos);
    EXPECT_EQ(run(std::string(LOOM_BENCH_PATH) + " --rounds 0 2>/dev/null"), 2);
}

// --threading reaches the provider through both the raw path and loom's front ends (a domain
// opened FI_THREAD_DOMAIN: loom's completion registry runs without its lock) and is refused
// where the host library chooses.
TEST_F(BenchRun, ThreadingDomainRunsRawAndTheFrontEndsAndIsRefusedForPlugins) {
    const std::string json = dir_ + "/threading.json";
    const std::string cmd = std::string(LOOM_BENCH_PATH) +
                            " --local 2 --provider shm --threading domain --paths raw,loom,sender,asio"
                            " --ops pingpong,stream --sizes 8,4K --reps 1 --iters 20 --quiet --json " +
                            json + " > " + dir_ + "/table.txt";
    ASSERT_EQ(run(cmd), 0) << slurp(dir_ + "/table.txt");
    const std::string j = slurp(json);
    EXPECT_NE(j.find("\"threading\": \"domain\""), std::string::npos) << j;
    EXPECT_NE(j.find("\"all_verified\": true"), std::string::npos) << j;
    EXPECT_EQ(count(j, "\"sender\": {\"verified\": true"), 4U) << j;
    EXPECT_EQ(count(j, "\"asio\": {\"verified\": true"), 4U) << j;
    EXPECT_NE(slurp(dir_ + "/table.txt").find("threading domain"), std::string::npos);
    EXPECT_EQ(run(std::string(LOOM_BENCH_PATH) + " --threading domain --paths raw,nccl 2>/dev/null"), 2);
    EXPECT_EQ(run(std::string(LOOM_BENCH_PATH) + " --threading fid 2>/dev/null"), 2);
}

TEST_F(BenchRun, RejectsTheSocketsProviderAndUnknownOptions) {
    EXPECT_EQ(run(std::string(LOOM_BENCH_PATH) + " --provider sockets 2>/dev/null"), 2);
    EXPECT_EQ(run(std::string(LOOM_BENCH_PATH) + " --no-such-option 2>/dev/null"), 2);
    EXPECT_EQ(run(std::string(LOOM_BENCH_PATH) + " --help >/dev/null"), 0);
    EXPECT_EQ(run(std::string(LOOM_BENCH_PATH) + " --ops rma 2>/dev/null"), 2);  // rma_write or rma_read
    EXPECT_EQ(run(std::string(LOOM_BENCH_PATH) + " --help | grep -q atomic_fadd"), 0);
}

}  // namespace
