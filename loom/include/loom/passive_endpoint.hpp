// loom/passive_endpoint.hpp — the listening side of MSG connection setup (fi_passive_ep).
#pragma once

#include <loom/address.hpp>
#include <loom/detail/child_link.hpp>
#include <loom/event_queue.hpp>

#include <span>

namespace loom {

/// Listens for connection requests, which arrive on the bound event queue as connreq events;
/// each is accepted by an endpoint created from the event's info (endpoint::accept) or
/// refused with reject().
class passive_endpoint {
public:
    passive_endpoint() = default;
    /// Opens a listener for a msg-type discovery result (fi_passive_ep).
    [[nodiscard]] static auto create(fabric& fab, const fabric_info& info, std::pmr::memory_resource* mr = nullptr)
        -> result<passive_endpoint>;

    /// Before listen(); the queue must belong to the same fabric.
    auto bind(event_queue& eq) noexcept -> void_result;
    /// Starts listening (fi_listen); bad_state before bind() or when already listening.
    auto listen() noexcept -> void_result;
    /// The address peers connect to (after listen(), with the port the provider chose).
    [[nodiscard]] auto name() const -> result<address>;
    /// Refuses a connreq event's request; the peer sees an error event (connection refused)
    /// carrying `data`. The request's info stays owned by the event.
    auto reject(const cm_event& request, std::span<const std::byte> data = {}) noexcept -> void_result;

    /// The native fid_pep; null once closed.
    [[nodiscard]] auto native() const noexcept -> ::fid_pep* { return h_.get(); }
    /// True while the listener is open.
    [[nodiscard]] auto valid() const noexcept -> bool { return static_cast<bool>(h_); }
    /// The resource the factory was given (a listener allocates no state of its own).
    [[nodiscard]] auto memory_resource() const noexcept -> std::pmr::memory_resource* { return mr_; }
    /// Closes the native listener now; on failure it stays open and the call can be retried.
    auto close() noexcept -> void_result {
        auto r = h_.close();
        if (r) eq_link_.reset();
        return r;
    }

private:
    detail::child_link eq_link_;  // declared first: released after the native object closes
    detail::unique_fid<::fid_pep> h_;
    address_format format_{address_format::unspecified};
    ::fid_fabric* fabric_{nullptr};
    std::pmr::memory_resource* mr_{nullptr};
    bool bound_{false};
    bool listening_{false};
};

}  // namespace loom
