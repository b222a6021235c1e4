// Send endpoints: the connection to a peer's receive endpoint, buffered sends (records
// coalesced into batches, one network message each) and zero-copy sends (a header slot, then
// the caller's buffer), their completions, and closing.
#include "endpoint_manager_impl.hpp"

#include <loom/plugins/log.hpp>

#include <algorithm>
#include <thread>

namespace loom::plugins {

namespace {

auto valid(const connection_parameters& p) -> bool {
    if (p.buffer_count == 0 || p.buffer_count > max_send_buffers || p.flush_interval.count() < 0) return false;
    if (p.mode == send_mode::buffered)
        return batch_writer::fits(0, p.buffer_size) && p.buffer_size <= immediate::length_mask;
    return p.mode == send_mode::zero_copy;
}

/// Where a send endpoint stands for a new send: ok, or why not.
auto ready_for(const send_ep& s, send_mode mode) -> void_result {
    if (s.params.mode != mode) return make_unexpected(errc::invalid_argument);
    if (s.state == link_state::connecting) return make_unexpected(errc::not_connected);
    if (s.state == link_state::failed || s.chan->state != chan_state::ready)
        return make_unexpected(errc::connection_aborted);
    return {};
}

}  // namespace

auto endpoint_manager::impl::open_send(std::span<const std::byte> peer, const connection_parameters& p, void* ctx)
    -> result<send_endpoint_id> {
    if (peer.size() != handle_size || !valid(p)) return make_unexpected(errc::invalid_argument);
    auto s = std::make_unique<send_ep>();
    s->params = p;
    s->context = ctx;
    std::ranges::copy(peer, s->peer_address.begin());
    const std::size_t slot = p.mode == send_mode::buffered ? p.buffer_size : zero_copy_header_size;
    s->storage.resize(slot * p.buffer_count + goodbye_batch_size);
    auto cleanup = [&](std::error_code ec) {
        if (s->storage_mh != nullptr) eng->deregister(*s->storage_mh);
        if (s->ops_mh != nullptr) eng->deregister(*s->ops_mh);
        return std::unexpected(ec);
    };
    auto mh = eng->register_memory(s->storage.data(), s->storage.size());
    if (!mh) return cleanup(mh.error());
    s->storage_mh = *mh;
    auto omh = eng->register_memory(s->ops.data(), sizeof(s->ops));
    if (!omh) return cleanup(omh.error());
    s->ops_mh = *omh;
    if (p.mode == send_mode::buffered) {
        s->in_flight.assign(p.buffer_count, nullptr);
        for (int i = static_cast<int>(p.buffer_count) - 1; i >= 0; --i) s->free_buffers.push_back(i);
    } else {
        s->zc.resize(p.buffer_count);
        s->zc_free = p.buffer_count;
    }
    s->least_available = s->available();
    auto c = eng->connect(peer, s.get());  // validates the address; the handshake runs in poll()
    if (!c) return cleanup(c.error());
    if (*c != nullptr) {
        s->chan = *c;
        s->state = link_state::ready;
        emit({.kind = event_kind::connected, .context = ctx});
    }
    const auto index =
        static_cast<std::size_t>(std::ranges::find_if(sends, [](const auto& p) { return !p; }) - sends.begin());
    if (index == sends.size()) sends.emplace_back();
    s->gen = ++next_gen_;
    s->id = static_cast<send_endpoint_id>(make_id(index, s->gen));
    const auto id = s->id;
    if (s->chan != nullptr) pending_.back().sender = id;
    sends[index] = std::move(s);
    return id;
}

void endpoint_manager::impl::progress_send(send_ep& s) {
    if (s.state == link_state::connecting) {
        auto c = eng->connect(s.peer_address, &s);
        if (!c) {
            s.state = link_state::failed;
            emit({.kind = event_kind::connection_failed, .error = c.error(), .context = s.context, .sender = s.id});
        } else if (*c != nullptr) {
            s.chan = *c;
            s.state = link_state::ready;
            emit({.kind = event_kind::connected, .context = s.context, .sender = s.id});
        }
        return;
    }
    if (s.state != link_state::ready) return;
    if (s.chan->state == chan_state::failed && !s.lost_reported) {
        s.lost_reported = true;
        const bool closed = s.chan->closed_by_peer;  // the receiver said it closed, or it is lost
        const errc why = closed ? errc::shutdown : errc::host_unreachable;
        emit({.kind = closed ? event_kind::peer_closed : event_kind::peer_lost,
              .error = make_error_code(why),
              .context = s.context,
              .sender = s.id});
        report_one_sided(s, why);  // they may never complete (shm)
    }
    for (std::size_t i = 0; i < s.in_flight.size(); ++i) {
        send_request* r = s.in_flight[i];
        if (r == nullptr || !r->done) continue;
        bool done = false;
        if (const errc e = eng->test(*r, done, nullptr, 0); e != errc::success)
            emit({.kind = event_kind::error, .error = make_error_code(e), .context = s.context, .sender = s.id});
        s.in_flight[i] = nullptr;
        s.free_buffers.push_back(static_cast<int>(i));
    }
    for (auto& z : s.zc) {
        if (!z.used || !z.header->done || !z.data->done) continue;
        bool done = false;
        const errc eh = eng->test(*z.header, done, nullptr, 0);
        const errc ed = eng->test(*z.data, done, nullptr, 0);
        const errc e = ed != errc::success ? ed : eh;
        emit({.kind = event_kind::send_complete,
              .error = e == errc::success ? std::error_code{} : make_error_code(e),
              .context = z.context,
              .sender = s.id});
        z = {};
        ++s.zc_free;
    }
    if (s.current >= 0 && !s.writer->empty() &&
        (s.params.flush_interval.count() == 0 || clock::now() - s.first_message >= s.params.flush_interval))
        (void)flush(s);
    s.least_available = std::min(s.least_available, s.available());
}

auto endpoint_manager::impl::send_buffered(send_ep& s, std::uint16_t kind, std::span<const std::byte> msg)
    -> void_result {
    if (auto ok = ready_for(s, send_mode::buffered); !ok) return ok;
    if (!batch_writer::fits(msg.size(), s.params.buffer_size)) return make_unexpected(errc::message_too_long);
    auto take = [&]() -> bool {
        if (s.free_buffers.empty()) return false;
        s.current = s.free_buffers.back();
        s.free_buffers.pop_back();
        s.writer.emplace(s.buffer(s.current));
        if (s.params.flush_interval.count() > 0) s.first_message = clock::now();
        return true;
    };
    if (s.current < 0 && !take()) return make_unexpected(errc::again);
    if (s.writer->append(kind, msg)) return {};
    if (auto f = flush(s); !f) return f;  // the full buffer leaves; the message opens the next
    if (s.current >= 0 || !take()) return make_unexpected(errc::again);
    (void)s.writer->append(kind, msg);  // fits an empty buffer (checked above)
    s.least_available = std::min(s.least_available, s.available());
    return {};
}

auto endpoint_manager::impl::flush(send_ep& s) -> void_result {
    if (s.params.mode != send_mode::buffered) return make_unexpected(errc::invalid_argument);
    if (s.current < 0 || s.writer->empty()) return {};
    if (auto ok = ready_for(s, send_mode::buffered); !ok) return ok;
    const auto batch = s.writer->finish();
    auto r = eng->isend(*s.chan, batch.data(), batch.size(), tag_batch, s.storage_mh);
    if (!r) return std::unexpected(r.error());
    if (*r == nullptr) return make_unexpected(errc::again);  // the buffer stays current, intact
    s.in_flight[static_cast<std::size_t>(s.current)] = *r;
    ++s.messages_sent;
    s.current = -1;
    s.writer.reset();
    return {};
}

auto endpoint_manager::impl::send_zero_copy(send_ep& s, std::span<const std::byte> data, memory_handle* mh,
                                            std::span<const std::byte> header, void* ctx) -> void_result {
    if (auto ok = ready_for(s, send_mode::zero_copy); !ok) return ok;
    if (header.size() > max_header_bytes || (data.data() == nullptr && !data.empty()) ||
        !eng->covers(mh, data.data(), data.size()))
        return make_unexpected(errc::invalid_argument);
    auto z = std::ranges::find_if(s.zc, [](const zero_copy_send& x) { return !x.used; });
    if (z == s.zc.end() || eng->free_requests(*s.chan) < 2) return make_unexpected(errc::again);
    const auto slot = std::span{s.storage}.subspan(static_cast<std::size_t>(z - s.zc.begin()) * zero_copy_header_size,
                                                   zero_copy_header_size);
    const std::size_t len = encode(zero_copy_header{.data_length = data.size(), .header = header}, slot).value();
    auto h = eng->isend(*s.chan, slot.data(), len, tag_zc_header, s.storage_mh);
    if (!h) return std::unexpected(h.error());
    if (*h == nullptr) return make_unexpected(errc::again);
    auto d = eng->isend(*s.chan, data.data(), data.size(), tag_zc_data, mh);
    if (!d || *d == nullptr) {
        // A header went without its data: the peer would pair it with the next message.
        LOOM_WARN("zero-copy send to {}: the data could not follow its header; closing the link", s.chan->peer_name);
        s.state = link_state::failed;
        if (!d) return std::unexpected(d.error());
        return make_unexpected(errc::io_error);
    }
    *z = {.header = *h, .data = *d, .context = ctx, .used = true};
    --s.zc_free;
    ++s.messages_sent;
    s.least_available = std::min(s.least_available, s.available());
    return {};
}

template <class Busy>
void endpoint_manager::impl::wait_while(send_ep& s, Busy&& busy, clock::time_point deadline) {
    while (busy() && clock::now() < deadline && s.chan->state == chan_state::ready) {
        eng->progress();
        progress_send(s);
        eng->mutex().unlock();  // let the watchdog and other callers in during the wait
        std::this_thread::yield();
        eng->mutex().lock();
    }
}

void endpoint_manager::impl::say_goodbye(send_ep& s, clock::time_point deadline) {
    // The receiver closes its side once it has handled everything counted here.
    if (s.chan->state != chan_state::ready) return;
    const auto area = std::span{s.storage}.last(goodbye_batch_size);
    const bool buffered = s.params.mode == send_mode::buffered;
    const auto n =
        encode(goodbye{.batches = buffered ? s.messages_sent : 0, .zero_copy = buffered ? 0 : s.messages_sent}, area);
    auto r = eng->isend(*s.chan, area.data(), n.value(), tag_batch, s.storage_mh);  // fits: goodbye_batch_size
    if (!r || *r == nullptr) return;  // the peer learns of the close from its peer monitor instead
    wait_while(s, [&] { return !(*r)->done; }, deadline);
    bool done = false;
    if ((*r)->done) (void)eng->test(**r, done, nullptr, 0);
}

auto endpoint_manager::impl::close_send(send_ep& s) -> void_result {
    const auto index = (static_cast<std::uint64_t>(s.id) & 0xffffffffU) - 1;
    if (s.state == link_state::ready) {
        (void)flush(s);
        const auto deadline = clock::now() + eng->settings().peer_timeout;
        wait_while(
            s,
            [&] {
                return s.ops_in_flight > 0 || std::ranges::any_of(s.in_flight, [](auto* r) { return r != nullptr; }) ||
                       std::ranges::any_of(s.zc, [](const zero_copy_send& z) { return z.used; });
            },
            deadline);
        // First the engine under the receiver stops watching a peer that leaves in order (it
        // may see the goodbye only when its owner next polls), then the goodbye: sent after it,
        // the notice could find the channel already closed.
        eng->announce_close(*s.chan);
        say_goodbye(s, deadline);
        for (auto& z : s.zc)
            if (z.used)
                emit({.kind = event_kind::send_complete,
                      .error = make_error_code(errc::canceled),
                      .context = z.context,
                      .sender = s.id});
        eng->close(*s.chan);
    } else if (s.state == link_state::connecting) {
        eng->abandon_connect(&s);
    } else if (s.chan != nullptr) {
        eng->close(*s.chan);
    }
    eng->deregister(*s.storage_mh);
    eng->deregister(*s.ops_mh);
    auto owned = std::move(sends[index]);
    if (owned->ops_in_flight > 0) {
        LOOM_WARN("send endpoint closed with {} one-sided operations the provider still holds", owned->ops_in_flight);
        report_one_sided(*owned, errc::canceled);
        abandoned.push_back(std::move(owned));  // their memory stays until the engine is gone
    }
    return {};
}

}  // namespace loom::plugins
