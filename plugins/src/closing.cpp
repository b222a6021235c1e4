// Closing: channels drain, fail what is left, cancel what can be cancelled and retire.
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

// ---------------------------------------------------------------- closing
void engine::drain(channel_base& c, const std::function<bool()>& pending) noexcept {
    const auto deadline = clock::now() + std::min(cfg_.peer_timeout, std::chrono::milliseconds(5000));
    while (pending() && clock::now() < deadline) {
        progress();
        // A lost peer may never complete what is in flight; one that closed in order and still
        // runs does (its provider answers).
        if (c.closed_by_peer ? same_host_peer_gone(c) : !peer_alive(c)) break;
        relax_lock();
    }
}

void engine::relax_lock() noexcept {
    // The caller holds the engine lock (every engine call does): give other threads a turn at
    // the engine during a wait that may last seconds, instead of making them spin for it.
    mu_.unlock();
    std::this_thread::yield();
    mu_.lock();
}

void engine::close(listener& l) noexcept {
    l.magic.store(magic_dead);
    if (l.recv_op.deferred) submissions_.drop(l.recv_op);
    if (l.recv_op.in_flight) {
        (void)ep_.cancel(&l.recv_op);
        const auto deadline = clock::now() + std::chrono::milliseconds(1000);
        while (l.recv_op.in_flight && clock::now() < deadline) {
            progress();
            relax_lock();
        }
    }
    l.state = chan_state::closed;
    if (!l.recv_op.in_flight) slab_of<listener>().put(&l);  // otherwise retired for good
}

template <class C>
void engine::retire(C& c, std::initializer_list<op*> own) noexcept {
    drain_recycles();  // nothing of this channel's pool may stay on the list past its close
    for (auto& r : c.pool) {
        if (r.active) {
            fail_request(r, errc::io_error);
            release(r);
        }
    }
    for (op* o : own) {
        if (o->deferred) submissions_.drop(*o);
        if (o->in_flight && cancellable(*o)) (void)ep_.cancel(o);
    }
    auto pending = [&] {
        return std::ranges::any_of(own, [](const op* o) { return o->in_flight; }) ||
               std::ranges::any_of(c.pool, [](auto& r) { return ops_busy(r); });
    };
    drain(c, pending);
    std::erase(channels_, &c);
    channel_ids_.erase(c.id);
    c.magic.store(magic_dead);
    c.state = chan_state::closed;
    if (!pending()) slab_of<C>().put(&c);  // otherwise retired for good: a late completion may name it
}

void engine::close(sender& s) noexcept {
    std::erase_if(connecting_, [&](const auto& kv) { return kv.second.second == &s; });
    // Outstanding sends get the chance to finish (the peer may still be receiving them); what
    // is left is failed and its cancellable parts cancelled.
    drain(s, [&] { return std::ranges::any_of(s.pool, [](const send_request& r) { return r.active && !r.done; }); });
    retire(s, {&s.connect_op, &s.accept_op, &s.liveness.receive});
}

void engine::wait_for_writes(receiver& rc) noexcept {
    // The peer writes a clear-to-send's bytes to the end even after it heard of the close
    // (rendezvous.cpp); a peer that closed or failed (its monitor runs in progress()) writes
    // nothing more. A slow link may take longer than the timeout: only a pause that long ends
    // the wait while the peer lives.
    const auto quiet = std::min(cfg_.peer_timeout, std::chrono::milliseconds(5000));
    auto deadline = clock::now() + quiet;
    auto seen = writes_into(rc);
    while (rc.state == chan_state::ready && !rc.closed_by_peer && seen.awaited && clock::now() < deadline) {
        progress();
        const auto now = writes_into(rc);
        if (now.landed != seen.landed) deadline = clock::now() + quiet;
        seen = now;
        relax_lock();
    }
}

void engine::close(receiver& rc) noexcept {
    receivers_.erase(rc.id);
    retire(rc, {&rc.accept_op, &rc.liveness.receive});
}

}  // namespace loom::plugins
