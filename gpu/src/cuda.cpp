// The CUDA driver API through dlopen/dlsym. Types, enums and prototypes come from cuda.h at compile
// time (LOOM_GPU_HAVE_CUDA_H); libcuda is never linked. Without cuda.h the driver always reports
// not_supported.
#include "loom/gpu/cuda.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#if defined(LOOM_GPU_HAVE_CUDA_H)
#include <cuda.h>
#endif

namespace loom::gpu {

auto to_string(memory_type t) noexcept -> std::string_view {
    switch (t) {
        case memory_type::unregistered_host: return "unregistered_host";
        case memory_type::host: return "host";
        case memory_type::device: return "device";
        case memory_type::managed: return "managed";
    }
    return "unknown";
}

namespace {

// Names and descriptions of the CUresults this module reports most, for when the driver cannot name
// them itself (the toolkit's stub library fails cuGetErrorName like every other call).
struct known_result {
    int code;
    const char* name;
    const char* text;
};
constexpr known_result known_results[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {35, "CUDA_ERROR_INSUFFICIENT_DRIVER", "CUDA driver version is insufficient"},
    {46, "CUDA_ERROR_DEVICES_UNAVAILABLE", "all CUDA-capable devices are busy or unavailable"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

#if defined(LOOM_GPU_HAVE_CUDA_H)
// The loaded driver's own cuGetErrorName/cuGetErrorString, published once it is loaded.
using error_text_fn = CUresult (*)(CUresult, const char**);
std::atomic<error_text_fn> driver_error_name{nullptr};
std::atomic<error_text_fn> driver_error_string{nullptr};
#endif

auto describe(int code) -> std::string {
    const char* name = nullptr;
    const char* text = nullptr;
#if defined(LOOM_GPU_HAVE_CUDA_H)
    const auto rc = static_cast<CUresult>(code);
    if (auto fn = driver_error_name.load(std::memory_order_acquire); fn && fn(rc, &name) != CUDA_SUCCESS) {
        name = nullptr;
    }
    if (auto fn = driver_error_string.load(std::memory_order_acquire); fn && fn(rc, &text) != CUDA_SUCCESS) {
        text = nullptr;
    }
#endif
    for (const auto& k : known_results) {
        if (k.code != code) continue;
        if (name == nullptr) name = k.name;
        if (text == nullptr) text = k.text;
    }
    std::string out = name != nullptr ? name : "CUresult";
    out += " (" + std::to_string(code) + ")";
    if (text != nullptr) out += std::string(": ") + text;
    return out;
}

class cuda_error_category final : public std::error_category {
public:
    [[nodiscard]] auto name() const noexcept -> const char* override { return "cuda"; }
    [[nodiscard]] auto message(int code) const -> std::string override { return describe(code); }
    [[nodiscard]] auto default_error_condition(int code) const noexcept -> std::error_condition override {
        switch (code) {
            case 1: return std::errc::invalid_argument;
            case 2: return std::errc::not_enough_memory;
            case 100: return std::errc::no_such_device;
            case 801: return std::errc::not_supported;
            default: return {code, *this};
        }
    }
};

}  // namespace

auto cuda_category() noexcept -> const std::error_category& {
    static const cuda_error_category category;
    return category;
}

auto cuda_result(const std::error_code& ec) noexcept -> int {
    return ec.category() == cuda_category() ? ec.value() : 0;
}

#if defined(LOOM_GPU_HAVE_CUDA_H)

static_assert(CUDA_ERROR_INVALID_VALUE == 1 && CUDA_ERROR_OUT_OF_MEMORY == 2 && CUDA_ERROR_STUB_LIBRARY == 34 &&
              CUDA_ERROR_NO_DEVICE == 100 && CUDA_ERROR_INVALID_CONTEXT == 201 && CUDA_ERROR_NOT_SUPPORTED == 801 &&
              CUDA_ERROR_UNKNOWN == 999);

// Every entry point, spelled as in code. cuda.h maps several names to versioned symbols
// (cuMemAlloc → cuMemAlloc_v2, ...); the X-macro argument is macro-expanded before use, so the member
// names, their prototypes (decltype) and the strings given to dlsym are all the versioned ones.
// cuGetProcAddress is not used: plain dlsym of the exported versioned symbols is enough and also
// works with the toolkit's stub library.
#define LOOM_CUDA_ENTRY_POINTS(X)    \
    X(cuInit)                        \
    X(cuDriverGetVersion)            \
    X(cuGetErrorName)                \
    X(cuGetErrorString)              \
    X(cuDeviceGetCount)              \
    X(cuDeviceGet)                   \
    X(cuDeviceGetAttribute)          \
    X(cuDeviceGetPCIBusId)           \
    X(cuDevicePrimaryCtxRetain)      \
    X(cuCtxGetCurrent)               \
    X(cuCtxSetCurrent)               \
    X(cuCtxGetDevice)                \
    X(cuCtxPushCurrent)              \
    X(cuCtxPopCurrent)               \
    X(cuPointerGetAttributes)        \
    X(cuMemGetAddressRange)          \
    X(cuMemGetHandleForAddressRange) \
    X(cuMemAlloc)                    \
    X(cuMemFree)                     \
    X(cuMemcpyHtoD)                  \
    X(cuMemcpyDtoH)                  \
    X(cuMemsetD8)                    \
    X(cuStreamSynchronize)

#define LOOM_CUDA_STR2(x) #x
#define LOOM_CUDA_STR(x) LOOM_CUDA_STR2(x)

namespace {

struct entry_points {
#define LOOM_CUDA_MEMBER(fn) decltype(&::fn) fn = nullptr;
    LOOM_CUDA_ENTRY_POINTS(LOOM_CUDA_MEMBER)
#undef LOOM_CUDA_MEMBER
};

// The symbol strings handed to dlsym. Never the per-thread-default-stream (_ptds/_ptsz) variants.
#define LOOM_CUDA_NAME(fn) std::string_view{LOOM_CUDA_STR(fn)},
constexpr std::string_view entry_point_names[] = {LOOM_CUDA_ENTRY_POINTS(LOOM_CUDA_NAME)};
#undef LOOM_CUDA_NAME
static_assert(std::ranges::none_of(entry_point_names,
                                   [](std::string_view n) { return n.ends_with("_ptds") || n.ends_with("_ptsz"); }));
static_assert(std::string_view{LOOM_CUDA_STR(cuMemGetAddressRange)} == "cuMemGetAddressRange_v2");
static_assert(std::string_view{LOOM_CUDA_STR(cuMemAlloc)} == "cuMemAlloc_v2");
static_assert(std::string_view{LOOM_CUDA_STR(cuMemFree)} == "cuMemFree_v2");
static_assert(std::string_view{LOOM_CUDA_STR(cuMemcpyHtoD)} == "cuMemcpyHtoD_v2");
static_assert(std::string_view{LOOM_CUDA_STR(cuMemcpyDtoH)} == "cuMemcpyDtoH_v2");
static_assert(std::string_view{LOOM_CUDA_STR(cuMemsetD8)} == "cuMemsetD8_v2");
static_assert(std::string_view{LOOM_CUDA_STR(cuCtxPushCurrent)} == "cuCtxPushCurrent_v2");
static_assert(std::string_view{LOOM_CUDA_STR(cuCtxPopCurrent)} == "cuCtxPopCurrent_v2");

[[nodiscard]] auto cu_unexpected(CUresult rc) -> std::unexpected<std::error_code> {
    return std::unexpected(std::error_code(static_cast<int>(rc), cuda_category()));
}

[[nodiscard]] auto to_dptr(const void* p) noexcept -> CUdeviceptr {
    return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(p));
}

struct device_entry {
    CUdevice handle{};
    bool dmabuf = false;
    CUcontext primary = nullptr;  // retained on first use, guarded by impl::context_mutex
};

}  // namespace

struct cuda_driver::impl {
    std::string path;
    entry_points ep;
    int version = 0;
    mutable std::mutex context_mutex;
    mutable std::vector<device_entry> devices;

