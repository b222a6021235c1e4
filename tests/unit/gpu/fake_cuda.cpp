// A fake CUDA driver for the gpu/ unit tests: a shared library exporting the (versioned) driver entry
// points loom::gpu::cuda_driver resolves, backed by host memory. Two devices (handles 100 and 101, so
// handles and ordinals differ); device 0 supports DMA-BUF, device 1 does not. Calls that need a
// context fail with CUDA_ERROR_INVALID_CONTEXT when none is current, like the real driver.
//
// Knobs (environment, read at cuInit): FAKE_CUDA_INIT_RESULT=<CUresult> makes cuInit fail;
// FAKE_CUDA_NO_RANGE=1 leaves the RANGE_START_ADDR/RANGE_SIZE pointer attributes unfilled.
// Test hooks: the extern "C" fake_cuda_* functions at the end.
#include <cuda.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

struct CUctx_st {
    int ordinal;
    bool primary;
};

namespace {

constexpr int device_count = 2;
constexpr CUdevice handle_base = 100;

std::atomic<int> calls{0};  // every entry point except cuGetErrorName/cuGetErrorString
bool no_range = false;
CUctx_st primaries[device_count] = {{0, true}, {1, true}};
CUctx_st foreign[device_count] = {{0, false}, {1, false}};
thread_local CUcontext current = nullptr;
thread_local std::vector<CUcontext> pushed;  // contexts below `current` on this thread's stack

struct region {
    std::size_t size;
    int ordinal;
    unsigned int type;  // CUmemorytype
    bool managed;
    void* raw;  // what to std::free (allocations of cuMemAlloc), else nullptr
};
std::mutex regions_mutex;
std::map<std::uintptr_t, region> regions;  // by base address

std::uintptr_t last_export_base = 0;
std::size_t last_export_size = 0;

auto count() -> void { calls.fetch_add(1, std::memory_order_relaxed); }

auto find(CUdeviceptr p, std::uintptr_t* base) -> region* {
    auto it = regions.upper_bound(static_cast<std::uintptr_t>(p));
    if (it == regions.begin()) return nullptr;
    --it;
    if (p - it->first >= it->second.size) return nullptr;
    *base = it->first;
    return &it->second;
}

auto ordinal_of(CUdevice dev) -> int {
    const int i = dev - handle_base;
    return i >= 0 && i < device_count ? i : -1;
}

// Memory operations: a context must be current and [p, p + n) must lie in one device region.
auto device_bytes(CUdeviceptr p, std::size_t n, void** host) -> CUresult {
    if (current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    const std::scoped_lock lock(regions_mutex);
    std::uintptr_t base = 0;
    auto* r = find(p, &base);
    if (r == nullptr || r->type != CU_MEMORYTYPE_DEVICE || n > r->size - (p - base)) return CUDA_ERROR_INVALID_VALUE;
    *host = reinterpret_cast<void*>(static_cast<std::uintptr_t>(p));
    return CUDA_SUCCESS;
}

}  // namespace

CUresult CUDAAPI cuInit(unsigned int) {
    count();
    no_range = std::getenv("FAKE_CUDA_NO_RANGE") != nullptr;
    if (const char* v = std::getenv("FAKE_CUDA_INIT_RESULT")) return static_cast<CUresult>(std::atoi(v));
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDriverGetVersion(int* v) {
    count();
    *v = 13000;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorName(CUresult e, const char** s) {
    switch (e) {
        case CUDA_SUCCESS: *s = "CUDA_SUCCESS"; return CUDA_SUCCESS;
        case CUDA_ERROR_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; return CUDA_SUCCESS;
        case CUDA_ERROR_OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; return CUDA_SUCCESS;
        case CUDA_ERROR_NO_DEVICE: *s = "CUDA_ERROR_NO_DEVICE"; return CUDA_SUCCESS;
        case CUDA_ERROR_INVALID_CONTEXT: *s = "CUDA_ERROR_INVALID_CONTEXT"; return CUDA_SUCCESS;
        default: *s = nullptr; return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult CUDAAPI cuGetErrorString(CUresult e, const char** s) {
    switch (e) {
        case CUDA_ERROR_OUT_OF_MEMORY: *s = "fake: out of memory"; return CUDA_SUCCESS;
        case CUDA_ERROR_NO_DEVICE: *s = "fake: no device"; return CUDA_SUCCESS;
        default: *s = nullptr; return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult CUDAAPI cuDeviceGetCount(int* n) {
    count();
    *n = device_count;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice* dev, int ordinal) {
    count();
    if (ordinal < 0 || ordinal >= device_count) return CUDA_ERROR_INVALID_DEVICE;
    *dev = handle_base + ordinal;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int* v, CUdevice_attribute attr, CUdevice dev) {
    count();
    const int i = ordinal_of(dev);
    if (i < 0) return CUDA_ERROR_INVALID_DEVICE;
    *v = attr == CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED && i == 0 ? 1 : 0;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetPCIBusId(char* buf, int len, CUdevice dev) {
    count();
    const int i = ordinal_of(dev);
    if (i < 0) return CUDA_ERROR_INVALID_DEVICE;
    std::snprintf(buf, static_cast<std::size_t>(len), "%s", i == 0 ? "0000:3B:00.0" : "0000:AF:00.0");
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
    count();
    const int i = ordinal_of(dev);
    if (i < 0) return CUDA_ERROR_INVALID_DEVICE;
    *ctx = &primaries[i];
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext* ctx) {
    count();
    *ctx = current;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
    count();
    current = ctx;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice* dev) {
    count();
    if (current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    *dev = handle_base + current->ordinal;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx) {
    count();
    pushed.push_back(current);
    current = ctx;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPopCurrent(CUcontext* ctx) {
    count();
    if (pushed.empty()) return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx != nullptr) *ctx = current;
    current = pushed.back();
    pushed.pop_back();
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuPointerGetAttributes(unsigned int n, CUpointer_attribute* attrs, void** data, CUdeviceptr p) {
    count();
    const std::scoped_lock lock(regions_mutex);
    std::uintptr_t base = 0;
    const region* r = find(p, &base);
    for (unsigned int i = 0; i < n; ++i) {
        switch (attrs[i]) {
            case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
                *static_cast<unsigned int*>(data[i]) = r != nullptr ? r->type : 0;
                break;
            case CU_POINTER_ATTRIBUTE_IS_MANAGED:  // a boolean, as documented
                *static_cast<bool*>(data[i]) = r != nullptr && r->managed;
                break;
            case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
                *static_cast<int*>(data[i]) = r != nullptr ? r->ordinal : 0;
                break;
            case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
                if (!no_range) *static_cast<CUdeviceptr*>(data[i]) = r != nullptr ? base : 0;
                break;
            case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
                if (!no_range) *static_cast<std::size_t*>(data[i]) = r != nullptr ? r->size : 0;
                break;
            default: return CUDA_ERROR_INVALID_VALUE;
        }
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr* pbase, std::size_t* psize, CUdeviceptr p) {
    count();
    if (current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    const std::scoped_lock lock(regions_mutex);
    std::uintptr_t base = 0;
    const region* r = find(p, &base);
    if (r == nullptr) return CUDA_ERROR_NOT_FOUND;
    *pbase = base;
    *psize = r->size;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetHandleForAddressRange(void* handle, CUdeviceptr p, std::size_t size, CUmemRangeHandleType type,
                                               unsigned long long flags) {
    count();
    if (current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    if (type != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD || flags != 0 || p % page != 0 || size % page != 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    {
        // The range must cover exactly one device allocation (rounded out to pages).
        const std::scoped_lock lock(regions_mutex);
        auto it = regions.lower_bound(static_cast<std::uintptr_t>(p));
        if (it == regions.end() || it->second.type != CU_MEMORYTYPE_DEVICE || it->second.ordinal != 0 ||
            it->first + it->second.size > p + size) {
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return CUDA_ERROR_OPERATING_SYSTEM;
    *static_cast<int*>(handle) = fd;
    last_export_base = p;
    last_export_size = size;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr* out, std::size_t size) {
    count();
    if (current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    if (size == 0) return CUDA_ERROR_INVALID_VALUE;
    if (size > (std::size_t{1} << 40)) return CUDA_ERROR_OUT_OF_MEMORY;
    // 256 bytes past a page boundary, like a sub-allocation: exports must round out to pages.
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const std::size_t total = (size + 256 + page - 1) / page * page;
    void* raw = std::aligned_alloc(page, total);
    if (raw == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
    const auto base = reinterpret_cast<std::uintptr_t>(raw) + 256;
    const std::scoped_lock lock(regions_mutex);
    regions[base] = region{size, current->ordinal, CU_MEMORYTYPE_DEVICE, false, raw};
    *out = base;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFree(CUdeviceptr p) {
    count();
    if (current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    const std::scoped_lock lock(regions_mutex);
    auto it = regions.find(static_cast<std::uintptr_t>(p));
    if (it == regions.end() || it->second.raw == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::free(it->second.raw);
    regions.erase(it);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dst, const void* src, std::size_t n) {
    count();
    void* host = nullptr;
    if (auto rc = device_bytes(dst, n, &host); rc != CUDA_SUCCESS) return rc;
    std::memcpy(host, src, n);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyDtoH(void* dst, CUdeviceptr src, std::size_t n) {
    count();
    void* host = nullptr;
    if (auto rc = device_bytes(src, n, &host); rc != CUDA_SUCCESS) return rc;
    std::memcpy(dst, host, n);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemsetD8(CUdeviceptr dst, unsigned char value, std::size_t n) {
    count();
    void* host = nullptr;
    if (auto rc = device_bytes(dst, n, &host); rc != CUDA_SUCCESS) return rc;
    std::memset(host, value, n);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream) {
    count();
    return current == nullptr ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS;
}

// ------------------------------------------------------------------------------------ test hooks
extern "C" {

/// Number of driver calls made so far (cuGetErrorName/cuGetErrorString excluded).
__attribute__((visibility("default"))) int fake_cuda_calls() { return calls.load(); }

/// Ordinal of this thread's current context, -1 when none; *primary tells whether it is a primary one.
__attribute__((visibility("default"))) int fake_cuda_current(int* primary, int* depth) {
    if (primary != nullptr) *primary = current != nullptr && current->primary ? 1 : 0;
    if (depth != nullptr) *depth = static_cast<int>(pushed.size());
    return current != nullptr ? current->ordinal : -1;
}

/// Makes a non-primary ("application") context of `ordinal` current on this thread; -1 clears.
__attribute__((visibility("default"))) void fake_cuda_set_foreign(int ordinal) {
    current = ordinal >= 0 && ordinal < device_count ? &foreign[ordinal] : nullptr;
}

/// Declares [p, p + n) as memory of the given CUmemorytype / managed flag on device `ordinal`.
__attribute__((visibility("default"))) void fake_cuda_add_region(void* p, std::size_t n, unsigned int type, int managed,
                                                                 int ordinal) {
    const std::scoped_lock lock(regions_mutex);
    regions[reinterpret_cast<std::uintptr_t>(p)] = region{n, ordinal, type, managed != 0, nullptr};
}

/// The range given to the last successful cuMemGetHandleForAddressRange.
__attribute__((visibility("default"))) void fake_cuda_last_export(std::uintptr_t* base, std::size_t* size) {
    *base = last_export_base;
    *size = last_export_size;
}
}
