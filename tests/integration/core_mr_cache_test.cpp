// In-process MR cache over real providers: cached registrations carry loopback sends, hits
// reuse them, invalidated handles stay usable until released, bounded caches evict, and the
// endpoint rules (foreign endpoint, FI_MR_ENDPOINT domains) are enforced before registration.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <loom/mr_cache.hpp>
#include <memory>

#include "core_support.hpp"
#include "soak.hpp"

#include <sys/mman.h>

using namespace core_test;
using namespace std::chrono_literals;

namespace {

const std::vector<std::string>& cache_providers() {
    static const std::vector<std::string> all{"shm", "tcp;ofi_rxm", "tcp"};
    return all;
}

/// Page-aligned heap memory, so page rounding is predictable and buffers never share a page.
struct page_buffer {
    explicit page_buffer(std::size_t pages)
        : size(pages * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE))),
          p(static_cast<std::byte*>(std::aligned_alloc(static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)), size))) {
        std::fill_n(p.get(), size, std::byte{0});
    }
    auto span() -> std::span<std::byte> { return {p.get(), size}; }
    struct free_deleter {
        void operator()(std::byte* b) const noexcept { std::free(b); }
    };
    std::size_t size;
    std::unique_ptr<std::byte, free_deleter> p;
};

const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));

class core_mr_cache : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override { ASSERT_NO_FATAL_FAILURE(must_open_loop(GetParam(), {}, s_)); }

    void roundtrip(std::span<const std::byte> out, void* out_desc, std::span<std::byte> in, void* in_desc) {
        loop_roundtrip(s_, out, out_desc, in, in_desc);
    }

    loop_stack s_;
};

TEST_P(core_mr_cache, cached_registrations_carry_a_loopback_send) {
    const auto mode = s_.domain.get_memory_region_mode();
    quirk(GetParam(), "mr_mode " + loom::to_string(mode));
    auto cache = loom::make_mr_cache(s_.domain, s_.ep);
    ASSERT_TRUE(cache.status()) << outcome(cache.status());
    page_buffer out_buf(3), in_buf(3);
    const auto out = std::span<const std::byte>(out_buf.span()).subspan(100, page + 500);
    const auto in = in_buf.span().subspan(100, page + 500);
    loom_test::fill_pattern(out_buf.span(), 31);

    auto tx = cache.lookup(out, loom::mr_access_flags::send);
    ASSERT_TRUE(tx) << outcome(tx.error());
    auto rx = cache.lookup(in, loom::mr_access_flags::recv);
    ASSERT_TRUE(rx) << outcome(rx.error());
    EXPECT_TRUE(tx->contains(out));
    EXPECT_TRUE(rx->contains(in));
    EXPECT_EQ(tx->size(), 2 * page) << "page-rounded: [0, 2 pages) of the buffer";
    EXPECT_EQ(tx->address(), out_buf.span().data());
    ASSERT_TRUE(tx->region().valid());
    EXPECT_TRUE(tx->region().contains(out));
    EXPECT_TRUE(tx->region().usable_with(s_.ep));
    EXPECT_EQ(tx->descriptor(), tx->region().descriptor());
    if (mode.any(loom::mr_mode_flags::raw)) {
        EXPECT_EQ(outcome(tx->key()), "not_supported");
    } else {
        const auto k = tx->key();
        EXPECT_TRUE(k || loom::is_again(k.error())) << outcome(k);
    }

    ASSERT_NO_FATAL_FAILURE(roundtrip(out, tx->descriptor(), in, rx->descriptor()));
    EXPECT_TRUE(std::equal(in.begin(), in.end(), out.begin()));

    // Same buffers again: hits, the same registrations; send through the memory_region overload.
    tx->release();
    rx->release();
    auto tx2 = cache.lookup(out.subspan(10, 100), loom::mr_access_flags::send);
    auto rx2 = cache.lookup(in, loom::mr_access_flags::recv);
    ASSERT_TRUE(tx2 && rx2);
    std::fill(in.begin(), in.end(), std::byte{0});
    loom::request_context rctx, sctx;
    loom_test::progress prog(s_.cq);
    ASSERT_EQ(outcome(s_.ep.recv(in, rx2->region(), loom::fabric_addrs::unspecified, &rctx)), "ok");
    ASSERT_EQ(outcome(prog.retry([&] { return s_.ep.send(out, tx2->region(), s_.self, &sctx); }, 2s)), "ok");
    EXPECT_EQ(completed(prog, &rctx).bytes_transferred, out.size());
    (void)completed(prog, &sctx);
    EXPECT_TRUE(std::equal(in.begin(), in.end(), out.begin()));

    const auto st = cache.stats();
    EXPECT_EQ(st.hits, 2u);
    EXPECT_EQ(st.misses, 2u);
    EXPECT_EQ(st.registrations, 2u);
    EXPECT_EQ(st.entries, 2u);
    EXPECT_EQ(st.registered_bytes, 4 * page);
    EXPECT_EQ(cache.check_invariants(), "");
    tx2->release();
    rx2->release();
    EXPECT_EQ(cache.clear(), 2u);
    EXPECT_EQ(cache.stats().entries, 0u);
}

