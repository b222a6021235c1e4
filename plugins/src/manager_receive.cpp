// Receive endpoints: a listener peers connect to, and per connected sender three rings of
// receives kept posted — batches, zero-copy headers, zero-copy data (the endpoint's pool, or
// the caller's posted buffers) — handled in posting order, which is the sender's order.
#include "endpoint_manager_impl.hpp"

#include <loom/plugins/log.hpp>

#include <algorithm>

namespace loom::plugins {

namespace {

auto valid(const receive_parameters& p) -> bool {
    return p.buffer_count > 0 && p.buffer_count <= max_receive_buffers && batch_writer::fits(0, p.buffer_size) &&
           p.buffer_size <= immediate::length_mask && (p.mode == receive_mode::pool || p.mode == receive_mode::posted);
}

/// Where buffer `b` of a ring lies in a connection's storage.
auto ring_buffer(recv_conn& c, const receive_ring& ring, std::size_t b, const receive_parameters& p)
    -> std::span<std::byte> {
    const std::size_t n = p.buffer_count;
    auto all = std::span{c.storage};
    if (&ring == &c.batches) return all.subspan(b * p.buffer_size, p.buffer_size);
    if (&ring == &c.headers) return all.subspan(n * p.buffer_size + b * zero_copy_header_size, zero_copy_header_size);
    return all.subspan(n * (p.buffer_size + zero_copy_header_size) + b * p.buffer_size, p.buffer_size);
}

auto tag_of(const recv_conn& c, const receive_ring& ring) -> std::uint32_t {
    if (&ring == &c.batches) return tag_batch;
    return &ring == &c.headers ? tag_zc_header : tag_zc_data;
}

/// One receive of `buf` on the connection's channel; nullptr with an error event on failure.
auto post_one(engine& eng, recv_conn& c, std::span<std::byte> buf, memory_handle* mh, std::uint32_t tag)
    -> result<recv_request*> {
    void* data = buf.data();
    const std::size_t size = buf.size();
    const int t = static_cast<int>(tag);
    auto r = eng.irecv(*c.chan, 1, &data, &size, &t, &mh);
    if (r && *r == nullptr) return make_unexpected(errc::again);  // cannot happen: rings fit the pool
    return r;
}

}  // namespace

auto endpoint_manager::impl::open_receive(const receive_parameters& p, void* ctx) -> result<receive_endpoint_id> {
    if (!valid(p)) return make_unexpected(errc::invalid_argument);
    auto r = std::make_unique<recv_ep>();
    r->params = p;
    r->context = ctx;
    auto l = eng->listen(r->address);
    if (!l) return std::unexpected(l.error());
    r->listen = *l;
    const auto index =
        static_cast<std::size_t>(std::ranges::find_if(receives, [](const auto& p) { return !p; }) - receives.begin());
    if (index == receives.size()) receives.emplace_back();
    r->gen = ++next_gen_;
    r->id = static_cast<receive_endpoint_id>(make_id(index, r->gen));
    const auto id = r->id;
    receives[index] = std::move(r);
    return id;
}

auto endpoint_manager::impl::post_ring(recv_ep& r, recv_conn& c, receive_ring& ring, std::size_t b) -> bool {
    auto q = post_one(*eng, c, ring_buffer(c, ring, b, r.params), c.storage_mh, tag_of(c, ring));
    if (!q) {
        emit({.kind = event_kind::error, .error = q.error(), .context = r.context, .receiver = r.id, .peer = c.peer});
        return false;
    }
    ring.req[b] = *q;
    return true;
}

void endpoint_manager::impl::post_waiting(recv_ep& r, recv_conn& c) {
    // The caller's buffers in order, at most buffer_count of them posted at a time.
    std::size_t posted = 0;
    for (auto& pb : c.posted) {
        if (posted == r.params.buffer_count) return;
        if (pb.req == nullptr) {
            auto q = post_one(*eng, c, pb.buffer, pb.mh, tag_zc_data);
            if (!q) {
                emit({.kind = event_kind::error,
                      .error = q.error(),
                      .context = r.context,
                      .receiver = r.id,
                      .peer = c.peer,
                      .buffer_context = pb.context});
                return;
            }
            pb.req = *q;
        }
        ++posted;
    }
}

void endpoint_manager::impl::connect_peer(recv_ep& r, receiver& chan) {
    const auto& p = r.params;
    if (p.mode == receive_mode::posted && !r.conns.empty()) {
        LOOM_WARN("a second sender connected to a posted-mode receive endpoint; refused");
        eng->close(chan);
        emit({.kind = event_kind::error,
              .error = make_error_code(errc::connection_refused),
              .context = r.context,
              .receiver = r.id});
        return;
    }
    auto c = std::make_unique<recv_conn>();
    c->chan = &chan;
    c->peer = r.next_peer++;
    const std::size_t n = p.buffer_count;
    c->storage.resize(n * (p.buffer_size + zero_copy_header_size) +
                      (p.mode == receive_mode::pool ? n * p.buffer_size : 0));
    auto mh = eng->register_memory(c->storage.data(), c->storage.size());
    if (!mh) {
        eng->close(chan);
        emit({.kind = event_kind::error, .error = mh.error(), .context = r.context, .receiver = r.id});
        return;
    }
    c->storage_mh = *mh;
    for (auto* ring : {&c->batches, &c->headers, &c->data}) ring->req.assign(n, nullptr);
    bool ok = true;
    for (std::size_t b = 0; b < n && ok; ++b) {
        ok = post_ring(r, *c, c->batches, b) && post_ring(r, *c, c->headers, b);
        if (ok && p.mode == receive_mode::pool) ok = post_ring(r, *c, c->data, b);
    }
    if (p.mode == receive_mode::posted) {
        c->posted = std::move(r.unclaimed);
        r.unclaimed.clear();
        post_waiting(r, *c);
    }
    emit({.kind = event_kind::peer_connected, .context = r.context, .receiver = r.id, .peer = c->peer});
    r.conns.push_back(std::move(c));
}

void endpoint_manager::impl::take_batches(recv_ep& r, recv_conn& c) {
    auto& ring = c.batches;
    const std::size_t n = ring.req.size();
    while (ring.req[ring.head % n] != nullptr && ring.req[ring.head % n]->done) {
        const std::size_t b = ring.head++ % n;
        std::size_t size = 0;
        bool done = false;
        const errc e = eng->test(*std::exchange(ring.req[b], nullptr), done, &size, 1);
        reposts_.push_back({.ep = r.id, .conn = &c, .ring = &ring, .buffer = b});  // after the handler
        event ev{.kind = event_kind::error, .context = r.context, .receiver = r.id, .peer = c.peer};
        if (e != errc::success) {
            ev.error = make_error_code(e);
            if (!c.lost) emit(ev);
            continue;
        }
        auto reader = batch_reader::open(ring_buffer(c, ring, b, r.params).first(size));
        result<std::optional<batch_record>> rec = make_unexpected(errc::protocol_error);
        if (reader) rec = reader->next();
        bool farewell = false;
        for (; rec; rec = reader->next()) {
            const std::optional<batch_record>& next = *rec;
            if (!next) break;  // the end of the batch
            const batch_record& record = *next;
            if (record.kind == static_cast<std::uint16_t>(record_kind::goodbye)) {
                if (auto g = decode_goodbye(record.payload)) c.farewell = *g;
                farewell = true;
                continue;
            }
            ev.kind = event_kind::message;
            ev.record = record.kind;
            ev.data = record.payload;
            emit(ev);
        }
        if (!rec) {
            // Records before the fault were delivered; the rest of this batch is dropped.
            LOOM_WARN("malformed batch ({} bytes) from peer {}", size, c.peer);
            emit({.kind = event_kind::error,
                  .error = rec.error(),
                  .context = r.context,
                  .receiver = r.id,
                  .peer = c.peer});
        }
        if (!farewell) ++c.batches_taken;
    }
}

void endpoint_manager::impl::take_zero_copy(recv_ep& r, recv_conn& c) {
    auto& hr = c.headers;
    const std::size_t n = hr.req.size();
    const bool pool = r.params.mode == receive_mode::pool;
    for (;;) {
        recv_request* h = hr.req[hr.head % n];
        recv_request* d = pool ? c.data.req[c.data.head % n] : (c.posted.empty() ? nullptr : c.posted.front().req);
        if (h == nullptr || d == nullptr || !h->done || !d->done) return;
        const std::size_t hb = hr.head++ % n;
        hr.req[hb] = nullptr;
        std::size_t hsize = 0, dsize = 0;
        bool done = false;
        const errc eh = eng->test(*h, done, &hsize, 1);
        const errc ed = eng->test(*d, done, &dsize, 1);
        event ev{.kind = event_kind::message, .context = r.context, .receiver = r.id, .peer = c.peer};
        std::span<std::byte> buf;
        if (pool) {
            const std::size_t db = c.data.head++ % n;
            c.data.req[db] = nullptr;
            buf = ring_buffer(c, c.data, db, r.params);
            reposts_.push_back({.ep = r.id, .conn = &c, .ring = &c.data, .buffer = db});
        } else {
            buf = c.posted.front().buffer;
            ev.buffer_context = c.posted.front().context;
            c.posted.pop_front();
            post_waiting(r, c);
        }
        reposts_.push_back({.ep = r.id, .conn = &c, .ring = &hr, .buffer = hb});
        ++c.zero_copy_taken;
        result<zero_copy_header> zh = make_unexpected(eh);
        if (eh == errc::success) zh = decode_zero_copy_header(ring_buffer(c, hr, hb, r.params).first(hsize));
        if (ed != errc::success || !zh) {
            ev.kind = event_kind::error;
            ev.error = ed != errc::success ? make_error_code(ed) : zh.error();
        } else if (zh->data_length != dsize) {
            // More than the buffer holds: the excess was dropped, so the message is not delivered.
            ev.kind = event_kind::error;
            ev.error = make_error_code(errc::message_too_long);
        } else {
            ev.data = buf.first(dsize);
            ev.header = zh->header;
        }
        if (ev.kind == event_kind::message || !c.lost) emit(ev);
    }
}

void endpoint_manager::impl::progress_receive(recv_ep& r) {
    for (;;) {
        auto chan = eng->accept(*r.listen);
        if (!chan) {
            emit({.kind = event_kind::error, .error = chan.error(), .context = r.context, .receiver = r.id});
            break;
        }
        if (*chan == nullptr) break;
        connect_peer(r, **chan);
    }
    for (auto& c : r.conns) {
        if (c->retiring) continue;
        // What landed is delivered first, also from a peer that has just died or said goodbye.
        take_batches(r, *c);
        take_zero_copy(r, *c);
        check_farewell(r, *c);
        if (!c->retiring && c->chan->state == chan_state::failed) {
            c->lost = true;
            emit({.kind = event_kind::peer_lost,
                  .error = make_error_code(errc::host_unreachable),
                  .context = r.context,
                  .receiver = r.id,
                  .peer = c->peer});
            c->retiring = true;
            retiring_.push_back({.ep = r.id, .conn = c.get()});
        }
    }
}

void endpoint_manager::impl::check_farewell(recv_ep& r, recv_conn& c) {
    if (!c.farewell || c.batches_taken < c.farewell->batches || c.zero_copy_taken < c.farewell->zero_copy) return;
    emit({.kind = event_kind::peer_closed, .context = r.context, .receiver = r.id, .peer = c.peer});
    c.retiring = true;
    retiring_.push_back({.ep = r.id, .conn = &c});
}

void endpoint_manager::impl::cancel_posted(const recv_ep& r, const recv_conn::posted_buffer& pb, std::uint32_t peer) {
    emit({.kind = event_kind::error,
          .error = make_error_code(errc::canceled),
          .context = r.context,
          .receiver = r.id,
          .peer = peer,
          .buffer_context = pb.context});
}

void endpoint_manager::impl::end_connection(const recv_ep& r, std::unique_ptr<recv_conn>& c) {
    const bool late_writes = eng->awaits_writes(*c->chan);
    eng->close(*c->chan);  // fails and reaps its receives
    eng->deregister(*c->storage_mh);
    for (const auto& pb : c->posted) cancel_posted(r, pb, c->peer);
    if (late_writes) abandoned_receives.push_back(std::move(c));  // its buffers outlive the engine's endpoint
}

void endpoint_manager::impl::retire_connections() {
    // After delivery: the handler has seen what landed in the connection's buffers.
    for (const auto& rc : retiring_) {
        recv_ep* r = lookup(rc.ep);
        if (r == nullptr) continue;
        auto it = std::ranges::find_if(r->conns, [&](const auto& c) { return c.get() == rc.conn; });
        if (it == r->conns.end()) continue;
        end_connection(*r, *it);
        r->conns.erase(it);
    }
    retiring_.clear();
}

void endpoint_manager::impl::repost_all() {
    for (const auto& rp : reposting_) {
        recv_ep* r = lookup(rp.ep);
        if (r == nullptr) continue;  // closed by the handler
        auto it = std::ranges::find_if(r->conns, [&](const auto& c) { return c.get() == rp.conn; });
        if (it == r->conns.end() || rp.conn->lost || rp.conn->chan->state != chan_state::ready) continue;
        (void)post_ring(*r, *rp.conn, *rp.ring, rp.buffer);
    }
    reposting_.clear();
}

auto endpoint_manager::impl::post_receive(recv_ep& r, std::span<std::byte> buf, memory_handle* mh, void* ctx)
    -> void_result {
    if (r.params.mode != receive_mode::posted || buf.empty() || buf.size() > immediate::length_mask ||
        !eng->covers(mh, buf.data(), buf.size()))
        return make_unexpected(errc::invalid_argument);
    const recv_conn::posted_buffer pb{.buffer = buf, .mh = mh, .context = ctx, .req = nullptr};
    if (r.conns.empty()) {
        r.unclaimed.push_back(pb);
        return {};
    }
    auto& c = *r.conns.front();
    if (c.lost) return make_unexpected(errc::connection_aborted);
    c.posted.push_back(pb);
    post_waiting(r, c);
    return {};
}

void endpoint_manager::impl::close_receive(recv_ep& r) noexcept {
    // Out of the table first: the waits below let other threads at the engine, and none of
    // them may accept, post or deliver on this endpoint meanwhile (its handle is stale now).
    const auto index = (static_cast<std::uint64_t>(r.id) & 0xffffffffU) - 1;
    const std::unique_ptr<recv_ep> owned = std::move(receives[index]);
    for (auto& c : r.conns) {
        // A sender that has not said goodbye may still wait on this side: it hears of the close.
        if (!c->farewell && !c->lost) eng->announce_close(*c->chan);  // nothing if it announced its own
        // The caller's buffers come back as canceled, to be reused at once: none may still
        // have a write on its way into it.
        if (r.params.mode == receive_mode::posted) eng->wait_for_writes(*c->chan);
        end_connection(r, c);
    }
    for (const auto& pb : r.unclaimed) cancel_posted(r, pb, 0);
    eng->close(*r.listen);
}

}  // namespace loom::plugins
