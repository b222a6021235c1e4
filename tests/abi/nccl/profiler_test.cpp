// Profiler events (v10+): one start per operation with a handle, one stop each.
#include "harness_support.hpp"

namespace nccl_harness {
namespace {

// v10+: one start event per isend and per sub-receive given a profiler handle, each stopped
// exactly once when test() reports the request done or close() fails it; none without a handle.
class nccl_profiler : public nccl_abi {};

auto prof_starts() -> std::vector<prof_record> {
    std::lock_guard lock(g_prof_mu);
    std::vector<prof_record> out;
    for (const auto& r : g_prof_log)
        if (r.type == profiler_net_start) out.push_back(r);
    return out;
}
auto prof_stopped(void* handle) -> bool {
    std::lock_guard lock(g_prof_mu);
    return std::ranges::any_of(g_prof_log,
                               [&](const prof_record& r) { return r.type == profiler_net_stop && r.handle == handle; });
}
auto prof_open() -> std::size_t {
    std::lock_guard lock(g_prof_mu);
    return g_prof_open.size();
}

/// The receive events of the grouped irecv (handles 0xA1 and 0xA3: sub-receives 0 and 2), all
/// stopped.
void check_receive_events(const std::vector<prof_record>& starts) {
    for (const auto& r : starts) {
        const bool first = r.phandle == fake(0xA1);
        CHECK(first || r.phandle == fake(0xA3), "unexpected parent %p", r.phandle);
        CHECK(r.id == loom_profiler_id_v1 && r.info.kind == loom_event_recv, "id/kind");
        CHECK(r.info.slot == (first ? 0U : 2U) && r.info.tag == (first ? 1 : 3) &&
                  r.info.size == (first ? 64U : 4096U) && r.info.rails >= 1 && !r.device.empty(),
              "receive event: slot %u tag %d size %llu", r.info.slot, r.info.tag,
              static_cast<unsigned long long>(r.info.size));
        CHECK(prof_stopped(r.handle), "receive event not stopped");
    }
}

/// Two receives nobody satisfies: closing the comm stops their events.
void close_stops_unsatisfied_receive_events(api& a, const pipes& p, void* rc, void* l) {
    std::vector<std::byte> b2(4096), b3(32);
    std::array<void*, 2> ph2{fake(0xB1), fake(0xB2)};
    std::array<int, 2> t2{50, 51};
    std::array<void*, 2> d2{b2.data(), b3.data()};
    std::array<std::size_t, 2> s2{b2.size(), b3.size()};
    void* never = nullptr;
    CHECK(a.irecv_p(rc, 2, d2.data(), s2.data(), t2.data(), nullptr, ph2.data(), &never) == 0 && never != nullptr,
          "irecv never satisfied");
    CHECK(prof_open() == 2, "open events %zu", prof_open());
    await_peer(p.to_receiver[0]);
    CHECK(a.close_recv(rc) == 0 && a.close_listen(l) == 0, "close");
    CHECK(prof_open() == 0, "close left %zu events open", prof_open());
}

/// The receiving side: a grouped irecv with handles on two of three sub-receives and a single
/// irecv without one; their events, then close with receives outstanding.
void receive_with_events(api& a, const pipes& p) {
    g_init_prof = recorder;
    void* l = nullptr;
    void* rc = accept_side(a, p, &l);
    CHECK(a.irecv_p != nullptr, "no profiler entry points");
    std::vector<std::byte> b0(64), b1(100000), b2(4096), b3(32);
    std::array<void*, 3> d{b0.data(), b1.data(), b2.data()};
    std::array<std::size_t, 3> s{b0.size(), b1.size(), b2.size()};
    std::array<int, 3> tags{1, 2, 3};
    std::array<void*, 3> ph{fake(0xA1), nullptr, fake(0xA3)};
    void* grouped = nullptr;
    CHECK(a.irecv_p(rc, 3, d.data(), s.data(), tags.data(), nullptr, ph.data(), &grouped) == 0 && grouped != nullptr,
          "grouped irecv");
    void* d3 = b3.data();
    std::size_t s3 = b3.size();
    int t3 = 4;
    void* single = nullptr;
    CHECK(a.irecv_p(rc, 1, &d3, &s3, &t3, nullptr, nullptr, &single) == 0 && single != nullptr, "irecv");
    const auto starts = prof_starts();
    CHECK(starts.size() == 2 && prof_open() == 2, "expected 2 open receive events, got %zu", starts.size());
    signal_peer(p.to_sender[1]);
    std::array<int, 3> got{};
    CHECK(wait(a, grouped, got.data()) == 0 && got[0] == 64 && got[1] == 100000 && got[2] == 4096, "grouped");
    CHECK(first_bad(b1.data(), b1.size(), 2) < 0 && first_bad(b2.data(), b2.size(), 3) < 0, "payload");
    CHECK(wait(a, single, nullptr) == 0, "single");
    CHECK(prof_open() == 0, "%zu receive events left open after completion", prof_open());
    check_receive_events(starts);
    close_stops_unsatisfied_receive_events(a, p, rc, l);
    CHECK(prof_starts().size() == 4, "starts %zu", prof_starts().size());
}

/// The sending side: four sends, three with handles; their events; then a rendezvous send whose
/// receive never comes, stopped by closeSend.
void send_with_events(api& a, const pipes& p) {
    g_init_prof = recorder;
    void* sc = connect_side(a, p);
    std::vector<std::byte> b1(100000), b2(4096), big_buf(std::size_t{1} << 20);
    fill(b1.data(), b1.size(), 2);
    fill(b2.data(), b2.size(), 3);
    std::vector<std::byte> b0(64), b3(32);
    await_peer(p.to_sender[0]);
    const std::vector<void*> reqs{post_send(a, sc, b0.data(), 64, 1, nullptr, fake(0xC1)),
                                  post_send(a, sc, b1.data(), b1.size(), 2, nullptr, fake(0xC2)),
                                  post_send(a, sc, b2.data(), b2.size(), 3, nullptr),
                                  post_send(a, sc, b3.data(), 32, 4, nullptr, fake(0xC4))};
    CHECK(prof_starts().size() == 3, "expected 3 send events, got %zu", prof_starts().size());
    for (void* r : reqs) CHECK(wait(a, r, nullptr) == 0, "send");
    CHECK(prof_open() == 0, "%zu send events left open after completion", prof_open());
    for (const auto& r : prof_starts()) {
        CHECK(r.id == loom_profiler_id_v1 && r.info.kind == loom_event_send && r.info.slot == 0, "id/kind");
        const std::size_t want = r.phandle == fake(0xC1) ? 64 : r.phandle == fake(0xC2) ? 100000 : 32;
        CHECK(r.info.size == want && r.info.protocol <= 1 && !r.device.empty(), "send event size %llu",
              static_cast<unsigned long long>(r.info.size));
        if (want < 1000) CHECK(r.info.protocol == 0, "small send reported as rendezvous");
        CHECK(prof_stopped(r.handle), "send event not stopped");
    }
    (void)post_send(a, sc, big_buf.data(), big_buf.size(), 999, nullptr, fake(0xC9));
    CHECK(prof_open() == 1, "open %zu", prof_open());
    CHECK(a.close_send(sc) == 0, "closeSend");
    CHECK(prof_open() == 0, "closeSend left %zu events open", prof_open());
    signal_peer(p.to_receiver[1]);
}

TEST_P(nccl_profiler, events_start_per_operation_and_stop_once) {
    pair([](api& a, const pipes& p) { receive_with_events(a, p); },
         [](api& a, const pipes& p, pid_t) { send_with_events(a, p); });
}

// Registrations through regMrDmaBuf (a memfd standing in for the DMA-BUF: libfabric's utility
// providers register its mapped range) and iflush by RMA read (LOOM_FLUSH=1 reads back every
// registered buffer, as it does for device memory on GPU machines).

INSTANTIATE_TEST_SUITE_P(profiler, nccl_profiler,
                         ::testing::Values(param{"shm", 12}, param{"tcp;ofi_rxm", 11}, param{"tcp", 10},
                                           param{"tcp;ofi_rxm", 12, "LOOM_PROGRESS_THREAD=1"}),
                         name_of);

}  // namespace
}  // namespace nccl_harness
