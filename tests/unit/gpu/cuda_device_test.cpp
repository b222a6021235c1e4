// gpu/ on a real CUDA driver: allocate, copy, query and export device memory. Every test skips when
// no driver with a device can be loaded (LOOM_CUDA_LIBRARY, else libcuda.so.1), so this binary
// passes on CPU-only machines.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <loom/gpu/cuda.hpp>
#include <loom/gpu/memory.hpp>
#include <loom/gpu/xpu.hpp>
#include <loom/loom.hpp>
#include <regex>
#include <string>
#include <vector>

namespace {

using loom::gpu::cuda_driver;
using loom::gpu::memory_kind;
using loom::gpu::memory_type;

class GpuCudaDevice : public ::testing::Test {
protected:
    void SetUp() override {
        auto d = cuda_driver::instance();
        if (!d) GTEST_SKIP() << "no CUDA driver: " << cuda_driver::unavailable_reason();
        cuda_ = *d;
        ASSERT_GE(cuda_->device_count(), 1);
    }

    // Device memory freed at the end of the test.
    auto device_buffer(std::size_t n, int ordinal = 0) -> unsigned char* {
        auto p = cuda_->alloc(n, ordinal);
        EXPECT_TRUE(p.has_value()) << p.error().message();
        if (!p) return nullptr;
        allocations_.push_back(*p);
        return static_cast<unsigned char*>(*p);
    }

    void TearDown() override {
        for (void* p : allocations_) EXPECT_TRUE(cuda_->free(p).has_value());
    }

    cuda_driver* cuda_ = nullptr;
    std::vector<void*> allocations_;
};

TEST_F(GpuCudaDevice, DescribesEveryDevice) {
    const std::regex bdf("[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\\.[0-9a-f]");
    for (int i = 0; i < cuda_->device_count(); ++i) {
        auto id = cuda_->pci_bus_id(i);
        ASSERT_TRUE(id.has_value()) << id.error().message();
        EXPECT_TRUE(std::regex_match(*id, bdf)) << *id;
    }
    EXPECT_GT(cuda_->driver_version(), 0);
    EXPECT_FALSE(cuda_->pci_bus_id(cuda_->device_count()).has_value());
}

TEST_F(GpuCudaDevice, CopiesAPatternInAndOut) {
    constexpr std::size_t n = (1u << 20) + 123;
    auto* dev = device_buffer(n);
    ASSERT_NE(dev, nullptr);
    std::vector<unsigned char> pattern(n), back(n, 0);
    for (std::size_t i = 0; i < n; ++i) pattern[i] = static_cast<unsigned char>((i * 131) ^ (i >> 8));
    ASSERT_TRUE(cuda_->copy_to_device(dev, pattern.data(), n).has_value());
    ASSERT_TRUE(cuda_->copy_to_host(back.data(), dev, n).has_value());
    EXPECT_EQ(back, pattern);

    ASSERT_TRUE(cuda_->memset(dev + 4096, 0x5a, 8192).has_value());
    ASSERT_TRUE(cuda_->copy_to_host(back.data(), dev, n).has_value());
    for (std::size_t i = 4096; i < 4096 + 8192; ++i) pattern[i] = 0x5a;
    EXPECT_EQ(back, pattern);
}

TEST_F(GpuCudaDevice, PointerInfoOfDeviceAndHostMemory) {
    constexpr std::size_t n = 3 * 4096 + 17;
    auto* dev = device_buffer(n);
    ASSERT_NE(dev, nullptr);
    auto info = cuda_->pointer_info(dev + 100);
    ASSERT_TRUE(info.has_value()) << info.error().message();
    EXPECT_EQ(info->type, memory_type::device);
    EXPECT_EQ(info->device, 0);
    const auto addr = reinterpret_cast<std::uintptr_t>(dev + 100);
    EXPECT_LE(info->base, reinterpret_cast<std::uintptr_t>(dev));
    EXPECT_GE(info->base + info->size, reinterpret_cast<std::uintptr_t>(dev) + n);
    EXPECT_LT(addr - info->base, info->size);
    EXPECT_EQ(loom::gpu::classify(dev), memory_kind::cuda);
    const auto where = loom::gpu::locate(dev + 1);
    EXPECT_EQ(where.iface, FI_HMEM_CUDA);
    EXPECT_EQ(where.device, 0);

    std::vector<char> host(64);
    auto host_info = cuda_->pointer_info(host.data());
    ASSERT_TRUE(host_info.has_value());
    EXPECT_EQ(host_info->type, memory_type::unregistered_host);
    EXPECT_EQ(loom::gpu::classify(host.data()), memory_kind::host);
}

TEST_F(GpuCudaDevice, AllocatesOnEveryDevice) {
    for (int i = 0; i < cuda_->device_count(); ++i) {
        auto* dev = device_buffer(4096, i);
        ASSERT_NE(dev, nullptr);
        auto info = cuda_->pointer_info(dev);
        ASSERT_TRUE(info.has_value());
        EXPECT_EQ(info->device, i);
    }
}

TEST_F(GpuCudaDevice, ExportsADmabuf) {
    if (!cuda_->dmabuf_supported(0)) GTEST_SKIP() << "device 0 does not support DMA-BUF";
    constexpr std::size_t n = (2u << 20) + 100;
    auto* dev = device_buffer(n);
    ASSERT_NE(dev, nullptr);
    auto buf = cuda_->export_dmabuf(dev + 5000, 65536);
    ASSERT_TRUE(buf.has_value()) << buf.error().message();
    EXPECT_GE(buf->fd.get(), 0);
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    EXPECT_EQ(buf->base % page, 0u);
    EXPECT_EQ(buf->length % page, 0u);
    EXPECT_EQ(buf->base + buf->offset, reinterpret_cast<std::uintptr_t>(dev + 5000));
    EXPECT_GE(buf->length, buf->offset + 65536);
    const int fd = buf->fd.get();
    buf = loom::result<loom::gpu::dmabuf>{};  // closes the descriptor
    EXPECT_EQ(::fcntl(fd, F_GETFD), -1);
}

}  // namespace