TEST_P(core_mr_cache, invalidated_handle_stays_usable_until_released) {
    auto cache = loom::mr_cache(s_.domain);
    ASSERT_TRUE(cache.status()) << "no provider here requires FI_MR_ENDPOINT";
    page_buffer out_buf(1), in_buf(1);
    loom_test::fill_pattern(out_buf.span(), 5);
    const std::span<const std::byte> out = out_buf.span().first(256);
    auto tx = cache.lookup(out, loom::mr_access_flags::send).value();
    auto rx = cache.lookup(in_buf.span().first(256), loom::mr_access_flags::recv).value();
    const long children = s_.domain.open_children();
    EXPECT_EQ(cache.invalidate(out_buf.span().data(), out_buf.size), 1u);
    EXPECT_EQ(s_.domain.open_children(), children) << "the held registration is still open";
    ASSERT_NO_FATAL_FAILURE(roundtrip(out, tx.descriptor(), in_buf.span().first(256), rx.descriptor()));
    EXPECT_TRUE(std::equal(out.begin(), out.end(), in_buf.span().begin()));
    // A new lookup registers again; the old registration closes on release.
    auto tx_new = cache.lookup(out, loom::mr_access_flags::send).value();
    EXPECT_EQ(s_.domain.open_children(), children + 1);
    tx.release();
    EXPECT_EQ(s_.domain.open_children(), children);
    const auto st = cache.stats();
    EXPECT_EQ(st.invalidations, 1u);
    EXPECT_EQ(st.registrations, 3u);
    EXPECT_EQ(st.entries, 2u);
}

