// The peer monitor: a request that waits on its peer must end even when the peer is gone —
// killed, its host down or unreachable — on any host. While nothing waits, it costs nothing.
// Once a request of a channel has waited for a quarter of LOOM_PEER_TIMEOUT_MS, the channel
// pings its peer every quarter; the peer's engine answers from its progress, which the
// watchdog thread drives when the host makes no call (a peer busy computing still answers).
// Pings and pongs go between the engines' liveness endpoints where both have one: a connection
// of their own, so they never wait behind the data queued on a slow link.
// A channel that has heard nothing for three quarters of the timeout is dead: every request on
// it fails. So a peer dies at t and its requests fail by t + timeout (+ one check: every
// 100 ms, or every quarter where that is shorter).
// On shm a peer is also checked by pid, which says "gone" sooner. Not on socket providers: what
// a peer sent before it exited may still be in its socket or on the link, its close notice
// behind it. A provider error that says the peer cannot be reached declares it at once
// (progress.cpp, submission.cpp). A peer declared dead takes every channel to its endpoint with
// it: they share the provider's path, and one that waited less would otherwise start its clock
// again for what comes after.
// A side that closes while its peer may still wait on it says so (announce_close): the peer's
// channel is then no longer watched, and a sender's fails at once, without being declared dead.
#include "engine_internals.hpp"

#include <loom/plugins/engine.hpp>
#include <loom/plugins/liveness.hpp>
#include <loom/plugins/log.hpp>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <fstream>

