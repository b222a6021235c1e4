// Connection set-up: listen, connect, accept (CONNECT / ACCEPT), never blocking.
#include "engine_internals.hpp"

#include <loom/gpu/cuda.hpp>
#include <loom/plugins/log.hpp>

#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace loom::plugins {

using namespace engine_detail;
using match_bits::make_tag;

// ---------------------------------------------------------------- connection set-up
auto engine::listen(handle_bytes& out) -> result<listener*> {
    auto id = new_channel_id();
    if (!id) return std::unexpected(id.error());
    auto h = encode_handle({.channel_id = *id, .flags = 0, .endpoint_address = self_});
    if (!h) return std::unexpected(h.error());
    listener* l = slab_of<listener>().get();
    l->eng = this;
    l->id = *id;
    l->state = chan_state::ready;
    l->arrived.clear();
    l->recv_op = {};
    l->recv_op.owner = l;
    l->recv_op.kind = op_kind::listen_recv;
    l->magic.store(magic_listen);
    post(l->recv_op);
    if (l->recv_op.deferred == false && l->recv_op.in_flight == false) {
        l->magic.store(magic_dead);
        slab_of<listener>().put(l);
        return make_unexpected(errc::io_error);
    }
    out = *h;
    return l;
}

void engine::on_listen(listener& l, const completion_event& ev) noexcept {
    if (ev.has_error()) {
        if (ev.error != make_error_code(errc::canceled)) {
            LOOM_WARN("listen receive failed: {}", ev.error.message());
            post(l.recv_op);
        }
        return;
    }
    auto m = decode_connect({l.buffer.data(), std::min(ev.bytes_transferred, l.buffer.size())});
    if (m && m->listen_channel == l.id) {
        l.arrived.push_back({.sender_id = m->sender_channel,
                             .pid = m->pid,
                             .host = m->host,
                             .peer_address = std::move(m->sender_address),
                             .rail_addresses = std::move(m->rails),
                             .liveness_address = std::move(m->liveness)});
    } else {
        LOOM_WARN("dropped a malformed connect message ({} bytes)", ev.bytes_transferred);
    }
    post(l.recv_op);
}

auto engine::resolve(std::span<const std::byte> handle) -> void_result {
    auto info = decode_handle(handle);
    if (!info) return std::unexpected(info.error());
    if (native_format(info->endpoint_address) != nic_.info.addr_format() &&
        !(nic_.info.addr_format() == address_format::unspecified))
        return make_unexpected(errc::invalid_argument);
    auto peer = insert_rail_peer(0, info->endpoint_address);
    if (!peer) return std::unexpected(peer.error());
    return {};
}

auto engine::connect(std::span<const std::byte> handle, const void* key) -> result<sender*> {
    if (auto it = connecting_.find(key);
        it != connecting_.end() && std::ranges::equal(it->second.first, handle.first(handle_size))) {
        progress();
        sender* s = it->second.second;
        if (s->state == chan_state::ready) {
            connecting_.erase(it);
            return s;
        }
        if (s->state == chan_state::failed || clock::now() > s->deadline) {
            connecting_.erase(it);
            LOOM_WARN("connect to {} {}", s->peer_name, s->state == chan_state::failed ? "failed" : "timed out");
            close(*s);
            return make_unexpected(errc::connection_refused);
        }
        return nullptr;
    }
    auto info = decode_handle(handle);
    if (!info) return std::unexpected(info.error());
    if (info->channel_id == 0 || info->channel_id > match_bits::max_channel_id)
        return make_unexpected(errc::invalid_argument);
    if (native_format(info->endpoint_address) != nic_.info.addr_format() &&
        !(nic_.info.addr_format() == address_format::unspecified))
        return make_unexpected(errc::invalid_argument);
    auto peer = insert_rail_peer(0, info->endpoint_address);
    if (!peer) return std::unexpected(peer.error());
    auto id = new_channel_id();
    if (!id) return std::unexpected(id.error());
    sender* s = slab_of<sender>().get();
    s->eng = this;
    s->id = *id;
    s->listen_id = static_cast<std::uint32_t>(info->channel_id);
    s->peer = *peer;
    s->peer_name = to_string(info->endpoint_address);
    s->state = chan_state::connecting;
    s->foreign_in_flight = 0;  // slab objects are reused: nothing of a former channel counts
    s->closed_by_peer = false;
    s->deadline = clock::now() + cfg_.connect_timeout;
    s->seqs.reset();
    s->pool.reset();
    for (auto& r : s->pool) {
        r.chan = s;
        r.is_send = true;
        r.main.owner = r.cts_op.owner = &r;
        for (auto& w : r.write_ops) w.owner = &r;
    }
    auto len = encode(connect_message{.sender_channel = s->id,
                                      .listen_channel = s->listen_id,
                                      .pid = static_cast<std::uint32_t>(::getpid()),
                                      .host = host_id_,
                                      .sender_address = self_,
                                      .rails = rail_addresses(),
                                      .liveness = liveness_address()},
                      s->connect_msg);
    if (!len) {
        s->magic.store(magic_dead);
        slab_of<sender>().put(s);
        return std::unexpected(len.error());
    }
    s->connect_len = *len;
    s->rails = 1;
    s->rail_peer[0] = s->peer;
    s->accept_op = {};
    s->accept_op.owner = s;
    s->accept_op.kind = op_kind::accept_recv;
    s->connect_op = {};
    s->connect_op.owner = s;
    s->connect_op.kind = op_kind::connect_send;
    s->magic.store(magic_send);
    s->is_sender = true;
    channels_.push_back(s);
    channel_ids_[s->id] = s;
    post(s->accept_op);
    post(s->connect_op);
    handle_bytes copy{};
    std::ranges::copy(handle.first(handle_size), copy.begin());
    connecting_[key] = {copy, s};
    progress();
    return nullptr;
}

