// gpu/: loading the GPU runtimes (a missing library, a library without the entry points, the CUDA
// toolkit's stub driver, a fake driver), argument checks, contexts, DMA-BUF export and classify().
//
// cuda_driver::instance() and hip_runtime::instance() load once per process, so every case that
// loads runs in a forked child with its own environment (run_in_child). The child reports through a
// pipe and its exit status; a crash in the child fails the test. This process itself never loads a
// runtime.
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <latch>
#include <loom/gpu/cuda.hpp>
#include <loom/gpu/hip.hpp>
#include <loom/gpu/memory.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace {

using loom::errc;
using loom::make_error_code;
using loom::gpu::cuda_driver;
using loom::gpu::hip_runtime;
using loom::gpu::memory_kind;
using loom::gpu::memory_type;

constexpr const char* stub_library = "/usr/local/cuda/lib64/stubs/libcuda.so";
#if defined(LOOM_TEST_FAKE_CUDA)
constexpr const char* fake_library = LOOM_TEST_FAKE_CUDA;
#else
constexpr const char* fake_library = "";  // not built: the fake-driver tests skip
#endif

struct child_outcome {
    int status = -1;
    std::string output;
    [[nodiscard]] auto passed() const -> bool { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }
};

// Runs `body` in a forked child after setting the environment (a null value unsets). `body` returns
// an empty string on success, else what went wrong.
auto run_in_child(std::vector<std::pair<const char*, const char*>> env, const std::function<std::string()>& body)
    -> child_outcome {
    int fds[2];
    if (::pipe(fds) != 0) return {-1, "pipe failed"};
    const pid_t pid = ::fork();
    if (pid < 0) return {-1, "fork failed"};
    if (pid == 0) {
        ::close(fds[0]);
        for (const auto& [name, value] : env) {
            if (value != nullptr) {
                ::setenv(name, value, 1);
            } else {
                ::unsetenv(name);
            }
        }
        std::string message;
        try {
            message = body();
        } catch (...) {
            message = "exception thrown in the child";
        }
        std::string_view rest = message;
        while (!rest.empty()) {
            const auto n = ::write(fds[1], rest.data(), rest.size());
            if (n <= 0) break;
            rest.remove_prefix(static_cast<std::size_t>(n));
        }
        ::_exit(message.empty() ? 0 : 1);
    }
    ::close(fds[1]);
    child_outcome out;
    char buf[512];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof(buf))) > 0;) out.output.append(buf, static_cast<std::size_t>(n));
    ::close(fds[0]);
    while (::waitpid(pid, &out.status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(out.status))
        out.output += " [child did not exit normally, status " + std::to_string(out.status) + "]";
    return out;
}

#define CHILD_CHECK(cond)                                                                              \
    do {                                                                                               \
        if (!(cond)) return std::string(__FILE__ ":") + std::to_string(__LINE__) + ": failed: " #cond; \
    } while (0)
#define CHILD_CHECK_MSG(cond, msg)                                                                               \
    do {                                                                                                         \
        if (!(cond))                                                                                             \
            return std::string(__FILE__ ":") + std::to_string(__LINE__) + ": failed: " #cond " (" + (msg) + ")"; \
    } while (0)

auto contains(std::string_view haystack, std::string_view needle) -> bool {
    return haystack.find(needle) != std::string_view::npos;
}

auto not_supported() -> std::error_code { return make_error_code(errc::not_supported); }
auto invalid_argument() -> std::error_code { return make_error_code(errc::invalid_argument); }

template <class T>
auto error_of(const loom::result<T>& r) -> std::error_code {
    return r ? std::error_code{} : r.error();
}

// A hook exported by the fake driver (which the child has loaded through instance()).
template <class Fn>
auto fake_hook(const char* name) -> Fn {
    void* lib = ::dlopen(fake_library, RTLD_NOW | RTLD_NOLOAD);
    if (lib == nullptr) return nullptr;
    auto fn = reinterpret_cast<Fn>(::dlsym(lib, name));
    ::dlclose(lib);  // drops only the reference taken here
    return fn;
}
auto fake_calls() -> int { return fake_hook<int (*)()>("fake_cuda_calls")(); }

// The fake driver's environment: everything else that could interfere unset.
auto fake_env(std::vector<std::pair<const char*, const char*>> extra = {})
    -> std::vector<std::pair<const char*, const char*>> {
    std::vector<std::pair<const char*, const char*>> env{
        {"LOOM_CUDA_LIBRARY", fake_library}, {"FAKE_CUDA_INIT_RESULT", nullptr}, {"FAKE_CUDA_NO_RANGE", nullptr}};
    env.insert(env.end(), extra.begin(), extra.end());
    return env;
}

#define SKIP_WITHOUT_FAKE()                                                                       \
    do {                                                                                          \
        if (*fake_library == '\0' || !cuda_driver::compiled_in())                                 \
            GTEST_SKIP() << "built without cuda.h: no fake driver, CUDA support not compiled in"; \
    } while (0)

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

// ------------------------------------------------------------------------- the fake driver, loaded

TEST(GpuCudaFake, EnumeratesDevices) {
    SKIP_WITHOUT_FAKE();
    const auto r = run_in_child(fake_env(), [] {
        auto d = cuda_driver::instance();
        CHILD_CHECK_MSG(d.has_value(), std::string(cuda_driver::unavailable_reason()));
        auto& cuda = **d;
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
    const auto r = run_in_child(fake_env(), [] {
        auto d = cuda_driver::instance();
        CHILD_CHECK_MSG(d.has_value(), std::string(cuda_driver::unavailable_reason()));
        auto& cuda = **d;
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
    const auto r = run_in_child(fake_env(), [] {
        auto d = cuda_driver::instance();
        CHILD_CHECK_MSG(d.has_value(), std::string(cuda_driver::unavailable_reason()));
        auto& cuda = **d;
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
    const auto r = run_in_child(fake_env(), [] {
        auto d = cuda_driver::instance();
        CHILD_CHECK_MSG(d.has_value(), std::string(cuda_driver::unavailable_reason()));
        auto p = (*d)->alloc(std::size_t{1} << 41);
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
    const auto r = run_in_child(fake_env(), [] {
        auto d = cuda_driver::instance();
        CHILD_CHECK_MSG(d.has_value(), std::string(cuda_driver::unavailable_reason()));
        auto& cuda = **d;
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
    const auto r = run_in_child(fake_env(), [] {
        auto d = cuda_driver::instance();
        CHILD_CHECK_MSG(d.has_value(), std::string(cuda_driver::unavailable_reason()));
        auto& cuda = **d;
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
    const auto r = run_in_child(fake_env({{"FAKE_CUDA_NO_RANGE", "1"}}), [] {
        auto d = cuda_driver::instance();
        CHILD_CHECK_MSG(d.has_value(), std::string(cuda_driver::unavailable_reason()));
        auto& cuda = **d;
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