// XPU contexts for the driver's devices: by buffer and by ordinal the arguments are checked
// against the driver; libfabric before 2.7 then refuses cleanly (untested on hardware).
TEST_F(GpuCudaDevice, XpuContextsForItsDevices) {
    auto info = loom::query_fabric(
        {.capabilities = loom::capability::msg, .ep_type = loom::endpoint_types::rdm, .provider = "tcp;ofi_rxm"});
    ASSERT_TRUE(info);
    auto fab = loom::fabric::create(*info);
    ASSERT_TRUE(fab);
    auto dom = loom::domain::create(*fab, *info);
    ASSERT_TRUE(dom);
    const auto expected = loom::xpu_supported() ? "" : "not_supported";
    auto outcome = [](const auto& r) -> std::string { return r ? "" : loom::errc_name(loom::errc{r.error().value()}); };
    unsigned char* buf = device_buffer(4096);
    ASSERT_NE(buf, nullptr);
    if (!loom::xpu_supported()) {
        EXPECT_EQ(outcome(loom::gpu::xpu_context_for(*dom, buf)), expected);
        EXPECT_EQ(outcome(loom::gpu::xpu_context_for(*dom, memory_kind::cuda, 0)), expected);
    }
    int host = 0;
    EXPECT_EQ(outcome(loom::gpu::xpu_context_for(*dom, &host)), "invalid_argument") << "host memory";
    EXPECT_EQ(outcome(loom::gpu::xpu_context_for(*dom, memory_kind::cuda, cuda_->device_count())), "invalid_argument")
        << "an ordinal past the driver's devices";
    EXPECT_EQ(outcome(loom::gpu::xpu_context_for(*dom, memory_kind::cuda, -1)), "invalid_argument");
    EXPECT_EQ(outcome(loom::gpu::xpu_context_for(*dom, memory_kind::level_zero, 0)), "not_supported")
        << "Level Zero is never loaded";
}
