// tests/unit/gpu: what the GPU loader tests share. cuda_driver::instance() and
// hip_runtime::instance() load once per process, so every case that loads runs in a forked
// child with its own environment (run_in_child). The child reports through a pipe and its exit
// status; a crash in the child fails the test. The test process itself never loads a runtime.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <loom/gpu/cuda.hpp>
#include <loom/gpu/hip.hpp>
#include <loom/gpu/memory.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpu_test {

using loom::errc;
using loom::make_error_code;
using loom::gpu::cuda_driver;
using loom::gpu::hip_runtime;
using loom::gpu::memory_kind;
using loom::gpu::memory_type;

inline constexpr const char* stub_library = "/usr/local/cuda/lib64/stubs/libcuda.so";
#if defined(LOOM_TEST_FAKE_CUDA)
inline constexpr const char* fake_library = LOOM_TEST_FAKE_CUDA;
#else
inline constexpr const char* fake_library = "";  // not built: the fake-driver tests skip
#endif

struct child_outcome {
    int status = -1;
    std::string output;
    [[nodiscard]] auto passed() const -> bool { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }
};

// Runs `body` in a forked child after setting the environment (a null value unsets). `body` returns
// an empty string on success, else what went wrong.
inline auto run_in_child(std::vector<std::pair<const char*, const char*>> env, const std::function<std::string()>& body)
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

inline auto contains(std::string_view haystack, std::string_view needle) -> bool {
    return haystack.find(needle) != std::string_view::npos;
}

inline auto not_supported() -> std::error_code { return make_error_code(errc::not_supported); }
inline auto invalid_argument() -> std::error_code { return make_error_code(errc::invalid_argument); }

template <class T>
inline auto error_of(const loom::result<T>& r) -> std::error_code {
    return r ? std::error_code{} : r.error();
}

// A hook exported by the fake driver (which the child has loaded through instance()).
template <class Fn>
inline auto fake_hook(const char* name) -> Fn {
    void* lib = ::dlopen(fake_library, RTLD_NOW | RTLD_NOLOAD);
    if (lib == nullptr) return nullptr;
    auto fn = reinterpret_cast<Fn>(::dlsym(lib, name));
    ::dlclose(lib);  // drops only the reference taken here
    return fn;
}
inline auto fake_calls() -> int { return fake_hook<int (*)()>("fake_cuda_calls")(); }

// The fake driver's environment: everything else that could interfere unset.
inline auto fake_env(std::vector<std::pair<const char*, const char*>> extra = {})
    -> std::vector<std::pair<const char*, const char*>> {
    std::vector<std::pair<const char*, const char*>> env{
        {"LOOM_CUDA_LIBRARY", fake_library}, {"FAKE_CUDA_INIT_RESULT", nullptr}, {"FAKE_CUDA_NO_RANGE", nullptr}};
    env.insert(env.end(), extra.begin(), extra.end());
    return env;
}

// run_in_child for a body that needs the CUDA driver its environment names: the child loads it
// first (a failure to load fails the test) and hands it to `body`.
inline auto run_with_driver(std::vector<std::pair<const char*, const char*>> env,
                            std::function<std::string(cuda_driver&)> body) -> child_outcome {
    return run_in_child(std::move(env), [&body]() -> std::string {
        auto d = cuda_driver::instance();
        CHILD_CHECK_MSG(d.has_value(), std::string(cuda_driver::unavailable_reason()));
        return body(**d);
    });
}

#define SKIP_WITHOUT_FAKE()                                                                       \
    do {                                                                                          \
        if (*fake_library == '\0' || !cuda_driver::compiled_in())                                 \
            GTEST_SKIP() << "built without cuda.h: no fake driver, CUDA support not compiled in"; \
    } while (0)

}  // namespace gpu_test