    [[nodiscard]] auto valid_ordinal(int ordinal) const noexcept -> bool {
        return ordinal >= 0 && static_cast<std::size_t>(ordinal) < devices.size();
    }

    [[nodiscard]] auto primary_context(int ordinal) const -> result<CUcontext> {
        const std::scoped_lock lock(context_mutex);
        auto& dev = devices[static_cast<std::size_t>(ordinal)];
        if (dev.primary == nullptr) {
            CUcontext ctx = nullptr;
            if (auto rc = ep.cuDevicePrimaryCtxRetain(&ctx, dev.handle); rc != CUDA_SUCCESS) {
                return cu_unexpected(rc);
            }
            dev.primary = ctx;
        }
        return dev.primary;
    }

    // Makes a context of device `ordinal` current on this thread (see the class comment in cuda.hpp).
    // Pops what it pushed when it goes out of scope.
    class context_scope {
    public:
        context_scope(const impl& d, int ordinal) : ep_(d.ep) {
            CUcontext current = nullptr;
            if (auto rc = ep_.cuCtxGetCurrent(&current); rc != CUDA_SUCCESS) {
                status_ = cu_unexpected(rc);
                return;
            }
            if (current != nullptr) {
                CUdevice dev{};
                if (ep_.cuCtxGetDevice(&dev) == CUDA_SUCCESS &&
                    dev == d.devices[static_cast<std::size_t>(ordinal)].handle) {
                    return;
                }
            }
            auto primary = d.primary_context(ordinal);
            if (!primary) {
                status_ = std::unexpected(primary.error());
                return;
            }
            if (current == nullptr) {
                if (auto rc = ep_.cuCtxSetCurrent(*primary); rc != CUDA_SUCCESS) status_ = cu_unexpected(rc);
                return;
            }
            if (auto rc = ep_.cuCtxPushCurrent(*primary); rc != CUDA_SUCCESS) {
                status_ = cu_unexpected(rc);
                return;
            }
            pushed_ = true;
        }
        ~context_scope() {
            if (pushed_) {
                CUcontext popped = nullptr;
                (void)ep_.cuCtxPopCurrent(&popped);
            }
        }
        context_scope(const context_scope&) = delete;
        auto operator=(const context_scope&) -> context_scope& = delete;

