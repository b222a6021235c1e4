// loom/gpu/hip.hpp — the HIP runtime (ROCm), loaded at run time with dlopen (never linked).
//
// The library is `$LOOM_HIP_LIBRARY` when that variable is set, else the first of "libamdhip64.so",
// "libamdhip64.so.6", "libamdhip64.so.5" that loads. Loaded and initialised (hipInit(0)) once per
// process on the first call to hip_runtime::instance(); failures report errc::not_supported and
// unavailable_reason() says why. Only device enumeration is offered; no HIP header is needed.
#pragma once

#include <loom/error.hpp>
#include <memory>
#include <string>
#include <string_view>

namespace loom::gpu {

/// The process-wide HIP runtime, for device enumeration.
class hip_runtime {
public:
    /// The loaded runtime, or errc::not_supported (see unavailable_reason()). Thread-safe.
    [[nodiscard]] static auto instance() -> result<hip_runtime*>;
    /// Why instance() failed; empty when the runtime is available. Loads it if not yet tried.
    [[nodiscard]] static auto unavailable_reason() -> std::string_view;

    /// The library that was loaded (as dlopen was given it).
    [[nodiscard]] auto library_path() const noexcept -> std::string_view;
    /// Number of devices (≥ 1).
    [[nodiscard]] auto device_count() const noexcept -> int;
    /// PCI address of a device in lowercase "0000:3b:00.0" form. invalid_argument for unknown
    /// ordinals; io_error when the runtime call fails.
    [[nodiscard]] auto pci_bus_id(int ordinal) const -> result<std::string>;

    hip_runtime(const hip_runtime&) = delete;
    auto operator=(const hip_runtime&) -> hip_runtime& = delete;
    ~hip_runtime();

private:
    struct impl;
    explicit hip_runtime(std::unique_ptr<impl> i) noexcept;
    std::unique_ptr<impl> impl_;
    friend struct hip_loader;
};

}  // namespace loom::gpu
