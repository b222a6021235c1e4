// Requests: send, receive and flush requests taken from the channel pools, completed and
// recycled.
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

// ---------------------------------------------------------------- data path
auto engine::isend(sender& s, const void* data, std::size_t size, std::uint32_t tag, memory_handle* mh)
    -> result<send_request*> {
    if (s.state != chan_state::ready) return make_unexpected(errc::io_error);
    if (data == nullptr && size != 0) return make_unexpected(errc::invalid_argument);
    if (!covers(mh, data, size)) {
        LOOM_WARN("send of {} bytes at {}: stale registration, or the buffer lies outside it", size, data);
        return make_unexpected(errc::invalid_argument);
    }
    if (!has_free(s)) return nullptr;
    const auto seq = s.seqs.next(tag);
    if (!seq) return make_unexpected(errc::no_space);
    const bool rendezvous = nic_.rma && size > eager_max_;
    // A small message leaves before any bookkeeping: the request is filled in while it travels.
    const bool injected = !rendezvous && size <= inject_size_ &&
                          ep_.tagged_inject({static_cast<const std::byte*>(data), size},
                                            make_tag(message_kind::data, s.remote_id, *seq, tag), s.peer);
    send_request& r = *take_request(s, coarse_now_);  // has_free made sure
    r.data = static_cast<const std::byte*>(data);
    r.size = size;
    r.user_tag = tag;
    r.seq = *seq;
    r.desc = mh != nullptr ? mh->reg.descriptor() : nullptr;
    r.rendezvous = rendezvous;
    r.written = r.to_write = 0;
    r.stripes = 1;
    r.magic.store(magic_sreq, std::memory_order_relaxed);
    r.active = true;
    if (!r.rendezvous) {
        ++stats_.eager_sends;
        if (injected) {
            ++stats_.injects;
            r.done = true;
        } else {
            r.main.kind = op_kind::send_eager;
            post(r.main);
        }
        if (!unposted_.empty()) post_unposted();  // receives the host posted before this send
        return &r;
    }
    ++stats_.rendezvous_sends;
    r.src_mr = {};
    // The RMA source needs a registration per rail: the host's, or from the caches (start_writes).
    if (mh != nullptr) {
        r.src_mr[0] = &mh->reg.region();
        for (int k = 1; k < rail_count(); ++k)
            if (mh->extra[static_cast<std::size_t>(k - 1)].valid())
                r.src_mr[static_cast<std::size_t>(k)] = &mh->extra[static_cast<std::size_t>(k - 1)].region();
    }
    r.cts_op.kind = op_kind::cts_recv;
    post(r.cts_op);
    r.main.kind = op_kind::send_rts;
    post(r.main);
    if (!unposted_.empty()) post_unposted();
    return &r;
}

auto engine::irecv(receiver& rc, int n, void* const* data, const std::size_t* sizes, const int* tags,
                   memory_handle* const* mh) -> result<recv_request*> {
    if (rc.state != chan_state::ready) return make_unexpected(errc::io_error);
    if (n < 1 || n > max_slots || data == nullptr || sizes == nullptr || tags == nullptr)
        return make_unexpected(errc::invalid_argument);
    for (int i = 0; i < n; ++i) {
        if (data[i] == nullptr && sizes[i] != 0) return make_unexpected(errc::invalid_argument);
        if (sizes[i] > immediate::length_mask) return make_unexpected(errc::invalid_argument);
        if (!covers(mh != nullptr ? mh[i] : nullptr, data[i], sizes[i])) {
            LOOM_WARN("receive {} of {} bytes at {} lies outside its registration", i, sizes[i], data[i]);
            return make_unexpected(errc::invalid_argument);
        }
    }
    if (!has_free(rc)) return nullptr;
    recv_request& r = start_recv(rc, n, n);
    for (int i = 0; i < n; ++i) {
        auto& s = r.slots[static_cast<std::size_t>(i)];
        reset_slot(s, data[i], sizes[i], mh != nullptr ? mh[i] : nullptr);
        s.user_tag = static_cast<std::uint32_t>(tags[i]);
        const auto seq = rc.seqs.next(s.user_tag);
        if (!seq) {
            fail_request(r, errc::no_space);
            return &r;
        }
        s.seq = *seq;
        s.desc = s.host_reg != nullptr ? s.host_reg->reg.descriptor() : nullptr;
        // Posted at the engine's next call (post_unposted): a send the host posts next goes first.
        s.recv_op.kind = op_kind::recv_slot;
        s.recv_op.gen = r.gen;
        s.recv_op.deferred = true;
        unposted_.push_back(&s.recv_op);
    }
    return &r;
}

