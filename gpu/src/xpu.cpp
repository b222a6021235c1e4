#include "loom/gpu/xpu.hpp"

#include "loom/gpu/cuda.hpp"
#include "loom/gpu/hip.hpp"

#include <optional>

namespace loom::gpu {
namespace {

auto iface_of(memory_kind k) noexcept -> hmem_iface { return static_cast<hmem_iface>(fabric_iface(k)); }

/// The devices the kind's runtime reports, or nullopt when it is not loaded.
auto device_count(memory_kind k) -> std::optional<int> {
    switch (k) {
        case memory_kind::cuda:
            if (auto d = cuda_driver::instance()) return (*d)->device_count();
            return std::nullopt;
        case memory_kind::rocm:
            if (auto h = hip_runtime::instance()) return (*h)->device_count();
            return std::nullopt;
        case memory_kind::host:
        case memory_kind::level_zero: break;
    }
    return std::nullopt;
}

}  // namespace

auto xpu_context_for(domain& dom, const void* device_pointer) -> result<xpu_context> {
    const hmem_location where = locate(device_pointer);
    if (where.kind == memory_kind::host) return make_unexpected(errc::invalid_argument);
    return xpu_context::create(dom, iface_of(where.kind), static_cast<std::uint64_t>(where.device));
}

auto xpu_context_for(domain& dom, memory_kind kind, int ordinal) -> result<xpu_context> {
    if (kind == memory_kind::host || ordinal < 0) return make_unexpected(errc::invalid_argument);
    const auto count = device_count(kind);
    if (!count) return make_unexpected(errc::not_supported);
    if (ordinal >= *count) return make_unexpected(errc::invalid_argument);
    return xpu_context::create(dom, iface_of(kind), static_cast<std::uint64_t>(ordinal));
}

}  // namespace loom::gpu
