// loom/gpu/memory.hpp — where a buffer lives, independent of the GPU runtime, and what libfabric
// needs to know about it (fi_mr_attr::iface and ::device).
#pragma once

#include <rdma/fi_domain.h>

#include <string_view>
#include <vector>

/// GPU helpers: where a buffer lives and what libfabric needs to know to register it.
namespace loom::gpu {

/// Where a buffer lives: host memory or the device memory of a GPU runtime.
enum class memory_kind {
    host,       ///< host memory, page-locked (registered) host memory included (FI_HMEM_SYSTEM)
    cuda,       ///< CUDA device or managed memory (FI_HMEM_CUDA)
    rocm,       ///< AMD ROCm device memory (FI_HMEM_ROCR)
    level_zero  ///< Intel oneAPI Level Zero device memory (FI_HMEM_ZE)
};

/// The enumerator's name ("host", "cuda", ...).
[[nodiscard]] auto to_string(memory_kind k) noexcept -> std::string_view;

/// The memory kind of an address. host when no GPU runtime is loaded or the address is not device
/// memory of a loaded one. CUDA device and managed memory are `cuda`; page-locked (registered) host
/// memory is `host`. ROCm and Level Zero addresses are not recognised yet (HIP is loaded for device
/// enumeration only; Level Zero is not loaded): they classify as host.
[[nodiscard]] auto classify(const void* p) -> memory_kind;

/// The kinds usable in this process: always host, then each GPU runtime that loaded
/// (cuda_driver::instance(), hip_runtime::instance()).
[[nodiscard]] auto available_backends() -> std::vector<memory_kind>;

/// libfabric's HMEM interface for a kind (FI_HMEM_SYSTEM, FI_HMEM_CUDA, FI_HMEM_ROCR, FI_HMEM_ZE).
[[nodiscard]] constexpr auto fabric_iface(memory_kind k) noexcept -> fi_hmem_iface {
    switch (k) {
        case memory_kind::host: return FI_HMEM_SYSTEM;
        case memory_kind::cuda: return FI_HMEM_CUDA;
        case memory_kind::rocm: return FI_HMEM_ROCR;
        case memory_kind::level_zero: return FI_HMEM_ZE;
    }
    return FI_HMEM_SYSTEM;
}

/// What to put in fi_mr_attr for a buffer: iface, and the device id (fi_mr_attr::device.cuda is the
/// CUDA device ordinal; 0 for host memory).
struct hmem_location {
    memory_kind kind = memory_kind::host;  ///< where the buffer lives
    fi_hmem_iface iface = FI_HMEM_SYSTEM;  ///< libfabric's HMEM interface for it
    int device = 0;                        ///< the device id (the CUDA ordinal; 0 for host memory)
};

/// classify() plus the device id libfabric expects for the address.
[[nodiscard]] auto locate(const void* p) -> hmem_location;

}  // namespace loom::gpu