        [[nodiscard]] auto status() const -> const void_result& { return status_; }

    private:
        const entry_points& ep_;
        void_result status_;
        bool pushed_ = false;
    };

    [[nodiscard]] auto pointer_info(const void* p) const -> result<gpu::pointer_info> {
        if (p == nullptr) return make_unexpected(errc::invalid_argument);
        // Zero-filled: IS_MANAGED is documented as a boolean, written into the low byte.
        unsigned int mem_type = 0;
        unsigned int managed = 0;
        int ordinal = -1;
        CUdeviceptr start = 0;
        std::size_t range = 0;
        CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                       CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                       CU_POINTER_ATTRIBUTE_RANGE_SIZE};
        void* data[] = {&mem_type, &managed, &ordinal, &start, &range};
        if (auto rc = ep.cuPointerGetAttributes(static_cast<unsigned int>(std::size(attrs)), attrs, data, to_dptr(p));
            rc != CUDA_SUCCESS) {
            return cu_unexpected(rc);
        }
        gpu::pointer_info info;
        if (managed != 0 || mem_type == CU_MEMORYTYPE_UNIFIED) {
            info.type = memory_type::managed;
        } else if (mem_type == CU_MEMORYTYPE_DEVICE || mem_type == CU_MEMORYTYPE_ARRAY) {
            info.type = memory_type::device;
        } else if (mem_type == CU_MEMORYTYPE_HOST) {
            info.type = memory_type::host;
        } else {
            return info;  // unknown to CUDA: unregistered host memory
        }
        info.device = ordinal;
        info.base = static_cast<std::uintptr_t>(start);
        info.size = range;
        if (info.size == 0 && info.type != memory_type::host && valid_ordinal(ordinal)) {
            // Drivers that do not fill the range attributes: ask for the allocation directly. Left
            // unknown (0) when that fails too.
            const context_scope scope(*this, ordinal);
            CUdeviceptr base = 0;
            std::size_t size = 0;
            if (scope.status() && ep.cuMemGetAddressRange(&base, &size, to_dptr(p)) == CUDA_SUCCESS) {
                info.base = static_cast<std::uintptr_t>(base);
                info.size = size;
            }
        }
        return info;
    }

