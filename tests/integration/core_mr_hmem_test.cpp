// Device-memory (HMEM) and DMA-BUF registration over real providers. No GPU runs here, so the
// device paths are exercised with what the providers do support: FI_HMEM_SYSTEM on an HMEM
// domain (shm), and DMA-BUF registrations of a mapped memfd, which libfabric's utility
// providers translate to the mapped range. The checks for device interfaces that no provider
// here supports run before any provider call and are tested for their refusal.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <loom/mr_cache.hpp>

#include "core_support.hpp"

using namespace core_test;
using namespace std::chrono_literals;

namespace {

const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));

/// A memfd of `pages` pages, mapped shared: its descriptor stands in for a DMA-BUF.
struct mapped_fd {
    explicit mapped_fd(std::size_t pages) : size(pages * page) {
        fd = ::memfd_create("loom-dmabuf-test", 0);
        if (fd >= 0 && ::ftruncate(fd, static_cast<off_t>(size)) == 0)
            map = static_cast<std::byte*>(::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    }
    ~mapped_fd() {
        if (map != nullptr && map != MAP_FAILED) ::munmap(map, size);
        if (fd >= 0) ::close(fd);
    }
    mapped_fd(const mapped_fd&) = delete;
    auto operator=(const mapped_fd&) -> mapped_fd& = delete;
    [[nodiscard]] auto ok() const -> bool { return fd >= 0 && map != nullptr && map != MAP_FAILED; }
    std::size_t size;
    int fd{-1};
    std::byte* map{nullptr};
};

constexpr auto rw = loom::mr_access_flags::send | loom::mr_access_flags::recv;

class core_mr_hmem : public ::testing::TestWithParam<std::string> {};

TEST_P(core_mr_hmem, dmabuf_registration_carries_a_loopback_send) {
    loop_stack s;
    ASSERT_NO_FATAL_FAILURE(must_open_loop(GetParam(), {}, s));
    mapped_fd buf(4);
    ASSERT_TRUE(buf.ok()) << std::strerror(errno);
    std::vector<std::byte> host(page);
    loom_test::fill_pattern(host, 77);

    // Register the file range [page, 3 pages) of the buffer mapped at buf.map.
    const loom::dmabuf_region region{.fd = buf.fd, .offset = page, .length = 2 * page, .base_addr = buf.map};
    auto mr = loom::memory_region::register_dmabuf(s.domain, region, {.access = rw});
    ASSERT_TRUE(mr) << outcome(mr.error());
    EXPECT_EQ(mr->address(), buf.map + page);
    EXPECT_EQ(mr->size(), 2 * page);
    auto host_mr = loom::memory_region::register_memory(s.domain, std::span{host}, rw);
    ASSERT_TRUE(host_mr) << outcome(host_mr.error());
    if (s.domain.get_memory_region_mode().any(loom::mr_mode_flags::endpoint)) GTEST_SKIP() << "FI_MR_ENDPOINT domain";

    // Host → DMA-BUF, then DMA-BUF → host: the bytes land in the registered file range.
    const auto in = std::span{buf.map + page + 128, page};
    ASSERT_NO_FATAL_FAILURE(loop_roundtrip(s, host, host_mr->descriptor(), in, mr->descriptor()));
    EXPECT_FALSE(loom_test::check_pattern(in, 77).has_value());
    std::vector<std::byte> back(page);
    auto back_mr = loom::memory_region::register_memory(s.domain, std::span{back}, rw);
    ASSERT_TRUE(back_mr);
    ASSERT_NO_FATAL_FAILURE(loop_roundtrip(s, in, mr->descriptor(), back, back_mr->descriptor()));
    EXPECT_FALSE(loom_test::check_pattern(back, 77).has_value());
}

TEST_P(core_mr_hmem, cache_keeps_dmabuf_and_device_spaces_apart) {
    loop_stack s;
    ASSERT_NO_FATAL_FAILURE(must_open_loop(GetParam(), {}, s));
    auto cache = loom::make_mr_cache(s.domain, s.ep);
    ASSERT_TRUE(cache.status()) << outcome(cache.status());
    mapped_fd buf(4);
    ASSERT_TRUE(buf.ok());

    const loom::dmabuf_region whole{.fd = buf.fd, .offset = 0, .length = 4 * page, .base_addr = buf.map};
    auto a = cache.lookup_dmabuf(whole, loom::hmem_iface::system, 0, rw);
    ASSERT_TRUE(a) << outcome(a.error());
    EXPECT_EQ(a->address(), buf.map);
    EXPECT_EQ(a->size(), 4 * page) << "DMA-BUF ranges are registered exactly";
    // A contained range of the same descriptor and mapping: a hit.
    const loom::dmabuf_region part{.fd = buf.fd, .offset = page + 10, .length = 100, .base_addr = buf.map};
    auto b = cache.lookup_dmabuf(part, loom::hmem_iface::system, 0, loom::mr_access_flags::send);
    ASSERT_TRUE(b);
    EXPECT_EQ(b->descriptor(), a->descriptor());
    auto st = cache.stats();
    EXPECT_EQ(st.misses, 1U);
    EXPECT_EQ(st.hits, 1U);
    EXPECT_EQ(st.registered_bytes, 4 * page);
    // The same virtual range as host memory is another space: a miss of its own.
    auto h = cache.lookup(std::span{buf.map + page + 10, 100}, loom::mr_access_flags::send);
    ASSERT_TRUE(h);
    EXPECT_NE(h->descriptor(), a->descriptor());
    EXPECT_EQ(cache.stats().misses, 2U);
    // Exact device ranges (FI_HMEM_SYSTEM as the interface): no page rounding.
    auto d = cache.lookup_device(std::span{buf.map + 5, 1000}, loom::hmem_iface::system, 0, rw);
    ASSERT_TRUE(d) << outcome(d.error());
    EXPECT_EQ(d->address(), buf.map + 5);
    EXPECT_EQ(d->size(), 1000U);
    EXPECT_EQ(cache.stats().misses, 3U);
    EXPECT_EQ(cache.check_invariants(), "");
    // Invalidating the descriptor unindexes its entries; handles stay usable.
    EXPECT_EQ(cache.invalidate_dmabuf(buf.fd), 1U);
    EXPECT_TRUE(a->region().valid());
    auto again = cache.lookup_dmabuf(part, loom::hmem_iface::system, 0, loom::mr_access_flags::send);
    ASSERT_TRUE(again);
    EXPECT_EQ(cache.stats().misses, 4U) << "an invalidated descriptor's ranges are registered anew";
    EXPECT_EQ(cache.check_invariants(), "");
}

TEST_P(core_mr_hmem, bad_device_registrations_are_refused_before_the_provider) {
    loop_stack s;
    ASSERT_NO_FATAL_FAILURE(must_open_loop(GetParam(), {}, s));
    std::vector<std::byte> mem(page);
    using loom::errc;
    auto code = [](const auto& r) { return r ? std::error_code{} : r.error(); };
    const bool hmem_domain = (s.info.native()->caps & FI_HMEM) != 0;
    // Device interfaces need a domain opened with capability::hmem.
    auto cuda = loom::memory_region::register_memory(s.domain, std::span{mem},
                                                     {.access = rw, .iface = loom::hmem_iface::cuda, .device = 0});
    if (!hmem_domain) {
        EXPECT_EQ(code(cuda), make_error_code(errc::not_supported));
    }
    // Host memory has no device id; unknown interfaces and out-of-range ids are refused.
    EXPECT_EQ(code(loom::memory_region::register_memory(s.domain, std::span{mem}, {.access = rw, .device = 3})),
              make_error_code(errc::invalid_argument));
    EXPECT_EQ(code(loom::memory_region::register_memory(s.domain, std::span{mem},
                                                        {.access = rw, .iface = static_cast<loom::hmem_iface>(99)})),
              make_error_code(errc::invalid_argument));
    // DMA-BUF: a descriptor, a length and a range that does not wrap.
    const auto bad = [&](loom::dmabuf_region r) {
        return code(loom::memory_region::register_dmabuf(s.domain, r, {.access = rw}));
    };
    EXPECT_EQ(bad({.fd = -1, .offset = 0, .length = page, .base_addr = mem.data()}),
              make_error_code(errc::invalid_argument));
    EXPECT_EQ(bad({.fd = 1000, .offset = 0, .length = page, .base_addr = mem.data()}),
              make_error_code(errc::invalid_argument))
        << "a descriptor that is not open";
    EXPECT_EQ(bad({.fd = 0, .offset = 0, .length = 0, .base_addr = mem.data()}),
              make_error_code(errc::invalid_argument));
    EXPECT_EQ(bad({.fd = 0, .offset = ~std::uint64_t{0} - 1, .length = page, .base_addr = nullptr}),
              make_error_code(errc::invalid_argument));
    EXPECT_EQ(bad({.fd = 0, .offset = ~std::uint64_t{0} - page, .length = page, .base_addr = mem.data()}),
              make_error_code(errc::invalid_argument));
    // The cache applies the same rules.
    auto cache = loom::make_mr_cache(s.domain, s.ep);
    ASSERT_TRUE(cache.status());
    if (!hmem_domain) {
        EXPECT_EQ(code(cache.lookup_device(std::span{mem}, loom::hmem_iface::cuda, 0, rw)),
                  make_error_code(errc::not_supported));
    }
    EXPECT_EQ(code(cache.lookup_device(std::span<std::byte>{}, loom::hmem_iface::system, 0, rw)),
              make_error_code(errc::invalid_argument));
    EXPECT_EQ(code(cache.lookup_dmabuf({.fd = -1, .length = page}, loom::hmem_iface::system, 0, rw)),
              make_error_code(errc::invalid_argument));
    EXPECT_EQ(cache.stats().registrations, 0U) << "nothing registered by refused lookups";
    EXPECT_EQ(cache.stats().entries, 0U);
}

/// shm opened with FI_HMEM: device interfaces pass the checks and reach the provider, which
/// refuses CUDA memory without a driver (an error, not a crash); FI_HMEM_SYSTEM registers.
TEST(core_mr_hmem_domain, hmem_domain_accepts_system_and_reports_absent_devices) {
    loop_stack s;
    const auto err = open_loop("shm", {.caps = loom::capability::msg | loom::capability::hmem}, s);
    if (!err.empty()) GTEST_SKIP() << "shm without FI_HMEM: " << err;
    ASSERT_NE(s.info.native()->caps & FI_HMEM, 0U);
    std::vector<std::byte> mem(page);
    auto sys = loom::memory_region::register_memory(s.domain, std::span{mem},
                                                    {.access = rw, .iface = loom::hmem_iface::system});
    ASSERT_TRUE(sys) << outcome(sys.error());
    auto cuda = loom::memory_region::register_memory(s.domain, std::span{mem},
                                                     {.access = rw, .iface = loom::hmem_iface::cuda, .device = 0});
    if (cuda) GTEST_SKIP() << "a CUDA driver is present: host memory registered as CUDA memory";
    EXPECT_NE(cuda.error(), make_error_code(loom::errc::invalid_argument)) << "refused by the provider, not by loom";
}

INSTANTIATE_TEST_SUITE_P(providers, core_mr_hmem, ::testing::Values("shm", "tcp;ofi_rxm", "tcp"),
                         [](const auto& i) { return param_name(i); });

}  // namespace
