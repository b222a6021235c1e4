// Readers of a completion queue that deliver its events to registered operations (the
// asynchronous front ends' progress), and the queue's wait-object queries.
#include "loom/completion_queue.hpp"
#include "loom/execution/poll.hpp"

#include <rdma/fi_eq.h>

#include <array>

namespace loom {
namespace {

/// Delivers `ev` or makes it the unhandled event; true when reading may go on.
auto route(completion_queue& cq, completion_event& ev, dispatch_result& out) -> bool {
    if (cq.dispatch(ev)) {
        ++out.completed;
        return true;
    }
    out.unhandled.emplace(std::move(ev));
    return false;
}

auto failed_read(std::error_code ec) -> dispatch_result {
    dispatch_result out;
    completion_event ev{};
    ev.error = ec;
    out.unhandled.emplace(std::move(ev));
    return out;
}

}  // namespace

auto completion_queue::dispatch_ready() -> dispatch_result {
    completion_registry* reg = registry_.get();
    if (reg == nullptr) return failed_read(make_error_code(errc::bad_state));  // no operation can wait on it
    dispatch_result out;
    completion_event ev;                                  // one event, refilled per entry: reading allocates nothing
    while (reg->held_count() != 0 && reg->take_held(ev))  // what an earlier reader read and could not deliver
        if (!route(*this, ev, out)) return out;
    if (fast_.refusing()) {  // other formats, source addresses, not open: typed events
        std::array<completion_event, 16> batch;
        const auto n = read(batch);
        if (!n) return failed_read(n.error());
        for (std::size_t i = 0; i < *n; ++i) {
            if (route(*this, batch[i], out)) continue;
            for (std::size_t k = i + 1; k < *n; ++k) (void)reg->hold(batch[k]);
            return out;
        }
    } else {  // the common queue: the provider's entries as they are, one event refilled per entry
        std::array<tagged_completion, 16> batch;
        auto n = read_tagged(batch);
        if (!n && n.error() == make_error_code(errc::error_available)) {
            const auto e = read({&ev, 1});  // the error entry, with its details
            if (!e) return failed_read(e.error());
            if (*e == 1 && !route(*this, ev, out)) return out;
            n = 0;
        }
        if (!n) return failed_read(n.error());
        for (std::size_t i = 0; i < *n; ++i) {
            refill(ev, batch[i].native());
            if (route(*this, ev, out)) continue;
            for (std::size_t k = i + 1; k < *n; ++k) {
                refill(ev, batch[k].native());
                (void)reg->hold(ev);
            }
            return out;
        }
    }
    if (reg->deferred_count() != 0) reg->retry_deferred();
    return out;
}

auto completion_queue::query_wait_object(::fid_cq* cq) noexcept -> result<wait_object> {
    ::fi_wait_obj kind = FI_WAIT_NONE;
    if (const int rc = ::fi_control(&cq->fid, FI_GETWAITOBJ, &kind); rc != 0) return native_unexpected(rc);
    if (kind < FI_WAIT_NONE || kind > FI_WAIT_POLLFD) return make_unexpected(errc::not_supported);
    return static_cast<wait_object>(kind);
}

auto completion_queue::wait_descriptor() const noexcept -> result<int> {
    const auto kind = wait_object_type();
    if (!kind) return std::unexpected(kind.error());
    if (*kind != wait_object::fd) return make_unexpected(errc::not_supported);
    int fd = -1;
    if (const int rc = ::fi_control(&h_.get()->fid, FI_GETWAIT, &fd); rc != 0) return native_unexpected(rc);
    if (fd < 0) return make_unexpected(errc::not_supported);
    return fd;
}

auto completion_queue::try_wait() noexcept -> void_result {
    if (!h_) return make_unexpected(errc::bad_state);
    if (fabric_ == nullptr || !wait_kind_ || (*wait_kind_ != wait_object::fd && *wait_kind_ != wait_object::pollfd))
        return make_unexpected(errc::not_supported);
    ::fid* fids[] = {&h_.get()->fid};
    const int rc = ::fi_trywait(fabric_, fids, 1);
    if (rc == 0) return {};
    if (rc == -FI_ENOSYS) return make_unexpected(errc::not_supported);
    return native_unexpected(rc);
}

}  // namespace loom

namespace loom::execution {

auto poll_completions(completion_queue& cq) -> poll_result { return cq.dispatch_ready(); }

}  // namespace loom::execution
