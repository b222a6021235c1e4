// Faults between PEs. On two hosts for real (each PE in its own network namespace, joined by
// a veth pair): puts and gets cross the link byte-exact; the link is taken down in the middle
// of large transfers both ways, and quiet fails in both PEs within LOOM_PEER_TIMEOUT_MS
// (neither died); the link is brought back and a new transport connects and moves data again.
// And a PE killed with operations in flight both ways.
#include "harness_support.hpp"
#include "netns.hpp"

#include <sys/mman.h>

#include <new>

namespace nvshmem_harness {
namespace {

using loom::test::netns_pair;

constexpr long link_timeout_ms = 1500;
constexpr std::size_t chunk = std::size_t{1} << 20;

auto byte_of(int writer, std::size_t i, int round) -> std::byte {
    return static_cast<std::byte>((writer * 77 + static_cast<int>(i % 251) + round * 13) & 0xff);
}

/// Puts a pattern into the peer's heap, reads it back, and checks what the peer put here.
void exchange(pe_env& e, int round) {
    const int peer = 1 - e.me;
    std::vector<std::byte> out(chunk), back(chunk);
    for (std::size_t i = 0; i < chunk; ++i) out[i] = byte_of(e.me, i, round);
    CHECK(put(e, peer, 0, out.data(), chunk, false) == 0 && quiet_all(e) == 0, "put across the link");
    CHECK(get(e, peer, 0, back.data(), chunk, false) == 0 && quiet_all(e) == 0, "get across the link");
    CHECK(back == out, "a get returned other bytes than the put wrote");
    e.barrier();
    for (std::size_t i = 0; i < chunk; ++i)
        CHECK(e.heap[i] == byte_of(peer, i, round), "byte %zu of the peer's put differs", i);
    e.barrier();  // both checked before the next round writes
}

/// 32 nbi puts and gets of 1 MiB towards `peer`, started, not waited for.
void start_large_transfers(pe_env& e, int peer, std::vector<std::byte>& src, std::vector<std::byte>& dst) {
    for (int i = 0; i < 32; ++i) {
        CHECK(put(e, peer, (i % 4) * chunk, src.data(), chunk, true) == 0, "put %d", i);
        CHECK(get(e, peer, (i % 4) * chunk, dst.data(), chunk, true) == 0, "get %d", i);
    }
}

void tear_down_after_failure(pe_env& e) {
    e.stop = true;
    e.proxy.join();
    CHECK(e.t->ops.release_mem_handle(&e.mine, e.t) == 0 && e.t->ops.finalize(e.t) == 0, "teardown after the loss");
    std::free(e.heap);
}

class nvshmem_faults : public ::testing::TestWithParam<std::string> {};

TEST_P(nvshmem_faults, link_loss_fails_quiet_in_both_pes_and_a_new_transport_connects_after) {
    auto ns = netns_pair::create();
    if (!ns) GTEST_SKIP() << "cannot make network namespaces here (needs root and iproute2)";
    // When the link went down, for both PEs (a page shared across the fork).
    void* page = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(page, MAP_FAILED);
    auto* down = new (page) std::atomic<clk::rep>(0);
    run_pes(2, GetParam(),
            {{"LOOM_IFACE", netns_pair::interface}, {"LOOM_PEER_TIMEOUT_MS", std::to_string(link_timeout_ms)}},
            [&](pe_env& e) {
                CHECK(ns->enter(e.me), "entering namespace %s", ns->name(e.me).c_str());
                bring_up(e);
                exchange(e, 1);

                // Large transfers both ways, then the link goes down under them.
                const int peer = 1 - e.me;
                std::vector<std::byte> src(chunk, std::byte{3}), dst(chunk);
                start_large_transfers(e, peer, src, dst);
                if (e.me == 0) {
                    // Taken before the command (the provider may fail operations the moment
                    // the link goes), published once the link is down.
                    const auto before = clk::now().time_since_epoch().count();
                    CHECK(ns->set_link(false), "taking the link down");
                    down->store(before);
                }
                const auto wait_limit = clk::now() + std::chrono::seconds(30);
                while (down->load() == 0) CHECK(clk::now() < wait_limit, "the link never went down");
                const clk::time_point lost{clk::duration(down->load())};
                for (int i = 0; i < 4; ++i) (void)put(e, peer, i * chunk, src.data(), chunk, true);
                const auto puts_ms = std::chrono::duration_cast<std::chrono::milliseconds>(clk::now() - lost).count();
                const int rc = quiet_all(e);
                const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(clk::now() - lost).count();
                std::fprintf(stderr, "PE %d: puts returned %lld ms, quiet %d %lld ms after the link went down\n", e.me,
                             static_cast<long long>(puts_ms), rc, static_cast<long long>(ms));
                CHECK(rc != 0, "quiet succeeded with the link down");
                // quiet waits at most the timeout; scheduling on a loaded 2-core machine.
                CHECK(ms <= link_timeout_ms + 1000, "quiet failed %lld ms after the loss", static_cast<long long>(ms));
                tear_down_after_failure(e);

                if (e.me == 0) CHECK(ns->set_link(true), "bringing the link back");
                e.barrier();  // over the bootstrap, which does not cross the link
                pe_env again;
                again.me = e.me;
                again.n = e.n;
                bring_up(again);
                exchange(again, 2);
                tear_down(again);
            });
    ::munmap(page, 4096);
}

// A PE killed with operations in flight both ways: the survivor's towards it fail within the
// peer timeout, what the dead PE had started towards the survivor harms nothing, and the
// survivor still reaches itself and finalizes.
TEST_P(nvshmem_faults, a_pe_killed_with_operations_both_ways_fails_them_without_a_hang) {
    run_pes(2, GetParam(), {{"LOOM_PEER_TIMEOUT_MS", std::to_string(link_timeout_ms)}},
            [](pe_env& e) {
                bring_up(e);
                exchange(e, 1);
                const int peer = 1 - e.me;
                std::vector<std::byte> src(chunk, std::byte{5}), dst(chunk);
                start_large_transfers(e, peer, src, dst);
                e.barrier();  // both have started theirs
                if (e.me == 1) ::raise(SIGKILL);
                const auto killed = clk::now();
                int rc = quiet_all(e);
                for (int i = 0; rc == 0 && i < 8; ++i) {  // what was done before the kill may have succeeded
                    rc = put(e, peer, 0, src.data(), chunk, true);
                    if (rc == 0) rc = quiet_all(e);
                }
                const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(clk::now() - killed).count();
                std::fprintf(stderr, "PE 0: operations failed (%d) %lld ms after the kill\n", rc,
                             static_cast<long long>(ms));
                CHECK(rc != 0, "operations towards a killed PE kept succeeding");
                CHECK(ms <= 2 * link_timeout_ms + 1000, "failed %lld ms after the kill", static_cast<long long>(ms));
                const std::uint64_t v = 11;
                CHECK(put(e, 0, 0, &v, 8, false) == 0, "a put to itself");
                (void)quiet_all(e);  // reports the earlier failures once
                CHECK(quiet_all(e) == 0, "quiet after the failures were reported");
                tear_down_after_failure(e);
            },
            {1});
}

// PEs that finalize apart (NVSHMEM's own barrier precedes finalize, but its PEs still reach
// the transport at different times) and live on: the later one's goodbyes must find the
// earlier one's receive endpoint open, or its finalize waits for the peer timeout (5 s here).
TEST_P(nvshmem_faults, a_pe_that_finalizes_later_is_not_left_waiting) {
    run_pes(2, GetParam(), {}, [](pe_env& e) {
        bring_up(e);
        exchange(e, 1);
        release_heap(e);
        if (e.me == 1) std::this_thread::sleep_for(std::chrono::milliseconds(300));
        const auto start = clk::now();
        CHECK(e.t->ops.finalize(e.t) == 0, "finalize");
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(clk::now() - start).count();
        std::fprintf(stderr, "PE %d: finalize took %lld ms\n", e.me, static_cast<long long>(ms));
        CHECK(ms < 2500, "finalize took %lld ms: a goodbye waited for the peer timeout", static_cast<long long>(ms));
        e.barrier();  // the earlier PE lives on meanwhile (its pid cannot tell that it closed)
        std::free(e.heap);
    });
}

INSTANTIATE_TEST_SUITE_P(network_providers, nvshmem_faults, ::testing::Values("tcp", "tcp;ofi_rxm"),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                             return i.param == "tcp" ? std::string("tcp") : std::string("tcp_ofi_rxm");
                         });

}  // namespace
}  // namespace nvshmem_harness