namespace loom::plugins {

using namespace engine_detail;

namespace {

/// How long the host may leave the engine alone before the watchdog progresses it.
constexpr auto watchdog_period = std::chrono::milliseconds(20);

}  // namespace

auto engine::same_host_peer_gone(const channel_base& c) const noexcept -> bool {
    if (c.peer_host != host_id_ || c.peer_pid == 0) return false;
    if (::kill(static_cast<pid_t>(c.peer_pid), 0) == -1 && errno == ESRCH) return true;
    std::ifstream f("/proc/" + std::to_string(c.peer_pid) + "/stat");
    std::string line;
    std::getline(f, line);
    const auto p = line.rfind(')');
    return p != std::string::npos && p + 2 < line.size() && (line[p + 2] == 'Z' || line[p + 2] == 'X');
}

auto engine::peer_alive(const channel_base& c) const noexcept -> bool {
    return c.state != chan_state::failed && !same_host_peer_gone(c);
}

void engine::start_liveness(channel_base& c) noexcept {
    c.live->last_heard = clock::now();
    c.live->answered = false;
    c.live->last_ping = {};
    c.live->ping_sequence = 0;
    c.live->receive = {};
    c.live->receive.owner = &c;
    c.live->receive.kind = op_kind::liveness_recv;
    post(c.live->receive);
}

auto engine::send_liveness(channel_base& c, liveness_kind kind, std::uint32_t sequence, bool prefer_live_ep) noexcept
    -> bool {
    const bool on_live_ep = prefer_live_ep && c.live->via != fabric_addrs::unspecified;
    std::array<std::byte, liveness_size> b{};
    (void)encode(liveness_message{.kind = kind, .sequence = sequence}, b);
    // An inject: nothing to complete or cancel. When the provider refuses for now (a peer being
    // reconnected, queues full) the next check pings again; a lost pong is answered anew; a lost
    // close notice leaves the peer to its monitor, as before there was one.
    const auto tag =
        match_bits::make_tag(message_kind::control, c.remote_id, liveness_sequence, static_cast<std::uint32_t>(kind));
    auto r = on_live_ep ? main_->live.end.ep.tagged_inject(b, tag, c.live->via) : ep_.tagged_inject(b, tag, c.peer);
    if (!r && r.error() != make_error_code(errc::again))
        LOOM_DEBUG("liveness message {} to {}: {}", static_cast<int>(kind), c.peer_name, r.error().message());
    return r || r.error() != make_error_code(errc::again);
}

void engine::announce_close(channel_base& c) noexcept {
    if (c.state != chan_state::ready || c.closed_by_peer) return;  // nobody left to tell
    // Worth a short wait for room in a full transmit queue: without the notice the peer waits
    // out its timeout.
    const auto deadline = clock::now() + std::chrono::milliseconds(100);
    // With the data, not on the liveness endpoint: the notice must not overtake what this side sent.
    while (!send_liveness(c, liveness_kind::closed, 0, false) && clock::now() < deadline) progress();
    progress();  // the engine may close right after: give the notice its way out
}

void engine::on_liveness(channel_base& c, const completion_event& ev) noexcept {
    if (ev.has_error()) {
        if (ev.error == make_error_code(errc::canceled)) return;  // the channel is closing
        LOOM_DEBUG("liveness receive from {}: {}", c.peer_name, ev.error.message());
    } else {
        handle_liveness(c, {c.live->buffer.data(), std::min(ev.bytes_transferred, c.live->buffer.size())}, false);
    }
    if (c.state == chan_state::ready && !c.closed_by_peer) post(c.live->receive);
}

void engine::on_liveness_any(op& o, const completion_event& ev) noexcept {
    if (ev.has_error()) {
        if (ev.error == make_error_code(errc::canceled)) return;  // the engine is closing
        LOOM_DEBUG("liveness endpoint receive: {}", ev.error.message());
    } else if (auto it = channel_ids_.find(match_bits::channel_of(ev.tag)); it != channel_ids_.end()) {
        auto& buf = live_bufs_[o.slot];
        ++stats_.liveness_link_messages;
        if (it->second->state == chan_state::ready)
            handle_liveness(*it->second, {buf.data(), std::min(ev.bytes_transferred, buf.size())}, true);
    }  // else: for a channel closed since, or never ours
    post(o);
}

void engine::handle_liveness(channel_base& c, std::span<const std::byte> bytes, bool on_live_ep) noexcept {
    auto m = decode_liveness(bytes);
    if (!m) {
        LOOM_WARN("dropped a malformed liveness message from {}", c.peer_name);
        return;
    }
    c.live->last_heard = clock::now();  // a ping says as much as a pong
    if (m->kind == liveness_kind::closed) return end_by_peer(c);
    // A pong goes back the way its ping came.
    if (m->kind == liveness_kind::ping) send_liveness(c, liveness_kind::pong, m->sequence, on_live_ep);
}

void engine::declare_dead(channel_base& c, const char* why) noexcept {
    if (c.state != chan_state::failed) {
        ++stats_.peers_declared_dead;
        LOOM_WARN("peer {} (pid {}) {}; failing its requests", c.peer_name, c.peer_pid, why);
    }
    fail_channel(c, errc::host_unreachable);
    // Every channel to that endpoint shares the provider's path to it: they fail together, so
    // none of them starts its own clock again for what is submitted after.
    for (channel_base* other : channels_)
        if (other != &c && other->state == chan_state::ready && other->peer == c.peer)
            fail_channel(*other, errc::host_unreachable);
}

void engine::declare_unreachable(channel_base* c) noexcept {
    if (c != nullptr && c->state == chan_state::ready) declare_dead(*c, "is unreachable");
}

void engine::end_by_peer(channel_base& c) noexcept {
    if (c.state != chan_state::ready || c.closed_by_peer) return;
    LOOM_DEBUG("peer {} closed its side of channel {}", c.peer_name, c.id);
    c.closed_by_peer = true;  // its silence proves nothing now: the monitor leaves it alone
    // Sends can no longer complete. A receiver keeps what landed and its posted receives until
    // its owner closes it (the owner's own protocol says when everything has arrived).
    if (c.is_sender) fail_channel(c, errc::shutdown);
}

void engine::fail_channel(channel_base& c, errc why) noexcept {
    c.state = chan_state::failed;
    with_pool(c, [&](auto& pool) {
        for (auto& r : pool)
            if (r.active && !r.done) fail_request(r, why);
    });
}

auto engine::watch_peer(channel_base& c, bool waiting, clock::time_point now) noexcept -> next_check {
    if (c.live->answered) {  // the peer answered since the last check, whatever became of its pongs
        c.live->answered = false;
        c.live->last_heard = now;
    }
    if (waiting && pid_ends_peer_ && same_host_peer_gone(c)) {
        declare_dead(c, "is gone");
        return next_check::regular;
    }
    switch (liveness_step(waiting, now, c.live->last_heard, c.live->last_ping, cfg_.peer_timeout)) {
        case liveness_action::declare_dead: declare_dead(c, "stopped answering"); return next_check::regular;
        case liveness_action::ping:
            // A refused ping leaves last_ping as it was: the next check, soon, pings again.
            if (!send_liveness(c, liveness_kind::ping, ++c.live->ping_sequence, true)) {
                ++stats_.pings_refused;
                return next_check::soon;
            }
            ++stats_.pings_sent;
            c.live->last_ping = now;
            return next_check::regular;
        case liveness_action::none:
            if (!waiting) c.live->last_heard = now;  // nothing waits on the peer: nothing to prove
            return next_check::regular;
    }
    return next_check::regular;
}

void engine::tick(clock::time_point now) noexcept {
    coarse_now_ = now;
    // A liveness link on a provider of its own has a queue that progress() does not read (it
    // would cost every call a trip into that provider): a pong waits at most this long, or a
    // watchdog period when the host leaves the engine alone.
    if (main_->live.has_own_queue() && now >= next_live_poll_) {
        next_live_poll_ = now + std::chrono::milliseconds(1);
        poll_queue(main_->live.own.cq);
    }
    if (now < next_peer_check_) return;
    next_peer_check_ = now + (check_peers() == next_check::soon ? refused_ping_retry : check_period(cfg_.peer_timeout));
}

auto engine::check_peers() noexcept -> next_check {
    const auto now = clock::now();
    const auto stalled = ping_interval(cfg_.peer_timeout);
    auto waits = [&](const request_base& r) { return r.active && !r.done && now - r.started >= stalled; };
    next_check next = next_check::regular;
    for (channel_base* c : channels_) {
        if (c->state != chan_state::ready || c->closed_by_peer) continue;
        const bool foreign_waits = c->foreign_in_flight > 0 && now - c->foreign_since >= stalled;
        const bool waiting =
            foreign_waits || with_pool(*c, [&](auto& pool) { return std::ranges::any_of(pool, waits); });
        if (watch_peer(*c, waiting, now) == next_check::soon) next = next_check::soon;
    }
    return next;
}

void engine::watchdog() noexcept {
    auto seen = progress_calls_.load(std::memory_order_relaxed);
    while (!stop_.load(std::memory_order_relaxed)) {
        if (cfg_.progress_thread) {
            {
                std::lock_guard lock(mu_);
                progress();
            }
            std::this_thread::sleep_for(std::chrono::microseconds(50));
            continue;
        }
        std::this_thread::sleep_for(watchdog_period);
        const auto now_calls = progress_calls_.load(std::memory_order_relaxed);
        if (now_calls != seen) {  // the host is driving the engine
            seen = now_calls;
            continue;
        }
        if (!mu_.try_lock()) continue;
        // A host that leaves the engine alone still answers pings and has its peers checked:
        // progress() ticks only every 64th call, so the watchdog ticks itself.
        progress();
        tick(clock::now());
        seen = progress_calls_.load(std::memory_order_relaxed);
        mu_.unlock();
    }
}

}  // namespace loom::plugins