auto engine::slot_keys(recv_slot& s, int rails) -> bool {
    for (int k = 0; k < rails; ++k) {
        const auto i = static_cast<std::size_t>(k);
        const mr_handle* reg = nullptr;
        if (s.host_reg != nullptr && s.host_reg->magic.load(std::memory_order_relaxed) == magic_mr)
            reg = k == 0 ? &s.host_reg->reg : &s.host_reg->extra[i - 1];
        if (reg == nullptr || !reg->valid() || !reg->contains(s.data, s.capacity)) {
            auto h = rail_cache(k).lookup(std::span<std::byte>{s.data, s.capacity}, full_access);
            if (!h) return false;
            s.tmp[i] = std::move(*h);
            reg = &s.tmp[i];
        }
        auto key = reg->key();
        if (!key) return false;
        s.rkey[i] = *key;
        const bool virt = rail_at(k).virt_addr;
        s.raddr[i] =
            virt ? reinterpret_cast<std::uintptr_t>(s.data) : static_cast<std::uint64_t>(s.data - reg->address());
    }
    s.has_key = true;
    return true;
}

void engine::recycle(request_base& r) noexcept {
    if (r.chan == nullptr || !r.released || ops_busy(r)) return;
    if (r.is_send) {
        auto& q = static_cast<send_request&>(r);
        if (q.rendezvous)
            for (auto& h : q.src) h.release();
        auto* s = static_cast<sender*>(r.chan);
        s->pool.put(q);
    } else {
        auto& q = static_cast<recv_request&>(r);
        for (int i = 0; i < q.n; ++i) {
            auto& s = q.slots[static_cast<std::size_t>(i)];
            if (s.has_key)
                for (auto& h : s.tmp) h.release();
        }
        auto* rc = static_cast<receiver*>(r.chan);
        rc->pool.put(q);
    }
    r.released = false;
}

void engine::cancel_ops(request_base& r) noexcept {
    // Queued submissions are dropped; posted receives are cancelled (their completion, with
    // FI_ECANCELED, recycles the request); posted sends run to completion.
    for_each_op(r, [&](op& o) {
        if (o.deferred) {
            submissions_.drop(o);
            std::erase(unposted_, &o);
        }
        if (o.in_flight && cancellable(o)) (void)ep_.cancel(&o);
    });
}

void engine::release(request_base& r) noexcept {
    if (r.profiled) {
        r.profiled = false;
        if (release_hook_ != nullptr) release_hook_(r);
    }
    r.magic.store(magic_dead, std::memory_order_relaxed);
    r.active = false;
    r.released = true;
    if (!r.done || r.error != errc::success) {
        cancel_ops(r);
        recycle(r);
        return;
    }
    // A request completed normally goes back to its pool later (the next progress call, or when
    // the pool runs dry): the host's next submission is not kept waiting for the bookkeeping.
    if (r.recycle_queued) return;
    r.recycle_queued = true;
    r.recycle_next = recycle_head_;
    recycle_head_ = &r;
}

auto engine::start_recv(receiver& rc, int n, int remaining) noexcept -> recv_request& {
    recv_request& r = *take_request(rc, coarse_now_);  // the caller made sure with has_free
    r.n = n;
    r.remaining = remaining;
    r.magic.store(magic_rreq, std::memory_order_relaxed);
    r.active = true;
    return r;
}

