#include "loom/gpu/memory.hpp"

#include "loom/gpu/cuda.hpp"
#include "loom/gpu/hip.hpp"

namespace loom::gpu {

static_assert(FI_HMEM_SYSTEM == 0 && FI_HMEM_CUDA == 1 && FI_HMEM_ROCR == 2 && FI_HMEM_ZE == 3);
static_assert(fabric_iface(memory_kind::cuda) == FI_HMEM_CUDA);

auto to_string(memory_kind k) noexcept -> std::string_view {
    switch (k) {
        case memory_kind::host: return "host";
        case memory_kind::cuda: return "cuda";
        case memory_kind::rocm: return "rocm";
        case memory_kind::level_zero: return "level_zero";
    }
    return "unknown";
}

auto locate(const void* p) -> hmem_location {
    if (p == nullptr) return {};
    if (auto cuda = cuda_driver::instance(); cuda) {
        if (auto info = (*cuda)->pointer_info(p);
            info && (info->type == memory_type::device || info->type == memory_type::managed)) {
            return {memory_kind::cuda, FI_HMEM_CUDA, info->device};
        }
    }
    return {};
}

auto classify(const void* p) -> memory_kind { return locate(p).kind; }

auto available_backends() -> std::vector<memory_kind> {
    std::vector<memory_kind> kinds{memory_kind::host};
    if (cuda_driver::instance()) kinds.push_back(memory_kind::cuda);
    if (hip_runtime::instance()) kinds.push_back(memory_kind::rocm);
    return kinds;
}

}  // namespace loom::gpu
