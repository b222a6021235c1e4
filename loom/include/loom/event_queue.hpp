// loom/event_queue.hpp — the event queue (fi_eq) and the connection-management events it
// reports for MSG endpoints.
#pragma once

#include <loom/completion_queue.hpp>
#include <loom/detail/fid.hpp>
#include <loom/detail/resource_alloc.hpp>
#include <loom/fabric.hpp>
#include <loom/fabric_info.hpp>

#include <rdma/fi_eq.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace loom {

/// What an event queue entry reports.
enum class cm_event_kind : int {
    connreq,    ///< a peer asks to connect: accept (endpoint::create from `info`) or reject
    connected,  ///< the connection of `fid` is established
    shutdown,   ///< the peer of `fid` shut the connection down
    error,      ///< an error entry: `error`, `provider_errno`, `error_text`; `data` holds the
                ///< provider's error data (a rejection's connection data)
    other,      ///< another event (`native_event`): memory registration, AV, multicast join
};

/// One event read from an event queue.
struct cm_event {
    cm_event_kind kind{cm_event_kind::other};  ///< what happened
    std::uint32_t native_event{0};             ///< FI_CONNREQ, FI_CONNECTED, ... (0 for error entries)
    ::fid_t fid{nullptr};                      ///< the endpoint or passive endpoint it concerns
    void* context{nullptr};                    ///< that object's context (error entries: the operation's)
    fabric_info info;                          ///< connreq: the request (owns libfabric's fi_info)
    std::vector<std::byte> data;               ///< connection data the peer sent (or error data)
    std::error_code error{};                   ///< why, for an error entry; empty otherwise
    int provider_errno{0};                     ///< the provider's own error code of an error entry
    std::string error_text{};                  ///< fi_eq_strerror() text of an error entry

    /// True for an error entry (or a failed read).
    [[nodiscard]] auto has_error() const noexcept -> bool { return static_cast<bool>(error); }
};

/// How an event queue is opened (fi_eq_attr).
struct eq_attr {
    std::size_t size{0};                         ///< 0: the provider's default
    wait_object wait{wait_object::unspecified};  ///< none: wait() is not available
};

/// An event queue (fid_eq): connection management events of msg endpoints and listeners.
class event_queue {
public:
    /// Room for the connection data of one event (FI_OPT_CM_DATA_SIZE is at most 256 with the
    /// providers loom knows); larger data are reported as message_too_long by read().
    static constexpr std::size_t max_event_data = 1024;

    event_queue() = default;
    /// Opens an event queue under `fab` (fi_eq_open); `mr` holds its event buffer.
    [[nodiscard]] static auto create(fabric& fab, const eq_attr& attr = {}, std::pmr::memory_resource* mr = nullptr)
        -> result<event_queue>;

    /// The next event, or nullopt when none is ready. Error entries come back as events of
    /// kind error; the result's error is a failure to read.
    [[nodiscard]] auto read() -> result<std::optional<cm_event>>;
    /// Waits up to `timeout` for the next event (nullopt when none came); needs a wait object.
    [[nodiscard]] auto wait(std::chrono::milliseconds timeout) -> result<std::optional<cm_event>>;

    /// The native fid_eq; null once closed.
    [[nodiscard]] auto native() const noexcept -> ::fid_eq* { return h_.get(); }
    /// True while the queue is open.
    [[nodiscard]] auto valid() const noexcept -> bool { return static_cast<bool>(h_); }
    /// The native fabric the queue was opened under.
    [[nodiscard]] auto fabric_native() const noexcept -> ::fid_fabric* { return fabric_; }
    /// Busy while endpoints bound to it are open.
    auto close() noexcept -> void_result { return h_.close(); }
    /// The count that endpoints bound to this queue join while they are open.
    [[nodiscard]] auto child_tracker() const noexcept -> const detail::child_count& { return h_.children(); }

private:
    [[nodiscard]] auto read_error() -> result<std::optional<cm_event>>;
    /// What fi_eq_read or fi_eq_sread returned (`rc`), as read() and wait() report it.
    [[nodiscard]] auto finish(std::uint32_t event, ssize_t rc) -> result<std::optional<cm_event>>;
    [[nodiscard]] auto decode(std::uint32_t event, std::size_t bytes) -> result<std::optional<cm_event>>;
    detail::unique_fid<::fid_eq> h_;
    ::fid_fabric* fabric_{nullptr};
    bool waitable_{false};
    using event_buffer = std::array<std::byte, sizeof(::fi_eq_cm_entry) + max_event_data>;
    detail::resource_ptr<event_buffer> buf_;  // from the factory's resource: one entry and its data
};

}  // namespace loom