void engine::abandon_connect(const void* key) noexcept {
    auto it = connecting_.find(key);
    if (it == connecting_.end()) return;
    sender* s = it->second.second;
    connecting_.erase(it);
    close(*s);
}

void engine::on_accept_msg(sender& s, const completion_event& ev) noexcept {
    if (ev.has_error()) {
        if (ev.error != make_error_code(errc::canceled)) s.state = chan_state::failed;
        return;
    }
    auto m = decode_accept({s.accept_msg.data(), std::min(ev.bytes_transferred, s.accept_msg.size())});
    if (!m || m->sender_channel != s.id) {
        LOOM_WARN("malformed accept message from {}", s.peer_name);
        s.state = chan_state::failed;
        return;
    }
    s.remote_id = m->receiver_channel;
    s.peer_pid = m->pid;
    s.peer_host = m->host;
    connect_rails(s, m->rails);
    connect_liveness(s, m->liveness);
    s.state = chan_state::ready;
    start_liveness(s);
}

auto engine::accept(listener& l) -> result<receiver*> {
    progress();
    if (l.arrived.empty()) return nullptr;
    pending_connect pc = std::move(l.arrived.front());
    l.arrived.pop_front();
    auto peer = insert_rail_peer(0, pc.peer_address);
    if (!peer) return std::unexpected(peer.error());
    auto id = new_channel_id();
    if (!id) return std::unexpected(id.error());
    receiver* r = slab_of<receiver>().get();
    r->eng = this;
    r->id = *id;
    r->remote_id = pc.sender_id;
    r->peer = *peer;
    r->peer_pid = pc.pid;
    r->peer_host = pc.host;
    r->peer_name = to_string(pc.peer_address);
    r->state = chan_state::ready;
    r->foreign_in_flight = 0;
    r->closed_by_peer = false;
    r->seqs.reset();
    r->pool.reset();
    for (auto& q : r->pool) {
        q.chan = r;
        for (std::uint8_t i = 0; i < max_slots; ++i) {
            q.slots[i].recv_op.owner = q.slots[i].cts_op.owner = &q;
            q.slots[i].recv_op.slot = q.slots[i].cts_op.slot = i;
        }
    }
    auto len = encode(accept_message{.receiver_channel = r->id,
                                     .sender_channel = r->remote_id,
                                     .pid = static_cast<std::uint32_t>(::getpid()),
                                     .host = host_id_,
                                     .rails = rail_addresses(),
                                     .liveness = liveness_address()},
                      r->accept_msg);
    if (!len) {
        r->magic.store(magic_dead);
        slab_of<receiver>().put(r);
        return std::unexpected(len.error());
    }
    r->accept_len = *len;
    connect_rails(*r, pc.rail_addresses);
    connect_liveness(*r, pc.liveness_address);
    r->accept_op = {};
    r->accept_op.owner = r;
    r->accept_op.kind = op_kind::accept_send;
    r->magic.store(magic_recv);
    receivers_[r->id] = r;
    // Room for every receive this engine's channels can queue: irecv never allocates.
    unposted_.reserve(receivers_.size() * static_cast<std::size_t>(recv_pool_size * max_slots));
    r->is_sender = false;
    channels_.push_back(r);
    channel_ids_[r->id] = r;
    post(r->accept_op);
    start_liveness(*r);
    return r;
}

}  // namespace loom::plugins
