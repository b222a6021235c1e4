// In-process memory-registration events and raw keys.
//  - RMA events: a registration with .rma_events bound to a counter (fi_mr_bind with
//    FI_REMOTE_WRITE) and enabled counts each remote write into it; ordering rules (no
//    binding after enable) and argument checks. The write is issued with fi_write on
//    ep.native() (loopback) so these tests do not depend on loom's RMA layer.
//  - Raw keys: no provider here uses FI_MR_RAW, so export_raw and mapped_remote_memory::map
//    are exercised on their argument checks and the not_supported path.
#include <gtest/gtest.h>
#include <rdma/fi_rma.h>

#include <array>
#include <chrono>
#include <limits>
#include <loom/counter.hpp>
#include <loom/memory_region.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core_support.hpp"

using namespace core_test;
using namespace std::chrono_literals;

namespace {

using loom::capability;
using loom::mr_access_flags;

constexpr auto rma_caps = capability::msg | capability::rma | capability::read | capability::write |
                          capability::remote_read | capability::remote_write | capability::rma_event;

auto events_required(const std::string& provider) -> bool {
    static const std::set<std::string> required{"shm", "tcp", "sockets"};
    return required.contains(provider);
}

/// Providers implementing fi_mr_bind with a counter (per-registration RMA events). shm, tcp
/// and rxd list FI_RMA_EVENT but their registrations have no bind operation (fi_mr_bind:
/// -FI_ENOSYS); they count remote writes on endpoint-bound counters instead.
auto mr_counter_binding(const std::string& provider) -> bool { return provider == "sockets"; }

class core_mr_events : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        const auto err = open_loop(GetParam(), {.caps = rma_caps}, s_);
        if (!err.empty() && !events_required(GetParam()) && err.starts_with("find_info: no_data"))
            GTEST_SKIP() << GetParam() << " offers no rma_event entry";
        ASSERT_TRUE(err.empty()) << GetParam() << ": " << err;
        ASSERT_TRUE(s_.ep.capabilities().has(capability::rma_event)) << loom::to_string(s_.ep.capabilities());
        prog_.emplace(s_.cq);
        auto src = loom::memory_region::register_memory(
            s_.domain, std::span{src_}, mr_access_flags::read | mr_access_flags::write | mr_access_flags::send);
        ASSERT_TRUE(src) << outcome(src.error());
        src_mr_ = std::move(*src);
        loom_test::fill_pattern(src_, 77);
    }

    /// fi_write of src_[0, len) to `remote` + offset, waiting for its local completion.
    void write(const loom::remote_memory& remote, std::size_t offset, std::size_t len) {
        loom::request_context ctx;
        auto r = prog_->retry(
            [&] {
                return loom::check_native(::fi_write(s_.ep.native(), src_.data(), len, src_mr_.descriptor(),
                                                     s_.self.get(), remote.addr + offset, remote.key, &ctx));
            },
            2s);
        ASSERT_EQ(outcome(r), "ok");
        (void)completed(*prog_, &ctx);
    }

    /// Where a registration cannot count (mr_counter_binding false): an endpoint counter bound with
    /// counter_bind::remote_write, and what one remote write does to it.
    void count_with_an_endpoint_counter() {
        loop_stack t;
        ASSERT_NO_FATAL_FAILURE(must_open_loop(
            GetParam(), {.caps = rma_caps, .counter = true, .counter_flags = loom::counter_bind::remote_write}, t));
        std::vector<std::byte> tbuf(256);
        auto tmr = loom::memory_region::register_memory(
            t.domain, std::span{tbuf},
            loom::memory_registration{.access = mr_access_flags::remote_write, .rma_events = true});
        ASSERT_TRUE(tmr) << outcome(tmr.error());
        auto tremote = loom::remote_memory::from_mr(*tmr);
        ASSERT_TRUE(tremote) << outcome(tremote.error());
        auto tsrc = loom::memory_region::register_memory(t.domain, std::span{src_},
                                                         mr_access_flags::write | mr_access_flags::read);
        ASSERT_TRUE(tsrc) << outcome(tsrc.error());
        loom_test::progress tprog(t.cq);
        loom::request_context ctx;
        ASSERT_EQ(outcome(tprog.retry(
                      [&] {
                          return loom::check_native(::fi_write(t.ep.native(), src_.data(), 64, tsrc->descriptor(),
                                                               t.self.get(), tremote->addr, tremote->key, &ctx));
                      },
                      2s)),
                  "ok");
        (void)completed(tprog, &ctx);
        if (GetParam() == "tcp") {
            // libfabric 2.1 native tcp (RDM) lists FI_RMA_EVENT but counts remote writes
            // neither per registration nor on endpoint counters.
            EXPECT_EQ(outcome(t.cntr.wait(1, 200ms)), "timed_out") << "tcp now counts remote writes";
        } else {
            EXPECT_EQ(outcome(t.cntr.wait(1, 5s)), "ok") << "the endpoint's remote-write counter did not count";
        }
        EXPECT_FALSE(loom_test::check_pattern(std::span{tbuf}.first(64), 77).has_value()) << "the write did not land";
        quirk(GetParam(),
              "endpoint counter_bind::remote_write after one remote write: " + std::to_string(t.cntr.read()));
    }

    loop_stack s_;
    std::optional<loom_test::progress> prog_;
    std::array<std::byte, 512> src_{};
    loom::memory_region src_mr_;
};

