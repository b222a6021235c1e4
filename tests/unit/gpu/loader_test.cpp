// gpu/: loading the GPU runtimes (a missing library, a library without the entry points, the
// CUDA toolkit's stub driver), the error category, concurrent first loads, HIP and
// memory.hpp. The fake driver's cases are in cuda_fake_test.cpp; both run each loading case in a
// forked child (child_support.hpp).
#include <fcntl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "child_support.hpp"

namespace {

using namespace gpu_test;

// ---------------------------------------------------------------------------------- error category

TEST(GpuCudaCategory, MessagesNameTheCUresultWithoutADriver) {
    const std::error_code stub(34, loom::gpu::cuda_category());
    EXPECT_TRUE(contains(stub.message(), "CUDA_ERROR_STUB_LIBRARY")) << stub.message();
    EXPECT_TRUE(contains(stub.message(), "34")) << stub.message();
    const std::error_code odd(12345, loom::gpu::cuda_category());
    EXPECT_TRUE(contains(odd.message(), "12345")) << odd.message();
    EXPECT_EQ(loom::gpu::cuda_result(stub), 34);
    EXPECT_EQ(loom::gpu::cuda_result(make_error_code(errc::io_error)), 0);
    EXPECT_EQ(std::error_code(1, loom::gpu::cuda_category()), std::errc::invalid_argument);
    EXPECT_EQ(std::error_code(2, loom::gpu::cuda_category()), std::errc::not_enough_memory);
    EXPECT_NE(std::error_code(999, loom::gpu::cuda_category()), std::errc::invalid_argument);
}

// ------------------------------------------------------------------------------------ CUDA loading

TEST(GpuCudaLoader, MissingLibraryIsNotSupportedWithThePath) {
    const auto r = run_in_child({{"LOOM_CUDA_LIBRARY", "/nonexistent/dir/libcuda.so.1"}}, [] {
        auto d = cuda_driver::instance();
        CHILD_CHECK(!d);
        CHILD_CHECK(d.error() == not_supported());
        const auto reason = cuda_driver::unavailable_reason();
        if (cuda_driver::compiled_in()) {
            CHILD_CHECK_MSG(contains(reason, "/nonexistent/dir/libcuda.so.1"), std::string(reason));
        } else {
            CHILD_CHECK(!reason.empty());
        }
        return std::string{};
    });
    EXPECT_TRUE(r.passed()) << r.output;
}

TEST(GpuCudaLoader, LibraryWithoutTheEntryPointsIsNotSupported) {
    if (!cuda_driver::compiled_in()) GTEST_SKIP() << "CUDA support not compiled in";
    const auto r = run_in_child({{"LOOM_CUDA_LIBRARY", "libm.so.6"}}, [] {
        auto d = cuda_driver::instance();
        CHILD_CHECK(!d && d.error() == not_supported());
        const auto reason = cuda_driver::unavailable_reason();
        CHILD_CHECK_MSG(contains(reason, "libm.so.6") && contains(reason, "cuInit"), std::string(reason));
        return std::string{};
    });
    EXPECT_TRUE(r.passed()) << r.output;
}

TEST(GpuCudaLoader, StubLibraryFailsCuInitWithoutCrashing) {
    if (!cuda_driver::compiled_in()) GTEST_SKIP() << "CUDA support not compiled in";
    if (::access(stub_library, R_OK) != 0) GTEST_SKIP() << stub_library << " not present";
    const auto r = run_in_child({{"LOOM_CUDA_LIBRARY", stub_library}, {"LOOM_HIP_LIBRARY", "/nonexistent/hip.so"}}, [] {
        auto d = cuda_driver::instance();
        CHILD_CHECK(!d && d.error() == not_supported());
        const std::string reason(cuda_driver::unavailable_reason());
        // Symbols resolved (not a "lacks" failure); cuInit failed with the stub's CUresult.
        CHILD_CHECK_MSG(contains(reason, "cuInit failed"), reason);
        CHILD_CHECK_MSG(contains(reason, stub_library), reason);
        CHILD_CHECK_MSG(contains(reason, "CUDA_ERROR_STUB_LIBRARY (34)"), reason);
        // Loaded once: asking again gives the same answer without retrying.
        auto again = cuda_driver::instance();
        CHILD_CHECK(!again && again.error() == not_supported());
        CHILD_CHECK(cuda_driver::unavailable_reason().data() == cuda_driver::unavailable_reason().data());
        int local = 0;
        CHILD_CHECK(loom::gpu::classify(&local) == memory_kind::host);
        CHILD_CHECK(loom::gpu::available_backends() == std::vector<memory_kind>{memory_kind::host});
        return std::string{};
    });
    EXPECT_TRUE(r.passed()) << r.output;
}

TEST(GpuCudaLoader, CuInitFailureIsNamedByTheDriver) {
    SKIP_WITHOUT_FAKE();
    const auto r = run_in_child(fake_env({{"FAKE_CUDA_INIT_RESULT", "100"}}), [] {
        auto d = cuda_driver::instance();
        CHILD_CHECK(!d && d.error() == not_supported());
        const std::string reason(cuda_driver::unavailable_reason());
        CHILD_CHECK_MSG(contains(reason, "CUDA_ERROR_NO_DEVICE (100): fake: no device"), reason);
        return std::string{};
    });
    EXPECT_TRUE(r.passed()) << r.output;
}

// Several threads race on the first instance() call: all see the same outcome.
auto concurrent_instances() -> std::string {
    constexpr int threads = 8;
    std::latch start(threads);
    std::vector<loom::result<cuda_driver*>> cuda(threads, std::unexpected(std::error_code{}));
    std::vector<loom::result<hip_runtime*>> hip(threads, std::unexpected(std::error_code{}));
    std::vector<const char*> reasons(threads, nullptr);
    std::vector<std::thread> pool;
    for (int i = 0; i < threads; ++i) {
        pool.emplace_back([&, i] {
            start.arrive_and_wait();
            cuda[static_cast<std::size_t>(i)] = cuda_driver::instance();
            reasons[static_cast<std::size_t>(i)] = cuda_driver::unavailable_reason().data();
            hip[static_cast<std::size_t>(i)] = hip_runtime::instance();
        });
    }
    for (auto& t : pool) t.join();
    for (int i = 1; i < threads; ++i) {
        const auto k = static_cast<std::size_t>(i);
        CHILD_CHECK(cuda[k].has_value() == cuda[0].has_value());
        CHILD_CHECK(cuda[k] ? *cuda[k] == *cuda[0] : cuda[k].error() == cuda[0].error());
        CHILD_CHECK(reasons[k] == reasons[0]);
        CHILD_CHECK(hip[k].has_value() == hip[0].has_value());
        CHILD_CHECK(hip[k] ? *hip[k] == *hip[0] : hip[k].error() == hip[0].error());
    }
    return {};
}

TEST(GpuCudaLoader, ConcurrentInstanceAgreesWhenUnavailable) {
    const auto r = run_in_child(
        {{"LOOM_CUDA_LIBRARY", "/nonexistent/libcuda.so.1"}, {"LOOM_HIP_LIBRARY", "/nonexistent/hip.so"}}, [] {
            if (auto e = concurrent_instances(); !e.empty()) return e;
            CHILD_CHECK(!cuda_driver::instance() && !hip_runtime::instance());
            return std::string{};
        });
    EXPECT_TRUE(r.passed()) << r.output;
}

TEST(GpuCudaLoader, ConcurrentInstanceAgreesWhenAvailable) {
    SKIP_WITHOUT_FAKE();
    const auto r = run_in_child(fake_env({{"LOOM_HIP_LIBRARY", "/nonexistent/hip.so"}}), [] {
        if (auto e = concurrent_instances(); !e.empty()) return e;
        auto d = cuda_driver::instance();
        CHILD_CHECK_MSG(d.has_value(), std::string(cuda_driver::unavailable_reason()));
        CHILD_CHECK(cuda_driver::unavailable_reason().empty());
        return std::string{};
    });
    EXPECT_TRUE(r.passed()) << r.output;
}

// ------------------------------------------------------------------------------------------- HIP

TEST(GpuHipLoader, MissingLibraryIsNotSupportedWithThePath) {
    const auto r = run_in_child({{"LOOM_HIP_LIBRARY", "/nonexistent/libamdhip64.so"}}, [] {
        auto h = hip_runtime::instance();
        CHILD_CHECK(!h && h.error() == not_supported());
        const std::string reason(hip_runtime::unavailable_reason());
        CHILD_CHECK_MSG(contains(reason, "/nonexistent/libamdhip64.so"), reason);
        return std::string{};
    });
    EXPECT_TRUE(r.passed()) << r.output;
}

TEST(GpuHipLoader, DefaultLibraryAbsentHereIsNotSupported) {
    const auto r = run_in_child({{"LOOM_HIP_LIBRARY", nullptr}}, [] {
        auto h = hip_runtime::instance();
        if (h) return std::string{};  // a machine with a working HIP runtime: nothing to check here
        CHILD_CHECK(h.error() == not_supported());
        const std::string reason(hip_runtime::unavailable_reason());
        CHILD_CHECK_MSG(contains(reason, "libamdhip64"), reason);
        return std::string{};
    });
    EXPECT_TRUE(r.passed()) << r.output;
}

TEST(GpuHipLoader, LibraryWithoutTheEntryPointsIsNotSupported) {
    const auto r = run_in_child({{"LOOM_HIP_LIBRARY", "libm.so.6"}}, [] {
        auto h = hip_runtime::instance();
        CHILD_CHECK(!h && h.error() == not_supported());
        const std::string reason(hip_runtime::unavailable_reason());
        CHILD_CHECK_MSG(contains(reason, "libm.so.6") && contains(reason, "hipInit"), reason);
        return std::string{};
    });
    EXPECT_TRUE(r.passed()) << r.output;
}

// ------------------------------------------------------------------------------------ memory.hpp

TEST(GpuMemory, HostMemoryIsHostWithoutAnyRuntime) {
    const auto r = run_in_child(
        {{"LOOM_CUDA_LIBRARY", "/nonexistent/libcuda.so.1"}, {"LOOM_HIP_LIBRARY", "/nonexistent/hip.so"}}, [] {
            int local = 0;
            std::vector<char> heap(4096);
            CHILD_CHECK(loom::gpu::classify(&local) == memory_kind::host);
            CHILD_CHECK(loom::gpu::classify(heap.data()) == memory_kind::host);
            CHILD_CHECK(loom::gpu::classify(nullptr) == memory_kind::host);
            const auto where = loom::gpu::locate(heap.data());
            CHILD_CHECK(where.kind == memory_kind::host && where.iface == FI_HMEM_SYSTEM);
            CHILD_CHECK(where.device == 0);
            CHILD_CHECK(loom::gpu::available_backends() == std::vector<memory_kind>{memory_kind::host});
            return std::string{};
        });
    EXPECT_TRUE(r.passed()) << r.output;
}

TEST(GpuMemory, FabricInterfaces) {
    static_assert(loom::gpu::fabric_iface(memory_kind::host) == FI_HMEM_SYSTEM);
    EXPECT_EQ(loom::gpu::fabric_iface(memory_kind::host), 0);
    EXPECT_EQ(loom::gpu::fabric_iface(memory_kind::cuda), 1);
    EXPECT_EQ(loom::gpu::fabric_iface(memory_kind::rocm), 2);
    EXPECT_EQ(loom::gpu::fabric_iface(memory_kind::level_zero), 3);
    EXPECT_EQ(loom::gpu::to_string(memory_kind::level_zero), "level_zero");
    EXPECT_EQ(loom::gpu::to_string(memory_type::unregistered_host), "unregistered_host");
}

TEST(GpuMemory, UniqueFdClosesAndMoves) {
    int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    {
        loom::gpu::unique_fd a(fd);
        loom::gpu::unique_fd b;
        b = std::move(a);
        EXPECT_FALSE(a);
        EXPECT_EQ(b.get(), fd);
        EXPECT_NE(::fcntl(fd, F_GETFD), -1);
    }
    EXPECT_EQ(::fcntl(fd, F_GETFD), -1);
    loom::gpu::unique_fd c(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    const int raw = c.release();
    EXPECT_FALSE(c);
    EXPECT_NE(::fcntl(raw, F_GETFD), -1);
    ::close(raw);
}

}  // namespace
