// loom/gpu/xpu.hpp — XPU contexts (loom/xpu.hpp) for the accelerators gpu/ knows: by a device
// buffer, or by a runtime and device ordinal.
#pragma once

#include <loom/gpu/memory.hpp>
#include <loom/xpu.hpp>

namespace loom::gpu {

/// A context of `dom` for the accelerator that holds `device_pointer` (its kind and device as
/// locate() finds them). invalid_argument for host memory; otherwise xpu_context::create's answer.
[[nodiscard]] auto xpu_context_for(domain& dom, const void* device_pointer) -> result<xpu_context>;

/// A context of `dom` for device `ordinal` of a GPU runtime. invalid_argument for host or a
/// negative ordinal, or one the loaded runtime does not have; not_supported when that runtime is
/// not loaded (Level Zero never is); otherwise xpu_context::create's answer.
[[nodiscard]] auto xpu_context_for(domain& dom, memory_kind kind, int ordinal) -> result<xpu_context>;

}  // namespace loom::gpu
