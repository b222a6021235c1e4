// The engine's internals shared by its source files (one per responsibility: set-up,
// submission, progress, rendezvous, connections, registrations, requests, closing,
// peer_monitor): object slabs and what every file asks of an operation or a request.
#pragma once

#include <loom/plugins/engine.hpp>
#include <loom/plugins/liveness.hpp>

#include <algorithm>
#include <mutex>
#include <vector>

namespace loom::plugins::engine_detail {

inline const mr_access_flags full_access = mr_access_flags::send | mr_access_flags::recv | mr_access_flags::read |
                                           mr_access_flags::write | mr_access_flags::remote_read |
                                           mr_access_flags::remote_write;

// ---------------------------------------------------------------- never-freed object slabs
template <class T>
class slab {
public:
    auto get() -> T* {
        std::lock_guard lock(mu_);
        if (!free_.empty()) {
            T* p = free_.back();
            free_.pop_back();
            return p;
        }
        return new T();  // NOLINT: slab objects live until process exit by design
    }
    void put(T* p) {
        std::lock_guard lock(mu_);
        free_.push_back(p);
    }

private:
    std::mutex mu_;
    std::vector<T*> free_;
};

template <class T>
inline auto slab_of() -> slab<T>& {
    static auto* s = new slab<T>();  // NOLINT: outlives every engine and the host's atexit order
    return *s;
}

/// The request an operation belongs to; nullptr for a channel's own (set-up) operations.
inline auto owner_request(const op& o) noexcept -> request_base* {
    switch (o.kind) {
        case op_kind::send_eager:
        case op_kind::send_rts:
        case op_kind::cts_recv:
        case op_kind::rma_write: return static_cast<send_request*>(o.owner);
        case op_kind::recv_slot:
        case op_kind::cts_send:
        case op_kind::flush_read: return static_cast<recv_request*>(o.owner);
        default: return nullptr;
    }
}

/// The channel a set-up operation belongs to (listen, connect, accept).
inline auto owner_channel(const op& o) noexcept -> channel_base* {
    switch (o.kind) {
        case op_kind::listen_recv: return static_cast<listener*>(o.owner);
        case op_kind::connect_send:
        case op_kind::accept_recv: return static_cast<sender*>(o.owner);
        case op_kind::accept_send: return static_cast<receiver*>(o.owner);
        case op_kind::liveness_recv: return static_cast<channel_base*>(o.owner);
        default: return nullptr;
    }
}

/// The peer channel an operation of a live request or a foreign operation goes to; nullptr
/// for set-up operations and for those of a request already handed back.
inline auto channel_of(const op& o) noexcept -> channel_base* {
    if (o.kind == op_kind::foreign) return static_cast<const foreign_op&>(o).chan;
    const request_base* r = owner_request(o);
    if (r == nullptr || r->gen != o.gen) return nullptr;
    const auto m = r->magic.load(std::memory_order_relaxed);
    return m == magic_sreq || m == magic_rreq ? r->chan : nullptr;
}

/// The channel whose peer an operation's error says is lost: a connection error
/// (means_peer_unreachable), or a one-sided operation the provider cancelled (the engine
/// cancels only receives); nullptr otherwise.
inline auto channel_lost_by(const op& o, const std::error_code& e) noexcept -> channel_base* {
    const bool lost = means_peer_unreachable(e) || (o.kind == op_kind::foreign && e == make_error_code(errc::canceled));
    return lost ? channel_of(o) : nullptr;
}

/// Operations whose success means the peer's side answered: a message or clear-to-send from it,
/// a read of its memory, and foreign operations that say so (foreign_op::answered_by_peer). A
/// send's completion may be only local.
inline auto answered_by_peer(const op& o) noexcept -> bool {
    switch (o.kind) {
        case op_kind::recv_slot:
        case op_kind::cts_recv:
        case op_kind::flush_read: return true;
        case op_kind::foreign: return static_cast<const foreign_op&>(o).answered_by_peer;
        default: return false;
    }
}

/// Operations that only receive: the ones fi_cancel can take back (sends cannot be recalled).
inline auto cancellable(const op& o) noexcept -> bool {
    return o.kind == op_kind::recv_slot || o.kind == op_kind::cts_recv || o.kind == op_kind::listen_recv ||
           o.kind == op_kind::accept_recv || o.kind == op_kind::liveness_recv;
}

inline auto busy(const op& o) noexcept -> bool { return o.in_flight || o.deferred; }

/// f(pool) with the request pool of a sender or a receiver channel.
template <class F>
inline decltype(auto) with_pool(channel_base& c, F&& f) {
    return c.is_sender ? f(static_cast<sender&>(c).pool) : f(static_cast<receiver&>(c).pool);
}

/// Calls f on every operation a request may have posted.
template <class F>
inline void for_each_op(request_base& r, F&& f) {
    if (r.is_send) {
        auto& q = static_cast<send_request&>(r);
        f(q.main);
        f(q.cts_op);
        for (auto& w : q.write_ops) f(w);
    } else {
        auto& q = static_cast<recv_request&>(r);
        for (int i = 0; i < q.n; ++i) {
            f(q.slots[static_cast<std::size_t>(i)].recv_op);
            f(q.slots[static_cast<std::size_t>(i)].cts_op);
        }
    }
}

/// A request from the channel's pool, reset for a new operation; nullptr when all are in use.
template <class C>
inline auto take_request(C& c, clock::time_point now) noexcept -> decltype(c.pool.take()) {
    auto* taken = c.pool.take();
    if (taken == nullptr) return nullptr;
    auto& r = *taken;
    r.gen += 1;
    r.chan = &c;
    r.done = false;
    r.released = false;
    r.error = errc::success;
    r.started = now;
    return &r;
}

inline auto ops_busy(request_base& r) noexcept -> bool {
    if (r.is_send) {
        // Only a rendezvous posts the CTS receive and the writes.
        auto& q = static_cast<send_request&>(r);
        if (busy(q.main)) return true;
        if (!q.rendezvous) return false;
        return busy(q.cts_op) || std::ranges::any_of(q.write_ops, busy);
    }
    auto& q = static_cast<recv_request&>(r);
    for (int i = 0; i < q.n; ++i) {
        const auto& s = q.slots[static_cast<std::size_t>(i)];
        if (busy(s.recv_op) || busy(s.cts_op)) return true;
    }
    return false;
}

}  // namespace loom::plugins::engine_detail
