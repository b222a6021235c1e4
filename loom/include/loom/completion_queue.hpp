// loom/completion_queue.hpp — completion queues and typed completion events.
#pragma once

#include <loom/context.hpp>
#include <loom/detail/fid.hpp>
#include <loom/domain.hpp>

#include <rdma/fi_eq.h>

#include <chrono>
#include <optional>
#include <span>
#include <string>

namespace loom {

/// What each CQ entry carries (fi_cq_format).
enum class cq_format : int { context = 1, msg = 2, data = 3, tagged = 4 };

struct cq_attr {
    std::size_t size{0};                   ///< 0: provider default
    cq_format format{cq_format::tagged};
    bool wait_obj{false};                  ///< request a wait object (enables blocking wait)
    bool want_source{false};               ///< read source addresses (needs capability::source)
};

/// One completion: success fields, or an error with the provider's diagnostics.
struct completion_event {
    void* context{nullptr};
    op_flag flags{};
    std::size_t bytes_transferred{0};
    void* buffer{nullptr};
    std::uint64_t data{0};
    std::uint64_t tag{0};
    fabric_addr source{fabric_addrs::unspecified};
    std::error_code error{};
    int provider_errno{0};
    std::size_t overflow_length{0};  ///< bytes the receive buffer could not hold (truncation)
    std::string error_text{};        ///< fi_cq_strerror() text for error entries

    [[nodiscard]] auto has_error() const noexcept -> bool { return static_cast<bool>(error); }
    [[nodiscard]] auto request() const noexcept -> request_context* {
        return request_context::from_native(context);
    }
};

class completion_queue {
public:
    completion_queue() = default;
    [[nodiscard]] static auto create(domain& dom, const cq_attr& attr = {},
                                     std::pmr::memory_resource* mr = nullptr) -> result<completion_queue>;

    /// Reads one completion without blocking; nullopt when none is ready. Error entries
    /// (and failures reading the queue) come back as events with has_error().
    [[nodiscard]] auto poll() -> std::optional<completion_event>;
    /// Reads up to out.size() completions; 0 when none is ready. An error entry is returned
    /// alone (count 1, out[0].has_error()).
    [[nodiscard]] auto read(std::span<completion_event> out) -> result<std::size_t>;
    /// Waits up to `timeout` for one completion; errc::timed_out when none arrived. Uses the
    /// wait object when the queue has one, otherwise polls (driving provider progress).
    [[nodiscard]] auto wait(std::chrono::milliseconds timeout) -> result<completion_event>;

    [[nodiscard]] auto format() const noexcept -> cq_format { return attr_.format; }
    [[nodiscard]] auto attributes() const noexcept -> const cq_attr& { return attr_; }
    [[nodiscard]] auto native() const noexcept -> ::fid_cq* { return h_.get(); }
    [[nodiscard]] auto domain_native() const noexcept -> ::fid_domain* { return domain_; }
    [[nodiscard]] auto valid() const noexcept -> bool { return static_cast<bool>(h_); }
    auto close() noexcept -> void_result { return h_.close(); }

private:
    [[nodiscard]] auto read_error(completion_event& ev) -> bool;
    detail::unique_fid<::fid_cq> h_;
    cq_attr attr_{};
    ::fid_domain* domain_{nullptr};
};

}  // namespace loom
