// MSG connection setup: the event queue, the passive endpoint, and the endpoint's connect,
// accept and shutdown.
#include "loom/endpoint.hpp"
#include "loom/event_queue.hpp"
#include "loom/passive_endpoint.hpp"

#include <rdma/fi_cm.h>

#include <array>
#include <cstring>

namespace loom {

// ---------------------------------------------------------------- event_queue

auto event_queue::create(fabric& fab, const eq_attr& attr, std::pmr::memory_resource* mr) -> result<event_queue> {
    if (!fab.valid()) return make_unexpected(errc::invalid_argument);
    if (static_cast<int>(attr.wait) < 0 || attr.wait > wait_object::pollfd)
        return make_unexpected(errc::invalid_argument);
    ::fi_eq_attr native{};
    native.size = attr.size;
    native.wait_obj = static_cast<::fi_wait_obj>(attr.wait);
    ::fid_eq* eq = nullptr;
    if (const int rc = ::fi_eq_open(fab.native(), &native, &eq, nullptr); rc != 0) return native_unexpected(rc);
    event_queue out;
    out.h_ = detail::unique_fid<::fid_eq>{eq};
    out.h_.set_parent(fab.child_tracker());
    out.h_.track_children(mr);
    out.fabric_ = fab.native();
    out.waitable_ = attr.wait != wait_object::none;
    try {
        out.buf_ = detail::make_in<event_buffer>(mr);
    } catch (...) {
        return make_unexpected(errc::no_memory);
    }
    return out;
}

auto event_queue::decode(std::uint32_t event, std::size_t bytes) -> result<std::optional<cm_event>> {
    cm_event ev;
    ev.native_event = event;
    switch (event) {
        case FI_CONNREQ: ev.kind = cm_event_kind::connreq; break;
        case FI_CONNECTED: ev.kind = cm_event_kind::connected; break;
        case FI_SHUTDOWN: ev.kind = cm_event_kind::shutdown; break;
        default: ev.kind = cm_event_kind::other; break;
    }
    if (ev.kind == cm_event_kind::other) {  // fi_eq_entry: fid, context, data
        if (bytes >= sizeof(::fi_eq_entry)) {
            ::fi_eq_entry e{};
            std::memcpy(&e, buf_->data(), sizeof(e));
            ev.fid = e.fid;
            ev.context = e.context;
        }
        return ev;
    }
    if (bytes < sizeof(::fi_eq_cm_entry)) return make_unexpected(errc::other);
    ::fi_eq_cm_entry e{};
    std::memcpy(&e, buf_->data(), sizeof(e));
    ev.fid = e.fid;
    ev.context = e.fid != nullptr ? e.fid->context : nullptr;
    if (e.info != nullptr) ev.info = fabric_info::adopt_native(e.info);
    const auto* data = buf_->data() + sizeof(::fi_eq_cm_entry);
    ev.data.assign(data, data + (bytes - sizeof(::fi_eq_cm_entry)));
    return ev;
}

auto event_queue::read_error() -> result<std::optional<cm_event>> {
    ::fi_eq_err_entry err{};
    const ssize_t rc = ::fi_eq_readerr(h_.get(), &err, 0);
    if (rc == -FI_EAGAIN) return std::optional<cm_event>{};
    if (rc < 0) return native_unexpected(static_cast<int>(rc));
    cm_event ev;
    ev.kind = cm_event_kind::error;
    ev.fid = err.fid;
    ev.context = err.context;
    ev.error = std::error_code(err.err, fabric_category());
    ev.provider_errno = err.prov_errno;
    if (err.err_data != nullptr && err.err_data_size > 0) {
        const auto* p = static_cast<const std::byte*>(err.err_data);
        ev.data.assign(p, p + err.err_data_size);
    }
    if (const char* text = ::fi_eq_strerror(h_.get(), err.prov_errno, err.err_data, nullptr, 0)) ev.error_text = text;
    return ev;
}

auto event_queue::read() -> result<std::optional<cm_event>> {
    if (!h_) return make_unexpected(errc::bad_state);
    std::uint32_t event = 0;
    return finish(event, ::fi_eq_read(h_.get(), &event, buf_->data(), buf_->size(), 0));
}

auto event_queue::finish(std::uint32_t event, ssize_t rc) -> result<std::optional<cm_event>> {
    if (rc == -FI_EAGAIN || rc == -FI_ETIMEDOUT) return std::optional<cm_event>{};  // nothing (in time)
    if (rc == -FI_EAVAIL) return read_error();
    if (rc == -FI_ETOOSMALL) return make_unexpected(errc::message_too_long);
    if (rc < 0) return native_unexpected(static_cast<int>(rc));
    return decode(event, static_cast<std::size_t>(rc));
}

auto event_queue::wait(std::chrono::milliseconds timeout) -> result<std::optional<cm_event>> {
    if (!h_) return make_unexpected(errc::bad_state);
    if (!waitable_) return make_unexpected(errc::not_supported);
    if (timeout.count() < 0) return make_unexpected(errc::invalid_argument);
    std::uint32_t event = 0;
    const int ms = timeout.count() > INT32_MAX ? INT32_MAX : static_cast<int>(timeout.count());
    return finish(event, ::fi_eq_sread(h_.get(), &event, buf_->data(), buf_->size(), ms, 0));
}

// ---------------------------------------------------------------- passive_endpoint

auto passive_endpoint::create(fabric& fab, const fabric_info& info, std::pmr::memory_resource* mr)
    -> result<passive_endpoint> {
    if (!fab.valid() || !info.valid()) return make_unexpected(errc::invalid_argument);
    if (info.ep_type() != endpoint_types::msg) return make_unexpected(errc::invalid_argument);
    ::fid_pep* pep = nullptr;
    if (const int rc = ::fi_passive_ep(fab.native(), const_cast<::fi_info*>(info.native()), &pep, nullptr); rc != 0)
        return native_unexpected(rc);
    passive_endpoint out;
    out.h_ = detail::unique_fid<::fid_pep>{pep};
    out.h_.set_parent(fab.child_tracker());
    out.format_ = info.addr_format();
    out.fabric_ = fab.native();
    out.mr_ = detail::resource_or_default(mr);
    return out;
}

auto passive_endpoint::bind(event_queue& eq) noexcept -> void_result {
    if (!h_ || !eq.valid() || eq.fabric_native() != fabric_) return make_unexpected(errc::invalid_argument);
    if (bound_ || listening_) return make_unexpected(errc::bad_state);
    auto r = check_native(::fi_pep_bind(h_.get(), &eq.native()->fid, 0));
    if (r) {
        eq_link_ = detail::child_link{eq.child_tracker()};
        bound_ = true;
    }
    return r;
}

auto passive_endpoint::listen() noexcept -> void_result {
    if (!h_) return make_unexpected(errc::bad_state);
    if (!bound_ || listening_) return make_unexpected(errc::bad_state);  // requests need a queue
    auto r = check_native(::fi_listen(h_.get()));
    if (r) listening_ = true;
    return r;
}

auto passive_endpoint::name() const -> result<address> {
    if (!h_) return make_unexpected(errc::bad_state);
    return detail::native_name(&h_.get()->fid, format_);
}

auto passive_endpoint::reject(const cm_event& request, std::span<const std::byte> data) noexcept -> void_result {
    if (!h_ || !listening_) return make_unexpected(errc::bad_state);
    if (request.kind != cm_event_kind::connreq || !request.info.valid() || request.info.native()->handle == nullptr)
        return make_unexpected(errc::invalid_argument);
    if (request.fid != &h_.get()->fid) return make_unexpected(errc::invalid_argument);  // another listener's
    return check_native(::fi_reject(h_.get(), request.info.native()->handle, data.data(), data.size()));
}

// ---------------------------------------------------------------- endpoint

auto endpoint::bind_eq(event_queue& eq) noexcept -> void_result {
    if (!h_ || !eq.valid()) return make_unexpected(errc::invalid_argument);
    if (type_ != endpoint_types::msg || eq.fabric_native() != fabric_) return make_unexpected(errc::invalid_argument);
    if (enabled_ || eq_link_) return make_unexpected(errc::bad_state);
    auto r = check_native(::fi_ep_bind(h_.get(), &eq.native()->fid, 0));
    if (r) eq_link_ = detail::child_link{eq.child_tracker()};
    return r;
}

auto endpoint::connect(const address& peer, std::span<const std::byte> data) -> void_result {
    std::array<std::byte, detail::max_socket_address> scratch{};
    return connect_raw(detail::native_bytes(peer, scratch), data);
}

auto endpoint::connect_raw(std::span<const std::byte> native_address, std::span<const std::byte> data) noexcept
    -> void_result {
    if (!h_) return make_unexpected(errc::bad_state);
    if (type_ != endpoint_types::msg || native_address.empty()) return make_unexpected(errc::invalid_argument);
    if (!enabled_ || !eq_link_) return make_unexpected(errc::bad_state);  // events need a queue
    return check_native(::fi_connect(h_.get(), native_address.data(), data.data(), data.size()));
}

auto endpoint::accept(std::span<const std::byte> data) noexcept -> void_result {
    if (!h_) return make_unexpected(errc::bad_state);
    if (type_ != endpoint_types::msg) return make_unexpected(errc::invalid_argument);
    if (!enabled_ || !eq_link_) return make_unexpected(errc::bad_state);
    return check_native(::fi_accept(h_.get(), data.data(), data.size()));
}

auto endpoint::shutdown() noexcept -> void_result {
    if (!h_) return make_unexpected(errc::bad_state);
    if (type_ != endpoint_types::msg) return make_unexpected(errc::invalid_argument);
    if (!enabled_) return make_unexpected(errc::bad_state);
    return check_native(::fi_shutdown(h_.get(), 0));
}

}  // namespace loom