TEST_P(core_mr_events, remote_writes_increment_the_bound_counter) {
    std::vector<std::byte> target(4096);
    auto mr = loom::memory_region::register_memory(
        s_.domain, std::span{target},
        loom::memory_registration{.access = mr_access_flags::remote_write | mr_access_flags::remote_read,
                                  .rma_events = true});
    ASSERT_TRUE(mr) << outcome(mr.error());
    EXPECT_TRUE(mr->rma_events());
    const auto mode = s_.domain.get_memory_region_mode();
    EXPECT_EQ(mr->enable_required(), mode.any(loom::mr_mode_flags::rma_event | loom::mr_mode_flags::endpoint));
    quirk(GetParam(),
          "mr_mode " + loom::to_string(mode) + ", enable_required " + (mr->enable_required() ? "yes" : "no"));
    auto c = loom::counter::create(s_.domain);
    ASSERT_TRUE(c) << outcome(c.error());
    auto bound = mr->bind(*c);
    if (!mr_counter_binding(GetParam())) {
        EXPECT_EQ(outcome(bound), "not_implemented") << "the provider changed: extend mr_counter_binding()";
        quirk(GetParam(), "fi_mr_bind(counter, FI_REMOTE_WRITE) -> " + outcome(bound));
        ASSERT_NO_FATAL_FAILURE(count_with_an_endpoint_counter());
        return;
    }
    ASSERT_EQ(outcome(bound), "ok");
    EXPECT_FALSE(mr->enabled());
    ASSERT_EQ(outcome(mr->enable()), "ok");
    EXPECT_TRUE(mr->enabled());
    EXPECT_EQ(outcome(mr->enable()), "ok") << "enable is idempotent";
    EXPECT_EQ(outcome(mr->bind(*c)), "bad_state") << "binding after enable";
    EXPECT_EQ(c->read(), 0u);

    auto remote = loom::remote_memory::from_mr(*mr);
    ASSERT_TRUE(remote) << outcome(remote.error());
    ASSERT_NO_FATAL_FAILURE(write(*remote, 0, 128));
    EXPECT_EQ(outcome(c->wait(1, 5s)), "ok") << "the remote write was not counted";
    EXPECT_FALSE(loom_test::check_pattern(std::span{target}.first(128), 77).has_value());
    ASSERT_NO_FATAL_FAILURE(write(*remote, 1024, 64));
    EXPECT_EQ(outcome(c->wait(2, 5s)), "ok") << "the second remote write was not counted";
    EXPECT_FALSE(loom_test::check_pattern(std::span{target}.subspan(1024, 64), 77).has_value());

    // A registration without a bound counter: writes into it are not counted on c.
    std::vector<std::byte> plain(256);
    auto other = loom::memory_region::register_memory(s_.domain, std::span{plain}, mr_access_flags::remote_write);
    ASSERT_TRUE(other) << outcome(other.error());
    auto other_remote = loom::remote_memory::from_mr(*other);
    ASSERT_TRUE(other_remote) << outcome(other_remote.error());
    ASSERT_NO_FATAL_FAILURE(write(*other_remote, 0, 32));
    std::this_thread::sleep_for(50ms);
    (void)s_.cq.poll();
    EXPECT_EQ(c->read(), 2u) << "a write into another registration was counted";
    EXPECT_EQ(c->read_error_count(), 0u);
    EXPECT_FALSE(loom_test::check_pattern(std::span{plain}.first(32), 77).has_value());

    // Close order: registrations, then the counter they are bound to.
    EXPECT_EQ(outcome(mr->close()), "ok");
    EXPECT_EQ(outcome(other->close()), "ok");
    EXPECT_EQ(outcome(c->close()), "ok");
}

