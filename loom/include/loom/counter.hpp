// loom/counter.hpp — completion counters (fi_cntr).
#pragma once

#include <loom/detail/fid.hpp>
#include <loom/domain.hpp>

#include <rdma/fi_domain.h>

#include <chrono>
#include <cstdint>

namespace loom {

class xpu_context;

/// How a counter is opened (fi_cntr_attr).
struct counter_attr {
    std::uint64_t threshold{1};  ///< the value wait() waits for
    bool wait_obj{false};        ///< request a wait object for blocking waits
    /// Device-side use through this XPU context of the same domain (FI_XPU, libfabric 2.7:
    /// not_supported before; loom/xpu.hpp). Untested on hardware.
    const xpu_context* xpu{nullptr};
};

/// A completion counter (fid_cntr): counts an endpoint's completed operations and failures, waitable by threshold.
class counter {
public:
    counter() = default;
    /// Opens a counter of completions in `dom` (fi_cntr_open).
    [[nodiscard]] static auto create(domain& dom, const counter_attr& attr = {},
                                     std::pmr::memory_resource* mr = nullptr) -> result<counter>;

    /// The resource the factory was given (a counter allocates no state of its own).
    [[nodiscard]] auto memory_resource() const noexcept -> std::pmr::memory_resource* { return mr_; }

    /// Successful completions counted so far.
    [[nodiscard]] auto read() const noexcept -> std::uint64_t;
    /// Failed completions counted so far.
    [[nodiscard]] auto read_error_count() const noexcept -> std::uint64_t;
    /// io_error when any failure has been counted.
    [[nodiscard]] auto get_error() const noexcept -> void_result;
    /// Adds `v` to the success count (fi_cntr_add).
    auto add(std::uint64_t v) noexcept -> void_result;
    /// Sets the success count to `v` (fi_cntr_set).
    auto set(std::uint64_t v) noexcept -> void_result;
    /// Sets/adds the failure count, leaving the success count alone; invalid_argument above
    /// max_error_value() (for add: when the sum would exceed it).
    auto set_error_count(std::uint64_t v) noexcept -> void_result;
    /// Adds `v` to the failure count; invalid_argument when the sum would exceed max_error_value().
    auto add_error_count(std::uint64_t v) noexcept -> void_result;
    /// The largest failure count set_error_count and add_error_count accept.
    [[nodiscard]] auto max_error_value() const noexcept -> std::uint64_t { return max_error_; }
    /// Waits until read() >= threshold; timed_out after `timeout`; io_error when a failure
    /// is counted meanwhile.
    auto wait(std::uint64_t threshold, std::chrono::milliseconds timeout) noexcept -> void_result;
    /// Waits for the creation threshold with no time limit.
    auto wait() noexcept -> void_result { return wait(attr_.threshold, std::chrono::milliseconds{-1}); }

    /// The attributes it was opened with.
    [[nodiscard]] auto attributes() const noexcept -> const counter_attr& { return attr_; }
    /// The native fid_cntr; null once closed.
    [[nodiscard]] auto native() const noexcept -> ::fid_cntr* { return h_.get(); }
    /// The native domain the counter was opened in.
    [[nodiscard]] auto domain_native() const noexcept -> ::fid_domain* { return domain_; }
    /// True while the counter is open.
    [[nodiscard]] auto valid() const noexcept -> bool { return static_cast<bool>(h_); }
    /// Closes the native counter now; on failure it stays open and the call can be retried.
    auto close() noexcept -> void_result { return h_.close(); }

private:
    detail::unique_fid<::fid_cntr> h_;
    counter_attr attr_{};
    ::fid_domain* domain_{nullptr};
    std::pmr::memory_resource* mr_{nullptr};
    std::uint64_t max_error_{~std::uint64_t{0}};
};

}  // namespace loom
