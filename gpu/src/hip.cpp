// The HIP runtime through dlopen/dlsym. No HIP header: the three entry points used are declared here
// with their published C signatures (hipError_t is a C enum, int-sized; hipSuccess is 0).
#include "loom/gpu/hip.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>
#include <vector>

namespace loom::gpu {

namespace {

using hip_error = int;
using hip_init_fn = hip_error (*)(unsigned int);      // hipInit(unsigned int flags)
using hip_get_device_count_fn = hip_error (*)(int*);  // hipGetDeviceCount(int* count)
using hip_device_get_pci_bus_id_fn = hip_error (*)(char*, int,
                                                   int);  // hipDeviceGetPCIBusId(char*, int len, int device)
constexpr hip_error hip_success = 0;

}  // namespace

struct hip_runtime::impl {
    std::string path;
    int count = 0;
    hip_device_get_pci_bus_id_fn get_pci_bus_id = nullptr;
};

struct hip_loader {
    struct state {
        hip_runtime* runtime = nullptr;
        std::string reason;
    };

    static auto get() -> const state& {
        // Thread-safe, once per process; never destroyed, so usable from other static destructors.
        static const state& loaded = *new state(load());
        return loaded;
    }

    static auto load() -> state {
        std::vector<std::string> candidates;
        if (const char* env = std::getenv("LOOM_HIP_LIBRARY"); env != nullptr && *env != '\0') {
            candidates.emplace_back(env);
        } else {
            candidates = {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"};
        }
        void* lib = nullptr;
        std::string path;
        std::string errors;
        for (const auto& c : candidates) {
            (void)::dlerror();
            lib = ::dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
            if (lib != nullptr) {
                path = c;
                break;
            }
            const char* why = ::dlerror();
            errors += (errors.empty() ? "" : "; ") + c + ": " + (why != nullptr ? why : "unknown");
        }
        if (lib == nullptr) return {nullptr, "cannot load the HIP runtime (" + errors + ")"};

        auto init = reinterpret_cast<hip_init_fn>(::dlsym(lib, "hipInit"));
        auto get_count = reinterpret_cast<hip_get_device_count_fn>(::dlsym(lib, "hipGetDeviceCount"));
        auto get_pci = reinterpret_cast<hip_device_get_pci_bus_id_fn>(::dlsym(lib, "hipDeviceGetPCIBusId"));
        if (init == nullptr || get_count == nullptr || get_pci == nullptr) {
            ::dlclose(lib);  // nothing of it has run yet
            return {nullptr, "the HIP runtime " + path + " lacks hipInit, hipGetDeviceCount or hipDeviceGetPCIBusId"};
        }
        // From here on the library stays loaded, even on failure.
        if (auto rc = init(0); rc != hip_success) {
            return {nullptr, "hipInit failed in " + path + ": hipError_t " + std::to_string(rc)};
        }
        int count = 0;
        if (auto rc = get_count(&count); rc != hip_success) {
            return {nullptr, "hipGetDeviceCount failed in " + path + ": hipError_t " + std::to_string(rc)};
        }
        if (count <= 0) return {nullptr, "the HIP runtime " + path + " reports no device"};
        auto i = std::make_unique<hip_runtime::impl>();
        i->path = path;
        i->count = count;
        i->get_pci_bus_id = get_pci;
        return {new hip_runtime(std::move(i)), {}};  // lives as long as the process
    }
};

hip_runtime::hip_runtime(std::unique_ptr<impl> i) noexcept : impl_(std::move(i)) {}
hip_runtime::~hip_runtime() = default;

auto hip_runtime::instance() -> result<hip_runtime*> {
    const auto& s = hip_loader::get();
    if (s.runtime == nullptr) return make_unexpected(errc::not_supported);
    return s.runtime;
}

auto hip_runtime::unavailable_reason() -> std::string_view { return hip_loader::get().reason; }

auto hip_runtime::library_path() const noexcept -> std::string_view { return impl_->path; }
auto hip_runtime::device_count() const noexcept -> int { return impl_->count; }

auto hip_runtime::pci_bus_id(int ordinal) const -> result<std::string> {
    if (ordinal < 0 || ordinal >= impl_->count) return make_unexpected(errc::invalid_argument);
    char buf[32] = {};
    if (impl_->get_pci_bus_id(buf, static_cast<int>(sizeof(buf)) - 1, ordinal) != hip_success) {
        return make_unexpected(errc::io_error);
    }
    std::string id(buf);
    std::ranges::transform(id, id.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return id;
}

}  // namespace loom::gpu
