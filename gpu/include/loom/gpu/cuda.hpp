// loom/gpu/cuda.hpp — the CUDA driver API, loaded at run time with dlopen (never linked).
//
// The driver library is `$LOOM_CUDA_LIBRARY` when that variable is set, else "libcuda.so.1". It is
// loaded, its entry points resolved and cuInit(0) called once per process, on the first call to
// cuda_driver::instance(); when any of that fails every later call reports errc::not_supported and
// unavailable_reason() says why. The library stays loaded until the process exits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <loom/error.hpp>
#include <loom/gpu/unique_fd.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

namespace loom::gpu {

/// What the driver knows about an address (CUmemorytype plus CU_POINTER_ATTRIBUTE_IS_MANAGED).
enum class memory_type {
    unregistered_host,  ///< not known to CUDA (plain malloc/stack memory, or memory of another runtime)
    host,               ///< page-locked host memory (cuMemHostAlloc / cuMemHostRegister)
    device,             ///< device memory (cuMemAlloc, cuMemCreate + cuMemMap, ...)
    managed,            ///< unified (managed) memory (cuMemAllocManaged)
};

/// The enumerator's name ("device", "managed", ...).
[[nodiscard]] auto to_string(memory_type t) noexcept -> std::string_view;

/// Result of cuda_driver::pointer_info().
struct pointer_info {
    memory_type type = memory_type::unregistered_host;  ///< what kind of memory the address is
    int device = -1;                                    ///< device ordinal; -1 for unregistered host memory
    std::uintptr_t base = 0;  ///< start of the allocation containing the address; 0 when unknown
    std::size_t size = 0;     ///< size of that allocation; 0 when unknown
};

/// A DMA-BUF exported for a device address range (cuda_driver::export_dmabuf()).
///
/// The exported range is [base, base + length): the page-aligned extent of the whole allocation that
/// contains the requested bytes. The requested pointer is at `offset` inside it, so for libfabric:
/// fi_mr_dmabuf{.fd = fd.get(), .offset = offset, .len = n, .base_addr = (void*)base}.
struct dmabuf {
    unique_fd fd;              ///< the DMA-BUF file descriptor, closed when this object dies
    std::uint64_t offset = 0;  ///< offset of the requested pointer within the exported range
    std::size_t length = 0;    ///< length of the exported range (a multiple of the page size)
    std::uintptr_t base = 0;   ///< device virtual address where the exported range begins
};

/// Category of CUDA driver errors: the value is the CUresult, message() gives its name and
/// description ("CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"). CUDA_ERROR_INVALID_VALUE,
/// CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_NO_DEVICE and CUDA_ERROR_NOT_SUPPORTED compare equal to the
/// matching std::errc conditions (as loom's own errors do).
[[nodiscard]] auto cuda_category() noexcept -> const std::error_category&;
/// The CUresult held by `ec`, or 0 when `ec` is not a CUDA driver error.
[[nodiscard]] auto cuda_result(const std::error_code& ec) noexcept -> int;

/// The process-wide CUDA driver.
///
/// Errors: arguments are checked before the driver is called (null pointers, zero sizes, unknown
/// device ordinals, ranges outside their allocation → errc::invalid_argument); failures of the driver
/// itself are reported in cuda_category() with the CUresult as the value.
///
/// Contexts: calls that need a current context (alloc, free, copies, memset, export_dmabuf) use the
/// context current on the calling thread when it belongs to the device in question; with no current
/// context they make the device's primary context current on the calling thread (and leave it current,
/// as the CUDA runtime does); with a context of another device current they push the primary context
/// for the duration of the call and pop it afterwards. Primary contexts are retained on first use and
/// never released.
class cuda_driver {
public:
    /// The loaded driver, or errc::not_supported (see unavailable_reason()). Thread-safe.
    [[nodiscard]] static auto instance() -> result<cuda_driver*>;
    /// Why instance() failed; empty when the driver is available. Loads the driver if not yet tried.
    [[nodiscard]] static auto unavailable_reason() -> std::string_view;
    /// False when loom was built without cuda.h: instance() then always reports not_supported.
    [[nodiscard]] static auto compiled_in() noexcept -> bool;

    /// The library that was loaded (as dlopen was given it).
    [[nodiscard]] auto library_path() const noexcept -> std::string_view;
    /// cuDriverGetVersion, e.g. 13000 for CUDA 13.0.
    [[nodiscard]] auto driver_version() const noexcept -> int;
    /// Number of devices (≥ 1: cuInit fails with CUDA_ERROR_NO_DEVICE otherwise).
    [[nodiscard]] auto device_count() const noexcept -> int;
    /// PCI address of a device in lowercase "0000:3b:00.0" form.
    [[nodiscard]] auto pci_bus_id(int ordinal) const -> result<std::string>;
    /// CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED; false for unknown ordinals.
    [[nodiscard]] auto dmabuf_supported(int ordinal) const noexcept -> bool;

    /// Memory type, owning device and allocation extent of an address (cuPointerGetAttributes,
    /// cuMemGetAddressRange). Addresses CUDA does not know are unregistered_host, not an error.
    [[nodiscard]] auto pointer_info(const void* p) const -> result<gpu::pointer_info>;
    /// Exports the device allocation containing [p, p + n) as a DMA-BUF
    /// (cuMemGetHandleForAddressRange). invalid_argument when the range is not device memory or
    /// leaves its allocation; not_supported when the device cannot export DMA-BUFs.
    [[nodiscard]] auto export_dmabuf(const void* p, std::size_t n) const -> result<dmabuf>;

    // For tests and benchmarks: plain device allocations and synchronous copies.
    /// cuMemAlloc on device `ordinal`.
    [[nodiscard]] auto alloc(std::size_t size, int ordinal = 0) const -> result<void*>;
    /// cuMemFree; `p` must be the start of an allocation made by alloc().
    [[nodiscard]] auto free(void* p) const -> void_result;
    /// Host → device; returns when the data has reached device memory.
    [[nodiscard]] auto copy_to_device(void* dst, const void* src, std::size_t n) const -> void_result;
    /// Device → host.
    [[nodiscard]] auto copy_to_host(void* dst, const void* src, std::size_t n) const -> void_result;
    /// Fills device memory with `value`; returns when done.
    [[nodiscard]] auto memset(void* dst, unsigned char value, std::size_t n) const -> void_result;

    cuda_driver(const cuda_driver&) = delete;
    auto operator=(const cuda_driver&) -> cuda_driver& = delete;
    ~cuda_driver();

private:
    struct impl;
    explicit cuda_driver(std::unique_ptr<impl> i) noexcept;
    std::unique_ptr<impl> impl_;
    friend struct cuda_loader;
};

}  // namespace loom::gpu