// Registration churn: buffers mapped, registered through the cache, used for a loopback send,
// released, invalidated (as a memory monitor does on unmap) and unmapped, cycle after cycle.
// Nothing is left registered and the process's descriptors and resident memory stay flat.
// LOOM_SOAK_CYCLES sets the length (the `slow` test runs 100,000).
TEST_P(core_mr_cache, registration_churn_with_invalidation_keeps_memory_flat) {
    auto cache = loom::make_mr_cache(s_.domain, s_.ep);
    ASSERT_TRUE(cache.status()) << outcome(cache.status());
    const long cycles = loom::test::soak_cycles(2000);
    const long every = std::max(1L, cycles / 10);
    const long children = s_.domain.open_children();
    constexpr std::size_t size = 16384 + 100;
    const std::size_t mapped = 2 * page + size;
    loom::test::usage_log log("mr cache churn");
    for (long c = 0; c < cycles; ++c) {
        if (c <= 1) log.take(c);
        void* m = ::mmap(nullptr, 2 * mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ASSERT_NE(m, MAP_FAILED);
        auto* base = static_cast<std::byte*>(m);
        // A different offset each cycle: registrations start and end at varying places.
        const std::span<std::byte> out{base + (c % 97) * 8, size}, in{base + mapped + (c % 89) * 8, size};
        loom_test::fill_pattern(out, static_cast<int>(c & 0x7f));
        {
            auto tx = cache.lookup(std::span<const std::byte>(out), loom::mr_access_flags::send);
            auto rx = cache.lookup(in, loom::mr_access_flags::recv);
            ASSERT_TRUE(tx && rx) << "cycle " << c;
            ASSERT_NO_FATAL_FAILURE(roundtrip(out, tx->descriptor(), in, rx->descriptor()));
            ASSERT_TRUE(std::equal(in.begin(), in.end(), out.begin())) << "cycle " << c;
        }
        EXPECT_EQ(cache.invalidate(base, 2 * mapped), 2u) << "cycle " << c;
        ASSERT_EQ(::munmap(m, 2 * mapped), 0);
        if ((c + 1) % every == 0) log.take(c + 1);
    }
    const auto st = cache.stats();
    EXPECT_EQ(st.entries, 0u);
    EXPECT_EQ(st.invalidations, static_cast<std::uint64_t>(2 * cycles));
    EXPECT_EQ(s_.domain.open_children(), children) << "a registration was left open";
    EXPECT_LE(log.descriptor_growth(), 4);
    // On ofi_rxm resident memory grows ~0.19 KiB per cycle up to ~65,000 cycles, then stays
    // (+12 MiB) while the heap stays flat: memory allocated at the first connection touched
    // for the first time (docs/results/2026-12-05-rxm-registration-churn.md).
    EXPECT_LE(log.resident_growth_kib(), GetParam() == "tcp;ofi_rxm" ? 16 * 1024 : 8 * 1024);
}

TEST_P(core_mr_cache, bounded_cache_evicts_idle_registrations) {
    auto cache = loom::make_mr_cache<loom::provider::generic_tag>(s_.domain, loom::mr_cache_limits{.max_entries = 1});
    ASSERT_TRUE(cache.status()) << outcome(cache.status());
    page_buffer a(1), b(1);
    const long before = s_.domain.open_children();
    {
        auto h = cache.lookup(a.span(), loom::mr_access_flags::send).value();
    }
    EXPECT_EQ(s_.domain.open_children(), before + 1);
    {
        auto h = cache.lookup(b.span(), loom::mr_access_flags::send).value();
        EXPECT_EQ(s_.domain.open_children(), before + 1) << "the idle registration of `a` was evicted";
        auto h2 = cache.lookup(a.span(), loom::mr_access_flags::send).value();  // live handles exceed the bound
        EXPECT_EQ(s_.domain.open_children(), before + 2);
    }
    EXPECT_EQ(s_.domain.open_children(), before + 1);
    const auto st = cache.stats();
    EXPECT_EQ(st.registrations, 3u);
    EXPECT_EQ(st.evictions, 2u);
    EXPECT_EQ(st.entries, 1u);
}

TEST_P(core_mr_cache, endpoint_rules) {
    const auto mode = s_.domain.get_memory_region_mode();
    loop_stack other;
    ASSERT_NO_FATAL_FAILURE(must_open_loop(GetParam(), {}, other));
    ASSERT_FALSE(other.ep.belongs_to(s_.domain));
    // An endpoint of another domain: refused by the factory and by every lookup.
    auto foreign = loom::make_mr_cache(s_.domain, other.ep);
    EXPECT_EQ(outcome(foreign.status()), "invalid_argument");
    page_buffer buf(1);
    const long before = s_.domain.open_children();
    {
        loom::mr_cache c(s_.domain, other.ep);
        EXPECT_EQ(outcome(c.lookup(buf.span(), loom::mr_access_flags::send)), "invalid_argument");
        EXPECT_EQ(c.stats(), loom::mr_cache_stats{});
        EXPECT_EQ(s_.domain.open_children(), before) << "nothing was registered";
    }
    // The domain's own endpoint works; without one only FI_MR_ENDPOINT domains refuse.
    auto own = loom::make_mr_cache(s_.domain, s_.ep);
    EXPECT_TRUE(own.status()) << outcome(own.status());
    auto bare = loom::make_mr_cache(s_.domain);
    if (mode.any(loom::mr_mode_flags::endpoint)) {
        EXPECT_EQ(outcome(bare.status()), "invalid_argument");
    } else {
        ASSERT_TRUE(bare.status()) << outcome(bare.status());
        auto h = bare.lookup(buf.span(), loom::mr_access_flags::send);
        ASSERT_TRUE(h) << outcome(h.error());
        EXPECT_FALSE(h->region().usable_with(other.ep));
        EXPECT_TRUE(h->region().usable_with(s_.ep));
    }
}

INSTANTIATE_TEST_SUITE_P(providers, core_mr_cache, ::testing::ValuesIn(cache_providers()), param_name);

}  // namespace