    // pointer_info() of [p, p + n), required to be device (or, when allowed, managed) memory lying in
    // one allocation (checked when the allocation's extent is known).
    [[nodiscard]] auto device_range(const void* p, std::size_t n, bool allow_managed) const
        -> result<gpu::pointer_info> {
        auto info = pointer_info(p);
        if (!info) return info;
        if (info->type != memory_type::device && !(allow_managed && info->type == memory_type::managed)) {
            return make_unexpected(errc::invalid_argument);
        }
        if (!valid_ordinal(info->device)) return make_unexpected(errc::invalid_argument);
        if (info->size != 0) {
            const auto addr = reinterpret_cast<std::uintptr_t>(p);
            if (addr < info->base || addr - info->base >= info->size || n > info->size - (addr - info->base)) {
                return make_unexpected(errc::invalid_argument);
            }
        }
        return info;
    }

    // After a synchronous host→device copy or memset: the copy may still be in flight (pageable
    // staging; cuMemsetD8 is asynchronous to the host). Wait for the legacy default stream.
    [[nodiscard]] auto sync_default_stream() const -> void_result {
        if (auto rc = ep.cuStreamSynchronize(nullptr); rc != CUDA_SUCCESS) return cu_unexpected(rc);
        return {};
    }
};

struct cuda_loader {
    struct state {
        cuda_driver* driver = nullptr;
        std::string reason;
    };

    static auto get() -> const state& {
        // Thread-safe, once per process; never destroyed, so usable from other static destructors.
        static const state& loaded = *new state(load());
        return loaded;
    }

    static auto load() -> state {
        const char* env = std::getenv("LOOM_CUDA_LIBRARY");
        std::string path = (env != nullptr && *env != '\0') ? env : "libcuda.so.1";
        (void)::dlerror();
        void* lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (lib == nullptr) {
            const char* why = ::dlerror();
            return {nullptr, "cannot load the CUDA driver " + path + ": " + (why != nullptr ? why : "unknown")};
        }
        auto d = std::make_unique<cuda_driver::impl>();
        d->path = path;
        std::string missing;
        auto resolve = [&](auto& fn, std::string_view name) {
            fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(lib, std::string(name).c_str()));
            if (fn == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(name);
        };
#define LOOM_CUDA_RESOLVE(fn) resolve(d->ep.fn, LOOM_CUDA_STR(fn));
        LOOM_CUDA_ENTRY_POINTS(LOOM_CUDA_RESOLVE)
#undef LOOM_CUDA_RESOLVE
        if (!missing.empty()) {
            // Nothing of the library has run yet: unloading it is safe.
            ::dlclose(lib);
            return {nullptr, "the CUDA driver " + path + " lacks " + missing};
        }
        // From here on the library stays loaded even on failure: cuInit may have registered handlers.
        // The driver names its own errors from now on (the stub library cannot; describe() falls back).
        driver_error_name.store(d->ep.cuGetErrorName, std::memory_order_release);
        driver_error_string.store(d->ep.cuGetErrorString, std::memory_order_release);
        if (auto rc = d->ep.cuInit(0); rc != CUDA_SUCCESS) {
            return {nullptr, "cuInit failed in " + path + ": " + describe(rc)};
        }
        (void)d->ep.cuDriverGetVersion(&d->version);
        int count = 0;
        if (auto rc = d->ep.cuDeviceGetCount(&count); rc != CUDA_SUCCESS) {
            return {nullptr, "cuDeviceGetCount failed in " + path + ": " + describe(rc)};
        }
        if (count <= 0) return {nullptr, "the CUDA driver " + path + " reports no device"};
        d->devices.resize(static_cast<std::size_t>(count));
        for (int i = 0; i < count; ++i) {
            auto& dev = d->devices[static_cast<std::size_t>(i)];
            if (auto rc = d->ep.cuDeviceGet(&dev.handle, i); rc != CUDA_SUCCESS) {
                return {nullptr, "cuDeviceGet(" + std::to_string(i) + ") failed in " + path + ": " + describe(rc)};
            }
            int supported = 0;
            dev.dmabuf = d->ep.cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, dev.handle) ==
                             CUDA_SUCCESS &&
                         supported != 0;
        }
        // Never deleted: the driver lives as long as the process (no unload at exit while other
        // static destructors or threads may still use it).
        return {new cuda_driver(std::move(d)), {}};
    }
};

auto cuda_driver::compiled_in() noexcept -> bool { return true; }

