// Readers of a completion queue that deliver its events to registered operations (the
// asynchronous front ends' progress), and the queue's wait-object queries.
#include "loom/completion_queue.hpp"
#include "loom/execution/poll.hpp"

#include <rdma/fi_eq.h>

#include <array>

namespace loom {
namespace {

/// Delivers `ev` or makes it the unhandled event; true when reading may go on.
auto route(completion_registry& reg, completion_event& ev, dispatch_result& out) -> bool {
    if (reg.dispatch(ev)) [[likely]] {
        ++out.completed;
        return true;
    }
    out.unhandled.emplace(std::move(ev));
    return false;
}

/// Makes a failed read of the queue the unhandled event.
void failed_read(dispatch_result& out, std::error_code ec) {
    completion_event ev{};
    ev.error = ec;
    out.unhandled.emplace(std::move(ev));
}

/// Deliveries after which the reader goes on with the queue: a reader nested in one of them
/// (a delivery that polls again) does not deliver as final (completion_registry::open_batch).
class open_batch_scope {
public:
    explicit open_batch_scope(completion_registry& reg) noexcept : reg_(reg) { reg_.open_batch(); }
    open_batch_scope(const open_batch_scope&) = delete;
    auto operator=(const open_batch_scope&) -> open_batch_scope& = delete;
    ~open_batch_scope() { reg_.close_batch(); }

private:
    completion_registry& reg_;
};

/// Delivers `earlier`, the entries before a batch's last, as an open batch, then, all
/// delivered, resubmits the deferred operations. Returns how many were delivered.
auto deliver_before_last(completion_registry& reg, std::span<const tagged_completion> earlier, completion_event& ev)
    -> std::size_t {
    std::size_t i = 0;
    {
        const open_batch_scope batch(reg);
        for (; i < earlier.size(); ++i) {
            completion_queue::refill(ev, earlier[i].native());
            if (!reg.dispatch(ev)) [[unlikely]]
                break;
        }
    }
    if (i == earlier.size() && reg.deferred_count() != 0) (void)reg.retry_deferred();  // a batch of its own
    return i;
}

/// Delivers the provider's entries in order until one no operation owns; returns how many were
/// delivered. The operations a busy provider had refused are submitted again before the last
/// entry, which goes through dispatch_final: after it, neither the queue nor the registry is
/// touched (its operation may run code that ends them).
auto deliver_entries(completion_registry& reg, std::span<const tagged_completion> entries) -> std::size_t {
    if (entries.empty()) return 0;  // an empty poll builds no event
    completion_event ev;            // one event, refilled per entry: reading allocates nothing
    const std::size_t last = entries.size() - 1;
    if (last != 0 || reg.deferred_count() != 0) [[unlikely]] {
        if (const std::size_t n = deliver_before_last(reg, entries.first(last), ev); n != last) return n;
    }
    completion_queue::refill(ev, entries[last].native());
    return reg.dispatch_final(ev) ? entries.size() : last;
}

/// After deliver_entries stopped at entries[0]: that entry becomes the unhandled event, the
/// rest are held in order for the next reader.
void keep_undelivered(completion_registry& reg, std::span<const tagged_completion> entries, dispatch_result& out) {
    completion_queue::refill(out.unhandled.emplace(), entries[0].native());
    completion_event ev;
    for (const auto& e : entries.subspan(1)) {
        completion_queue::refill(ev, e.native());
        (void)reg.hold(ev);
    }
}

}  // namespace

// The result is built from a count known only at run time: for an initializer it sees as
// constant, GCC clears the whole result (the optional event in it) first.
auto completion_queue::read_native(completion_registry& reg) -> dispatch_result {
    std::array<tagged_completion, 16> batch;
    const auto n = read_tagged(batch);
    const auto got = std::span{batch}.first(n ? *n : 0);
    dispatch_result out{deliver_entries(reg, got)};
    if (got.empty()) {
        if (!n) [[unlikely]] {
            if (n.error() == make_error_code(errc::error_available))
                dispatch_error_entry(reg, out);
            else
                failed_read(out, n.error());
        }
        // No final delivery (deliver_entries retries before one): the registry is still ours.
        if (!out.unhandled && reg.deferred_count() != 0) [[unlikely]]
            reg.retry_deferred();
    } else if (out.completed < got.size()) [[unlikely]] {
        keep_undelivered(reg, got.subspan(out.completed), out);
    }
    return out;
}

// The common case: nothing held, the tagged format.
auto completion_queue::dispatch_ready() -> dispatch_result {
    completion_registry* reg = registry_.get();
    if (reg == nullptr || reg->held_count() != 0 || fast_.refusing()) [[unlikely]]
        return dispatch_held_then_read(reg);
    return read_native(*reg);
}

void completion_queue::dispatch_error_entry(completion_registry& reg, dispatch_result& out) {
    completion_event ev;
    const auto e = read({&ev, 1});  // the error entry, with its details
    if (!e) {
        failed_read(out, e.error());
        return;
    }
    if (*e == 1) {
        const open_batch_scope batch(reg);  // the caller goes on with the registry
        (void)route(reg, ev, out);
    }
}

auto completion_queue::dispatch_held_then_read(completion_registry* reg) -> dispatch_result {
    dispatch_result out;
    if (reg == nullptr) {
        failed_read(out, make_error_code(errc::bad_state));  // no operation can wait on it
        return out;
    }
    {
        const open_batch_scope batch(*reg);  // held events, typed reads: route() delivers none as final
        read_held_then_queue(*reg, out);
    }
    return out;
}

void completion_queue::read_held_then_queue(completion_registry& reg, dispatch_result& out) {
    completion_event ev;
    while (reg.held_count() != 0 && reg.take_held(ev))  // what an earlier reader read and could not deliver
        if (!route(reg, ev, out)) return;
    if (!fast_.refusing()) {
        dispatch_result rest = read_native(reg);
        out.completed += rest.completed;
        if (rest.unhandled) out.unhandled = std::move(rest.unhandled);
        return;
    }
    // Other formats, source addresses, not open: typed events.
    std::array<completion_event, 16> batch;
    const auto n = read(batch);
    if (!n) {
        failed_read(out, n.error());
        return;
    }
    for (std::size_t i = 0; i < *n; ++i) {
        if (route(reg, batch[i], out)) continue;
        for (std::size_t k = i + 1; k < *n; ++k) (void)reg.hold(batch[k]);
        return;
    }
    if (reg.deferred_count() != 0) reg.retry_deferred();  // route() delivers none as final
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
