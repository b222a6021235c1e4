// gpu/: the CUDA loader against a fake driver (gpu/fake_cuda.cpp, built where cuda.h is
// available): devices, argument checks before any driver call, allocation, copies and pointer
// queries, driver errors, primary contexts and DMA-BUF export. Each case runs in a forked child
// (child_support.hpp).
#include <fcntl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "child_support.hpp"

namespace {

using namespace gpu_test;

// ------------------------------------------------------------------------- the fake driver, loaded

TEST(GpuCudaFake, EnumeratesDevices) {
    SKIP_WITHOUT_FAKE();
    const auto r = run_with_driver(fake_env(), [](cuda_driver& cuda) {
        CHILD_CHECK(cuda.library_path() == fake_library);
        CHILD_CHECK(cuda.driver_version() == 13000);
        CHILD_CHECK(cuda.device_count() == 2);
        CHILD_CHECK(cuda.pci_bus_id(0) == std::string("0000:3b:00.0"));
        CHILD_CHECK(cuda.pci_bus_id(1) == std::string("0000:af:00.0"));
        CHILD_CHECK(cuda.dmabuf_supported(0));
        CHILD_CHECK(!cuda.dmabuf_supported(1));
        CHILD_CHECK(loom::gpu::available_backends() ==
                    std::vector<memory_kind>({memory_kind::host, memory_kind::cuda}));
        return std::string{};
    });
    EXPECT_TRUE(r.passed()) << r.output;
}

TEST(GpuCudaFake, ArgumentChecksComeBeforeAnyDriverCall) {
    SKIP_WITHOUT_FAKE();
    const auto r = run_with_driver(fake_env(), [](cuda_driver& cuda) {
        char host[16] = {};
        auto* dev = reinterpret_cast<void*>(std::uintptr_t{0x10000});  // never dereferenced
        const int before = fake_calls();
        CHILD_CHECK(error_of(cuda.pointer_info(nullptr)) == invalid_argument());
        CHILD_CHECK(error_of(cuda.export_dmabuf(nullptr, 1)) == invalid_argument());
        CHILD_CHECK(error_of(cuda.export_dmabuf(dev, 0)) == invalid_argument());
        CHILD_CHECK(error_of(cuda.alloc(0)) == invalid_argument());
        CHILD_CHECK(error_of(cuda.alloc(16, -1)) == invalid_argument());
        CHILD_CHECK(error_of(cuda.alloc(16, 2)) == invalid_argument());
        CHILD_CHECK(error_of(cuda.free(nullptr)) == invalid_argument());
        CHILD_CHECK(error_of(cuda.copy_to_device(nullptr, host, 1)) == invalid_argument());
        CHILD_CHECK(error_of(cuda.copy_to_device(dev, nullptr, 1)) == invalid_argument());
        CHILD_CHECK(error_of(cuda.copy_to_device(dev, host, 0)) == invalid_argument());
        CHILD_CHECK(error_of(cuda.copy_to_host(nullptr, dev, 1)) == invalid_argument());
        CHILD_CHECK(error_of(cuda.copy_to_host(host, nullptr, 1)) == invalid_argument());
        CHILD_CHECK(error_of(cuda.copy_to_host(host, dev, 0)) == invalid_argument());
        CHILD_CHECK(error_of(cuda.memset(nullptr, 0, 1)) == invalid_argument());
        CHILD_CHECK(error_of(cuda.memset(dev, 0, 0)) == invalid_argument());
        CHILD_CHECK(error_of(cuda.pci_bus_id(-1)) == invalid_argument());
        CHILD_CHECK(error_of(cuda.pci_bus_id(2)) == invalid_argument());
        CHILD_CHECK(!cuda.dmabuf_supported(-1) && !cuda.dmabuf_supported(2));
        CHILD_CHECK(loom::gpu::classify(nullptr) == memory_kind::host);
        CHILD_CHECK_MSG(fake_calls() == before, std::to_string(fake_calls() - before) + " driver calls");
        return std::string{};
    });
    EXPECT_TRUE(r.passed()) << r.output;
}

TEST(GpuCudaFake, AllocCopyAndPointerInfo) {
    SKIP_WITHOUT_FAKE();
    const auto r = run_with_driver(fake_env(), [](cuda_driver& cuda) {
        constexpr std::size_t n = 1000;
        auto p = cuda.alloc(n, 1);
        CHILD_CHECK_MSG(p.has_value(), p.error().message());
        auto* dev = static_cast<unsigned char*>(*p);

        auto info = cuda.pointer_info(dev + 10);
        CHILD_CHECK(info.has_value());
        CHILD_CHECK(info->type == memory_type::device);
        CHILD_CHECK(info->device == 1);
        CHILD_CHECK(info->base == reinterpret_cast<std::uintptr_t>(dev));
        CHILD_CHECK(info->size == n);
        CHILD_CHECK(loom::gpu::classify(dev + 999) == memory_kind::cuda);
        const auto where = loom::gpu::locate(dev + 5);
        CHILD_CHECK(where.kind == memory_kind::cuda && where.iface == FI_HMEM_CUDA && where.device == 1);

        std::vector<unsigned char> pattern(n), back(n, 0);
        for (std::size_t i = 0; i < n; ++i) pattern[i] = static_cast<unsigned char>(i * 7 + 3);
        CHILD_CHECK(cuda.copy_to_device(dev, pattern.data(), n).has_value());
        CHILD_CHECK(cuda.memset(dev + 100, 0xab, 50).has_value());
        CHILD_CHECK(cuda.copy_to_host(back.data(), dev, n).has_value());
        std::fill_n(pattern.begin() + 100, 50, 0xab);
        CHILD_CHECK(back == pattern);

        // Ranges leaving the allocation and host addresses are rejected before the copy.
        CHILD_CHECK(error_of(cuda.copy_to_device(dev + 900, pattern.data(), 101)) == invalid_argument());
        CHILD_CHECK(error_of(cuda.copy_to_host(back.data(), dev + 1, n)) == invalid_argument());
        CHILD_CHECK(error_of(cuda.memset(back.data(), 0, 1)) == invalid_argument());
        CHILD_CHECK(error_of(cuda.copy_to_device(back.data(), pattern.data(), 1)) == invalid_argument());

        // Host memory, unknown and registered; managed memory.
        auto host = cuda.pointer_info(back.data());
        CHILD_CHECK(host && host->type == memory_type::unregistered_host && host->device == -1);
        CHILD_CHECK(host->base == 0 && host->size == 0);
        CHILD_CHECK(loom::gpu::classify(back.data()) == memory_kind::host);
        const auto where_host = loom::gpu::locate(back.data());
        CHILD_CHECK(where_host.kind == memory_kind::host && where_host.iface == FI_HMEM_SYSTEM &&
                    where_host.device == 0);
        auto add_region = fake_hook<void (*)(void*, std::size_t, unsigned, int, int)>("fake_cuda_add_region");
        CHILD_CHECK(add_region != nullptr);
        std::vector<char> pinned(64), managed(64);
        add_region(pinned.data(), pinned.size(), 1 /*CU_MEMORYTYPE_HOST*/, 0, 0);
        add_region(managed.data(), managed.size(), 2 /*CU_MEMORYTYPE_DEVICE*/, 1, 0);
        auto pinned_info = cuda.pointer_info(pinned.data() + 3);
        CHILD_CHECK(pinned_info && pinned_info->type == memory_type::host && pinned_info->size == 64);
        CHILD_CHECK(loom::gpu::classify(pinned.data()) == memory_kind::host);
        auto managed_info = cuda.pointer_info(managed.data());
        CHILD_CHECK(managed_info && managed_info->type == memory_type::managed && managed_info->device == 0);
        CHILD_CHECK(loom::gpu::classify(managed.data()) == memory_kind::cuda);
        CHILD_CHECK(error_of(cuda.export_dmabuf(managed.data(), 8)) == invalid_argument());

        // free() wants the start of an allocation.
        CHILD_CHECK(error_of(cuda.free(dev + 1)) == invalid_argument());
        CHILD_CHECK(cuda.free(dev).has_value());
        auto gone = cuda.pointer_info(dev);
        CHILD_CHECK(gone && gone->type == memory_type::unregistered_host);
        return std::string{};
    });
    EXPECT_TRUE(r.passed()) << r.output;
}

TEST(GpuCudaFake, DriverErrorsCarryTheCUresult) {
    SKIP_WITHOUT_FAKE();
    const auto r = run_with_driver(fake_env(), [](cuda_driver& cuda) {
        auto p = cuda.alloc(std::size_t{1} << 41);
        CHILD_CHECK(!p);
        CHILD_CHECK(p.error().category() == loom::gpu::cuda_category());
        CHILD_CHECK(loom::gpu::cuda_result(p.error()) == 2);
        CHILD_CHECK(p.error() == std::errc::not_enough_memory);
        CHILD_CHECK_MSG(p.error().message() == "CUDA_ERROR_OUT_OF_MEMORY (2): fake: out of memory",
                        p.error().message());
        return std::string{};
    });
    EXPECT_TRUE(r.passed()) << r.output;
}

TEST(GpuCudaFake, UsesPrimaryContextsAndRestoresTheCallersContext) {
    SKIP_WITHOUT_FAKE();
    const auto r = run_with_driver(fake_env(), [](cuda_driver& cuda) {
        auto current = fake_hook<int (*)(int*, int*)>("fake_cuda_current");
        auto set_foreign = fake_hook<void (*)(int)>("fake_cuda_set_foreign");
        CHILD_CHECK(current != nullptr && set_foreign != nullptr);
        int primary = 0;
        int depth = 0;

        // No context: the device's primary context becomes (and stays) current.
        CHILD_CHECK(current(&primary, &depth) == -1);
        auto a = cuda.alloc(64, 0);
        CHILD_CHECK(a.has_value());
        CHILD_CHECK(current(&primary, &depth) == 0 && primary == 1 && depth == 0);

        // The caller's own context of another device: pushed over and restored.
        set_foreign(1);
        auto b = cuda.alloc(64, 0);
        CHILD_CHECK(b.has_value());
        CHILD_CHECK(cuda.pointer_info(*b)->device == 0);
        CHILD_CHECK(current(&primary, &depth) == 1 && primary == 0 && depth == 0);

        // The caller's own context of the right device: used as is.
        auto c = cuda.alloc(64, 1);
        CHILD_CHECK(c.has_value() && cuda.pointer_info(*c)->device == 1);
        CHILD_CHECK(current(&primary, &depth) == 1 && primary == 0 && depth == 0);

        // Another thread starts without a context.
        std::string other;
        std::thread([&] {
            int p = 0;
            if (current(&p, nullptr) != -1) other = "a context leaked into a new thread";
            if (!cuda.memset(*c, 1, 64)) other = "memset failed on a new thread";
            if (current(&p, nullptr) != 1 || p != 1) other = "the primary context of device 1 is not current";
        }).join();
        CHILD_CHECK_MSG(other.empty(), other);
        for (void* p : {*a, *b, *c}) CHILD_CHECK(cuda.free(p).has_value());
        return std::string{};
    });
    EXPECT_TRUE(r.passed()) << r.output;
}

TEST(GpuCudaFake, ExportsThePageAlignedAllocationAsDmabuf) {
    SKIP_WITHOUT_FAKE();
    const auto r = run_with_driver(fake_env(), [](cuda_driver& cuda) {
        const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
        constexpr std::size_t n = 10000;
        auto p = cuda.alloc(n, 0);
        CHILD_CHECK(p.has_value());
        const auto base = reinterpret_cast<std::uintptr_t>(*p);
        CHILD_CHECK(base % page != 0);  // the fake hands out unaligned allocations

        auto buf = cuda.export_dmabuf(static_cast<char*>(*p) + 5000, 100);
        CHILD_CHECK_MSG(buf.has_value(), buf.error().message());
        CHILD_CHECK(buf->fd.get() >= 0);
        CHILD_CHECK(buf->base % page == 0 && buf->length % page == 0);
        CHILD_CHECK(buf->base <= base && buf->base + buf->length >= base + n);
        CHILD_CHECK(buf->base + page > base);  // rounded, not padded
        CHILD_CHECK(buf->offset == base + 5000 - buf->base);
        std::uintptr_t exported = 0;
        std::size_t exported_size = 0;
        fake_hook<void (*)(std::uintptr_t*, std::size_t*)>("fake_cuda_last_export")(&exported, &exported_size);
        CHILD_CHECK(exported == buf->base && exported_size == buf->length);

        // The descriptor moves with the object and closes with it.
        const int fd = buf->fd.get();
        {
            auto moved = std::move(*buf);
            CHILD_CHECK(moved.fd.get() == fd && buf->fd.get() == -1);
            CHILD_CHECK(::fcntl(fd, F_GETFD) != -1);
        }
        CHILD_CHECK(::fcntl(fd, F_GETFD) == -1 && errno == EBADF);

        // Out of the allocation, host memory, a device without DMA-BUF support.
        CHILD_CHECK(error_of(cuda.export_dmabuf(static_cast<char*>(*p) + 9990, 11)) == invalid_argument());
        char host[8];
        CHILD_CHECK(error_of(cuda.export_dmabuf(host, sizeof(host))) == invalid_argument());
        auto q = cuda.alloc(64, 1);
        CHILD_CHECK(q.has_value());
        CHILD_CHECK(error_of(cuda.export_dmabuf(*q, 64)) == not_supported());
        CHILD_CHECK(cuda.free(*p) && cuda.free(*q));
        return std::string{};
    });
    EXPECT_TRUE(r.passed()) << r.output;
}

TEST(GpuCudaFake, AllocationRangeFallsBackToCuMemGetAddressRange) {
    SKIP_WITHOUT_FAKE();
    const auto r = run_with_driver(fake_env({{"FAKE_CUDA_NO_RANGE", "1"}}), [](cuda_driver& cuda) {
        auto p = cuda.alloc(300, 1);
        CHILD_CHECK(p.has_value());
        // Another thread without a context: the fallback needs one (the fake insists).
        loom::result<loom::gpu::pointer_info> info = std::unexpected(std::error_code{});
        std::thread([&] { info = cuda.pointer_info(static_cast<char*>(*p) + 299); }).join();
        CHILD_CHECK(info.has_value());
        CHILD_CHECK(info->type == memory_type::device && info->device == 1);
        CHILD_CHECK(info->base == reinterpret_cast<std::uintptr_t>(*p) && info->size == 300);
        CHILD_CHECK(cuda.free(*p).has_value());
        return std::string{};
    });
    EXPECT_TRUE(r.passed()) << r.output;
}

}  // namespace