void engine::reset_slot(recv_slot& s, void* data, std::size_t size, memory_handle* host_reg) noexcept {
    s.data = static_cast<std::byte*>(data);
    s.capacity = size;
    s.done = s.rendezvous = s.has_key = false;
    s.received = s.expected = s.landed = 0;
    s.host_reg = host_reg;
}

void engine::drain_recycles() noexcept {
    while (recycle_head_ != nullptr) {
        request_base* r = recycle_head_;
        recycle_head_ = r->recycle_next;
        r->recycle_next = nullptr;
        r->recycle_queued = false;
        recycle(*r);  // no-op when a late completion already recycled it
    }
}

auto engine::complete(request_base& req, std::size_t* sizes, int n_sizes) noexcept -> errc {
    if (!unposted_.empty()) post_unposted();  // every engine call hands queued receives over
    const errc st = req.error;
    if (sizes != nullptr) {
        if (req.is_send) {
            auto& q = static_cast<send_request&>(req);
            // The size the send was posted with, on every path and provider, also when the
            // receiver took fewer bytes (a rendezvous writes only what the receive holds).
            if (n_sizes > 0) sizes[0] = q.size;
        } else {
            auto& rq = static_cast<recv_request&>(req);
            for (int i = 0; i < rq.n && i < n_sizes; ++i) sizes[i] = rq.slots[static_cast<std::size_t>(i)].received;
        }
    }
    release(req);
    return st;
}

auto engine::iflush(receiver& rc, int n, void* const* data, const std::size_t* sizes, memory_handle* const* mh,
                    bool all) -> result<recv_request*> {
    if (!unposted_.empty()) post_unposted();  // the receives being flushed completed; others go now too
    if (rc.state != chan_state::ready) return make_unexpected(errc::io_error);
    if (n < 1 || n > max_slots || data == nullptr || sizes == nullptr) return make_unexpected(errc::invalid_argument);
    std::array<bool, max_slots> want{};
    int reads = 0;
    for (int i = 0; i < n; ++i) {
        memory_handle* m = mh != nullptr ? mh[i] : nullptr;
        if (!covers(m, data[i], sizes[i])) return make_unexpected(errc::invalid_argument);
        const bool needs = sizes[i] > 0 && m != nullptr && (all || m->device);
        want[static_cast<std::size_t>(i)] = needs;
        reads += needs ? 1 : 0;
    }
    if (reads == 0) return nullptr;
    if (!supports_flush_reads(nic_)) return make_unexpected(errc::not_supported);
    if (flush_buf_.empty()) {  // first flush: a landing area and this endpoint in its own AV
        flush_buf_.resize(std::size_t{8} * max_slots);
        auto reg = cache_->lookup(std::span<std::byte>{flush_buf_}, full_access);
        if (!reg) {
            flush_buf_.clear();
            return std::unexpected(reg.error());
        }
        auto me = insert_rail_peer(0, self_);
        if (!me) {
            flush_buf_.clear();
            return std::unexpected(me.error());
        }
        flush_reg_ = std::move(*reg);
        self_addr_ = *me;
    }
    if (!has_free(rc)) return make_unexpected(errc::again);
    recv_request& r = start_recv(rc, n, reads);
    for (int i = 0; i < n; ++i) {
        auto& s = r.slots[static_cast<std::size_t>(i)];
        reset_slot(s, data[i], sizes[i], mh != nullptr ? mh[i] : nullptr);
        s.done = !want[static_cast<std::size_t>(i)];
        if (s.done) continue;
        if (!slot_keys(s, 1)) {  // rail 0's key and RMA address of the buffer
            fail_request(r, errc::io_error);
            return &r;
        }
        s.recv_op.kind = op_kind::flush_read;
        ++stats_.flush_reads;
        post(s.recv_op);
    }
    return &r;
}

}  // namespace loom::plugins