cuda_driver::cuda_driver(std::unique_ptr<impl> i) noexcept : impl_(std::move(i)) {}
cuda_driver::~cuda_driver() = default;

auto cuda_driver::instance() -> result<cuda_driver*> {
    const auto& s = cuda_loader::get();
    if (s.driver == nullptr) return make_unexpected(errc::not_supported);
    return s.driver;
}

auto cuda_driver::unavailable_reason() -> std::string_view { return cuda_loader::get().reason; }

auto cuda_driver::library_path() const noexcept -> std::string_view { return impl_->path; }
auto cuda_driver::driver_version() const noexcept -> int { return impl_->version; }
auto cuda_driver::device_count() const noexcept -> int { return static_cast<int>(impl_->devices.size()); }

auto cuda_driver::pci_bus_id(int ordinal) const -> result<std::string> {
    if (!impl_->valid_ordinal(ordinal)) return make_unexpected(errc::invalid_argument);
    char buf[32] = {};
    const auto& dev = impl_->devices[static_cast<std::size_t>(ordinal)];
    if (auto rc = impl_->ep.cuDeviceGetPCIBusId(buf, static_cast<int>(sizeof(buf)) - 1, dev.handle);
        rc != CUDA_SUCCESS) {
        return cu_unexpected(rc);
    }
    std::string id(buf);
    std::ranges::transform(id, id.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return id;
}

auto cuda_driver::dmabuf_supported(int ordinal) const noexcept -> bool {
    return impl_->valid_ordinal(ordinal) && impl_->devices[static_cast<std::size_t>(ordinal)].dmabuf;
}

auto cuda_driver::pointer_info(const void* p) const -> result<gpu::pointer_info> { return impl_->pointer_info(p); }

auto cuda_driver::export_dmabuf(const void* p, std::size_t n) const -> result<dmabuf> {
    if (p == nullptr || n == 0) return make_unexpected(errc::invalid_argument);
    auto info = impl_->device_range(p, n, /*allow_managed=*/false);
    if (!info) return std::unexpected(info.error());
    if (info->size == 0) return make_unexpected(errc::invalid_argument);  // extent unknown: cannot align
    if (!dmabuf_supported(info->device)) return make_unexpected(errc::not_supported);

    // The driver wants a host-page-aligned start and size: export the page-aligned allocation.
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const std::uintptr_t start = info->base & ~(page - 1);
    const std::uintptr_t end = (info->base + info->size + page - 1) & ~(page - 1);

    const impl::context_scope scope(*impl_, info->device);
    if (!scope.status()) return std::unexpected(scope.status().error());
    int fd = -1;
    if (auto rc = impl_->ep.cuMemGetHandleForAddressRange(&fd, static_cast<CUdeviceptr>(start), end - start,
                                                          CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
        rc != CUDA_SUCCESS) {
        return cu_unexpected(rc);
    }
    if (fd < 0) return make_unexpected(errc::bad_file_descriptor);
    dmabuf out;
    out.fd.reset(fd);
    out.offset = reinterpret_cast<std::uintptr_t>(p) - start;
    out.length = end - start;
    out.base = start;
    return out;
}

auto cuda_driver::alloc(std::size_t size, int ordinal) const -> result<void*> {
    if (size == 0 || !impl_->valid_ordinal(ordinal)) return make_unexpected(errc::invalid_argument);
    const impl::context_scope scope(*impl_, ordinal);
    if (!scope.status()) return std::unexpected(scope.status().error());
    CUdeviceptr dptr = 0;
    if (auto rc = impl_->ep.cuMemAlloc(&dptr, size); rc != CUDA_SUCCESS) return cu_unexpected(rc);
    return reinterpret_cast<void*>(static_cast<std::uintptr_t>(dptr));
}

auto cuda_driver::free(void* p) const -> void_result {
    if (p == nullptr) return make_unexpected(errc::invalid_argument);
    auto info = impl_->device_range(p, 1, /*allow_managed=*/false);
    if (!info) return std::unexpected(info.error());
    if (info->size != 0 && info->base != reinterpret_cast<std::uintptr_t>(p)) {
        return make_unexpected(errc::invalid_argument);  // not the start of the allocation
    }
    const impl::context_scope scope(*impl_, info->device);
    if (!scope.status()) return scope.status();
    if (auto rc = impl_->ep.cuMemFree(to_dptr(p)); rc != CUDA_SUCCESS) return cu_unexpected(rc);
    return {};
}

auto cuda_driver::copy_to_device(void* dst, const void* src, std::size_t n) const -> void_result {
    if (dst == nullptr || src == nullptr || n == 0) return make_unexpected(errc::invalid_argument);
    auto info = impl_->device_range(dst, n, /*allow_managed=*/true);
    if (!info) return std::unexpected(info.error());
    const impl::context_scope scope(*impl_, info->device);
    if (!scope.status()) return scope.status();
    if (auto rc = impl_->ep.cuMemcpyHtoD(to_dptr(dst), src, n); rc != CUDA_SUCCESS) return cu_unexpected(rc);
    return impl_->sync_default_stream();
}

auto cuda_driver::copy_to_host(void* dst, const void* src, std::size_t n) const -> void_result {
    if (dst == nullptr || src == nullptr || n == 0) return make_unexpected(errc::invalid_argument);
    auto info = impl_->device_range(src, n, /*allow_managed=*/true);
    if (!info) return std::unexpected(info.error());
    const impl::context_scope scope(*impl_, info->device);
    if (!scope.status()) return scope.status();
    // Device → host copies return only once complete.
    if (auto rc = impl_->ep.cuMemcpyDtoH(dst, to_dptr(src), n); rc != CUDA_SUCCESS) return cu_unexpected(rc);
    return {};
}

auto cuda_driver::memset(void* dst, unsigned char value, std::size_t n) const -> void_result {
    if (dst == nullptr || n == 0) return make_unexpected(errc::invalid_argument);
    auto info = impl_->device_range(dst, n, /*allow_managed=*/true);
    if (!info) return std::unexpected(info.error());
    const impl::context_scope scope(*impl_, info->device);
    if (!scope.status()) return scope.status();
    if (auto rc = impl_->ep.cuMemsetD8(to_dptr(dst), value, n); rc != CUDA_SUCCESS) return cu_unexpected(rc);
    return impl_->sync_default_stream();
}

#else  // !LOOM_GPU_HAVE_CUDA_H: no driver can ever be loaded; the members are unreachable.

struct cuda_driver::impl {};

struct cuda_loader {
    static constexpr std::string_view reason =
        "CUDA support is not compiled in (cuda.h was not found when loom was built)";
};

auto cuda_driver::compiled_in() noexcept -> bool { return false; }

cuda_driver::cuda_driver(std::unique_ptr<impl> i) noexcept : impl_(std::move(i)) {}
cuda_driver::~cuda_driver() = default;

auto cuda_driver::instance() -> result<cuda_driver*> { return make_unexpected(errc::not_supported); }
auto cuda_driver::unavailable_reason() -> std::string_view { return cuda_loader::reason; }
auto cuda_driver::library_path() const noexcept -> std::string_view { return {}; }
auto cuda_driver::driver_version() const noexcept -> int { return 0; }
auto cuda_driver::device_count() const noexcept -> int { return 0; }
auto cuda_driver::pci_bus_id(int) const -> result<std::string> { return make_unexpected(errc::not_supported); }
auto cuda_driver::dmabuf_supported(int) const noexcept -> bool { return false; }
auto cuda_driver::pointer_info(const void*) const -> result<gpu::pointer_info> {
    return make_unexpected(errc::not_supported);
}
auto cuda_driver::export_dmabuf(const void*, std::size_t) const -> result<dmabuf> {
    return make_unexpected(errc::not_supported);
}
auto cuda_driver::alloc(std::size_t, int) const -> result<void*> { return make_unexpected(errc::not_supported); }
auto cuda_driver::free(void*) const -> void_result { return make_unexpected(errc::not_supported); }
auto cuda_driver::copy_to_device(void*, const void*, std::size_t) const -> void_result {
    return make_unexpected(errc::not_supported);
}
auto cuda_driver::copy_to_host(void*, const void*, std::size_t) const -> void_result {
    return make_unexpected(errc::not_supported);
}
auto cuda_driver::memset(void*, unsigned char, std::size_t) const -> void_result {
    return make_unexpected(errc::not_supported);
}

#endif

}  // namespace loom::gpu