TEST_P(core_mr_events, binding_checks) {
    std::vector<std::byte> buf(256);
    auto c = loom::counter::create(s_.domain);
    ASSERT_TRUE(c) << outcome(c.error());
    // Without .rma_events.
    auto plain = loom::memory_region::register_memory(s_.domain, std::span{buf}, mr_access_flags::remote_write);
    ASSERT_TRUE(plain) << outcome(plain.error());
    EXPECT_FALSE(plain->rma_events());
    EXPECT_EQ(outcome(plain->bind(*c)), "invalid_argument");
    // Events requested, but no remote-write access to count.
    auto read_only = loom::memory_region::register_memory(
        s_.domain, std::span{buf},
        loom::memory_registration{.access = mr_access_flags::remote_read, .rma_events = true});
    if (read_only) {
        EXPECT_EQ(outcome(read_only->bind(*c)), "invalid_argument");
    } else {
        quirk(GetParam(), "remote_read registration with FI_RMA_EVENT -> " + outcome(read_only.error()));
    }
    // A counter of another domain.
    auto dom2 = loom::domain::create(s_.fabric, s_.info);
    ASSERT_TRUE(dom2) << outcome(dom2.error());
    auto foreign = loom::counter::create(*dom2);
    ASSERT_TRUE(foreign) << outcome(foreign.error());
    auto mr = loom::memory_region::register_memory(
        s_.domain, std::span{buf},
        loom::memory_registration{.access = mr_access_flags::remote_write, .rma_events = true});
    ASSERT_TRUE(mr) << outcome(mr.error());
    EXPECT_EQ(outcome(mr->bind(*foreign)), "invalid_argument");
    loom::counter closed_counter;
    EXPECT_EQ(outcome(mr->bind(closed_counter)), "invalid_argument");
    // An endpoint of another domain.
    auto ep2 = loom::endpoint::create(*dom2, s_.info);
    ASSERT_TRUE(ep2) << outcome(ep2.error());
    EXPECT_EQ(outcome(mr->bind(*ep2)), "invalid_argument");
    // Binding to this domain's endpoint goes to the provider (only FI_MR_ENDPOINT domains need it).
    quirk(GetParam(), "fi_mr_bind(endpoint) on a non-endpoint-mode domain -> " + outcome(mr->bind(s_.ep)));
    ASSERT_EQ(outcome(mr->enable()), "ok");
    EXPECT_EQ(outcome(mr->bind(s_.ep)), "bad_state");
    EXPECT_EQ(outcome(mr->bind(*c)), "bad_state");
    // A closed registration.
    ASSERT_EQ(outcome(plain->close()), "ok");
    EXPECT_EQ(outcome(plain->bind(*c)), "invalid_argument");
    EXPECT_EQ(outcome(plain->enable()), "invalid_argument");
    ep2 = loom::result<loom::endpoint>{};
    foreign = loom::result<loom::counter>{};
    EXPECT_EQ(outcome(dom2->close()), "ok");
}

INSTANTIATE_TEST_SUITE_P(providers, core_mr_events, ::testing::Values("shm", "tcp", "sockets", "udp;ofi_rxd"),
                         param_name);

// ================================================================ raw keys
class core_raw_keys : public ::testing::TestWithParam<std::string> {};

TEST_P(core_raw_keys, scalar_key_domains_refuse_raw_exports_and_mappings) {
    loop_stack s;
    ASSERT_NO_FATAL_FAILURE(must_open_loop(GetParam(), {}, s));
    const auto mode = s.domain.get_memory_region_mode();
    ASSERT_FALSE(mode.any(loom::mr_mode_flags::raw)) << GetParam() << " now uses FI_MR_RAW: extend this test";
    std::vector<std::byte> buf(128);
    auto mr = loom::memory_region::register_memory(s.domain, std::span{buf}, mr_access_flags::remote_write);
    ASSERT_TRUE(mr) << outcome(mr.error());
    EXPECT_TRUE(mr->key().has_value()) << outcome(mr->key().error());
    EXPECT_EQ(outcome(mr->export_raw()), "not_supported");
    ASSERT_EQ(outcome(mr->close()), "ok");
    EXPECT_EQ(outcome(mr->export_raw()), "invalid_argument") << "closed registration";

    const long children = s.domain.open_children();
    auto good = loom::raw_remote_memory{.base_addr = 0x10000, .addr = 0x10000, .length = 64, .key = {1, 2, 3, 4}};
    auto map = [&](loom::raw_remote_memory r) {
        return outcome(loom::mapped_remote_memory::map(s.domain, std::move(r)));
    };
    EXPECT_EQ(map(good), "not_supported");
    auto empty_key = good;
    empty_key.key.clear();
    EXPECT_EQ(map(empty_key), "invalid_argument");
    auto empty_range = good;
    empty_range.length = 0;
    EXPECT_EQ(map(empty_range), "invalid_argument");
    auto wraps = good;
    wraps.addr = std::numeric_limits<std::uint64_t>::max() - 10;
    wraps.length = 100;
    EXPECT_EQ(map(wraps), "invalid_argument");
    auto last_byte = good;
    last_byte.addr = std::numeric_limits<std::uint64_t>::max() - 99;
    last_byte.length = 100;
    EXPECT_EQ(map(last_byte), "not_supported") << "a range ending at the top of the address space is valid";
    const auto dattr = s.info.get_domain_attr();
    ASSERT_TRUE(dattr.has_value());
    if (dattr->mr_key_size != 0) {
        auto too_long = good;
        too_long.key.assign(dattr->mr_key_size + 1, 0xAB);
        EXPECT_EQ(map(too_long), "invalid_argument");
    }
    EXPECT_EQ(s.domain.open_children(), children) << "a refused mapping left a child counted";
}

INSTANTIATE_TEST_SUITE_P(providers, core_raw_keys, ::testing::ValuesIn(providers()), param_name);

}  // namespace
