// Progress: the completion queues read in batches, each entry dispatched by its context.
#include "engine_internals.hpp"

#include <loom/gpu/cuda.hpp>
#include <loom/plugins/log.hpp>

#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <algorithm>
#include <cstring>

namespace loom::plugins {

using namespace engine_detail;
using match_bits::make_tag;

// ---------------------------------------------------------------- progress
void engine::poll_queue(completion_queue& cq) noexcept {
    // The provider's entries in place (read_tagged); everything but an eager message into a
    // live receive goes through dispatch as a typed event (built in a member, once per entry).
    // An error entry stops read_tagged: read() then returns it with its details.
    auto& ents = entries_;
    for (int round = 0; round < 64; ++round) {
        auto n = cq.read_tagged(ents);
        if (!n) [[unlikely]] {
            if (n.error() != make_error_code(errc::error_available)) return;
            auto e = cq.read(std::span{events_.data(), 1});
            if (e && *e == 1) dispatch(events_[0]);
            continue;
        }
        if (*n == 0) return;
        for (std::size_t i = 0; i < *n; ++i) {
            if (land_eager(ents[i])) continue;
            completion_queue::refill(events_[0], ents[i].native());
            dispatch(events_[0]);
        }
        if (*n < ents.size()) return;
    }
}

auto engine::land_eager(const tagged_completion& c) noexcept -> bool {
    // The common completion, an eager message into a live receive, without dispatch's
    // routing. (The tag is read only for receives: a send's completion leaves it undefined.)
    if (c.context() == nullptr) return false;
    auto* o = static_cast<op*>(c.request());
    if (o->kind != op_kind::recv_slot || match_bits::kind_of(c.tag()) != message_kind::data) return false;
    auto& q = *static_cast<recv_request*>(o->owner);
    if (q.magic.load(std::memory_order_relaxed) != magic_rreq || q.gen != o->gen) return false;
    o->in_flight = false;
    land(q, q.slots[o->slot], c.bytes_transferred());
    return true;
}

void engine::land(recv_request& r, recv_slot& s, std::size_t len) noexcept {
    if (s.done) return;
    ++stats_.recvs;
    s.received = std::min(len, s.capacity);
    if (s.capacity < scratch_size && s.received != 0) std::memcpy(s.data, s.scratch.data(), s.received);
    finish_slot(r, s);
}

void engine::post_unposted() noexcept {
    for (op* o : unposted_) {
        o->deferred = false;
        settle(*o, submit(*o));
    }
    unposted_.clear();
}

void engine::progress() noexcept {
    if (!unposted_.empty()) post_unposted();
    poll_queue(cq_);
    for (auto& r : extra_) poll_queue(r->cq);
    if (recycle_head_ != nullptr) drain_recycles();
    if (!submissions_.empty()) [[unlikely]]
        submissions_.retry([this](op& o) { settle(o, submit(o)); });
    // Peer checks at most every 100 ms; the clock is read every 64th call only.
    // A plain increment (only lock holders write it); the watchdog reads it to see the host call.
    const auto calls = progress_calls_.load(std::memory_order_relaxed) + 1;
    progress_calls_.store(calls, std::memory_order_relaxed);
    if ((calls & 63U) == 0) [[unlikely]]
        tick(clock::now());
}

void engine::dispatch(const completion_event& ev) noexcept {
    if (ev.context == nullptr) {
        if (!ev.has_error() && ev.flags.has(op_flag::remote_cq_data))
            on_remote_write(ev.data);
        else if (ev.has_error()) {
            ++stats_.cq_errors;
            LOOM_WARN("completion error without context: {}", ev.error_text);
        }
        return;
    }
    auto* o = static_cast<op*>(ev.request());
    o->in_flight = false;
    if (ev.has_error() && ev.error != make_error_code(errc::truncated) && ev.error != make_error_code(errc::canceled))
        ++stats_.cq_errors;
    if (!ev.has_error() && answered_by_peer(*o)) {
        if (channel_base* c = channel_of(*o); c != nullptr && c->live != nullptr) c->live->answered = true;
    }
    // The provider lost the peer: its channels fail once this operation has ended.
    channel_base* lost = ev.has_error() ? channel_lost_by(*o, ev.error) : nullptr;
    dispatch_to_owner(o, ev);
    declare_unreachable(lost);
}

void engine::dispatch_to_owner(op* o, const completion_event& ev) noexcept {
    if (request_base* r = owner_request(*o)) {
        const auto m = r->magic.load(std::memory_order_relaxed);
        if (m == (r->is_send ? magic_sreq : magic_rreq) && r->gen == o->gen) {
            if (r->is_send)
                on_send_op(static_cast<send_request&>(*r), *o, ev);
            else
                on_recv_op(static_cast<recv_request&>(*r), *o, ev);
        } else if (m == magic_dead && r->released) {
            recycle(*r);  // the last operation of a request the host already handed back
        }
        return;
    }
    switch (o->kind) {
        case op_kind::listen_recv: {
            auto& l = *static_cast<listener*>(o->owner);
            if (l.magic.load(std::memory_order_relaxed) == magic_listen) on_listen(l, ev);
            return;
        }
        case op_kind::connect_send:
            if (ev.has_error()) static_cast<sender*>(o->owner)->state = chan_state::failed;
            return;
        case op_kind::accept_recv: {
            auto& s = *static_cast<sender*>(o->owner);
            if (s.magic.load(std::memory_order_relaxed) == magic_send) on_accept_msg(s, ev);
            return;
        }
        case op_kind::accept_send:
            if (ev.has_error()) static_cast<receiver*>(o->owner)->state = chan_state::failed;
            return;
        case op_kind::liveness_recv: {
            auto& c = *static_cast<channel_base*>(o->owner);
            const auto m = c.magic.load(std::memory_order_relaxed);
            if (m == magic_send || m == magic_recv) on_liveness(c, ev);
            return;
        }
        case op_kind::liveness_any: on_liveness_any(*o, ev); return;
        case op_kind::foreign:
            end_foreign(static_cast<foreign_op&>(*o), ev.has_error() ? ev.error : std::error_code{});
            return;
        default: return;  // request operations: handled above
    }
}

}  // namespace loom::plugins
