// Soak through the NVSHMEM transport's ABI: init / connect / register the heap / put / get /
// quiet / finalize, cycle after cycle in two PEs, with both processes' open descriptors and
// resident memory sampled every tenth of the run. They must stay flat. LOOM_SOAK_CYCLES sets
// the length (scripts/test runs the short default; the `slow` test runs 10,000).
#include "soak.hpp"
#include "harness_support.hpp"

namespace nvshmem_harness {
namespace {

using loom::test::usage_log;

constexpr std::size_t soak_bytes = 65536 + 3;

class nvshmem_soak : public ::testing::TestWithParam<std::string> {};

TEST_P(nvshmem_soak, init_connect_transfer_finalize_cycles_keep_descriptors_and_memory_flat) {
    const long cycles = loom::test::soak_cycles(20);
    run_pes(
        2, GetParam(), {},
        [cycles](pe_env& first) {
            usage_log log("PE " + std::to_string(first.me));
            const long every = std::max(1L, cycles / 10);
            std::vector<std::byte> out(soak_bytes), back(soak_bytes);
            for (long c = 0; c < cycles; ++c) {
                if (c <= 1) log.take(c);  // the growth counts from cycle 1
                pe_env e;
                e.me = first.me;
                e.n = first.n;
                bring_up(e);
                const int peer = 1 - e.me;
                for (std::size_t i = 0; i < soak_bytes; ++i)
                    out[i] = static_cast<std::byte>((i * 7 + static_cast<std::size_t>(c) + e.me) & 0xff);
                CHECK(put(e, peer, 0, out.data(), soak_bytes, true) == 0 && quiet_all(e) == 0, "put (cycle %ld)", c);
                CHECK(get(e, peer, 0, back.data(), soak_bytes, false) == 0 && quiet_all(e) == 0, "get (cycle %ld)", c);
                CHECK(back == out, "the get returned other bytes (cycle %ld)", c);
                tear_down(e);
                if ((c + 1) % every == 0) log.take(c + 1);
            }
            CHECK(log.descriptor_growth() <= 4, "%d more descriptors after the soak", log.descriptor_growth());
            CHECK(log.resident_growth_kib() <= 8 * 1024, "resident memory grew by %ld KiB", log.resident_growth_kib());
        },
        // Under CTest's own limit for the `slow` run (7,200 s): a loaded machine takes 0.4 s a cycle.
        {}, std::chrono::seconds(7000));
}

INSTANTIATE_TEST_SUITE_P(providers, nvshmem_soak, ::testing::Values("shm", "tcp", "tcp;ofi_rxm"),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                             std::string s = i.param;
                             std::ranges::replace(s, ';', '_');
                             return s;
                         });

}  // namespace
}  // namespace nvshmem_harness
