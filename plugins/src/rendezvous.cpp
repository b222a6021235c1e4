// The rendezvous: RTS in, CTS out, RMA writes striped over the rails, completion by the
// immediate data of the writes.
#include "engine_internals.hpp"

#include <loom/gpu/cuda.hpp>
#include <loom/plugins/log.hpp>

#include <loom/plugins/stripe_plan.hpp>

#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <algorithm>
#include <cstring>

namespace loom::plugins {

using namespace engine_detail;
using match_bits::make_tag;

void engine::on_send_op(send_request& r, op& o, const completion_event& ev) noexcept {
    if (ev.has_error()) {
        if (!r.done) {
            LOOM_WARN("send to {} failed: {}", r.chan->peer_name,
                      ev.error_text.empty() ? ev.error.message() : ev.error_text);
            fail_request(r, errc::io_error);
        }
        return;
    }
    switch (o.kind) {
        case op_kind::send_eager: r.done = true; break;
        case op_kind::send_rts: break;
        case op_kind::cts_recv: {
            if (r.done) break;  // failed meanwhile (its peer closed or was lost): nothing more is written
            auto cts = decode_cts({r.cts.data(), std::min(ev.bytes_transferred, r.cts.size())});
            if (!cts || cts->rails > r.chan->rails) {
                LOOM_WARN("malformed clear-to-send from {}", r.chan->peer_name);
                fail_request(r, errc::io_error);
                return;
            }
            const std::uint64_t capacity = cts->capacity;
            const auto keys = static_cast<std::size_t>(cts->rails);
            r.imm_base = immediate::make_base(cts->target);
            for (std::size_t k = 0; k < keys; ++k) {
                r.remote_addr[k] = cts->rail[k].address;
                r.remote_key[k] = cts->rail[k].key;
            }
            r.stripes = cts->rails;
            r.to_write = std::min<std::uint64_t>(r.size, capacity);
            r.written = 0;
            if (r.to_write == 0)
                r.done = true;
            else
                start_writes(r);
            break;
        }
        case op_kind::rma_write: {
            const std::size_t k = o.slot;
            r.stripe_done[k] += r.chunk[k];
            r.written += r.chunk[k];
            if (r.written >= r.to_write)
                r.done = true;
            else if (r.stripe_done[k] < r.stripe_len[k])
                post_write(r, static_cast<int>(k));
            break;
        }
        default: break;
    }
}

void engine::start_writes(send_request& r) noexcept {
    // Stripe over the rails both sides have when every rail gets a worthwhile share.
    const auto plan = plan_stripes(r.to_write, std::min(r.stripes, r.chan->rails));
    const int used = plan.count;
    for (int k = 0; k < used; ++k) {
        const auto i = static_cast<std::size_t>(k);
        r.stripe_off[i] = plan.stripes[i].offset;
        r.stripe_len[i] = plan.stripes[i].length;
        r.stripe_done[i] = 0;
        if (r.src_mr[i] == nullptr) {  // the host registered on rail 0 only (or not at all)
            auto h = rail_cache(k).lookup(std::span<std::byte>{const_cast<std::byte*>(r.data), r.size}, full_access);
            if (!h) {
                LOOM_WARN("registering a send buffer on rail {} failed: {}", k, h.error().message());
                fail_request(r, errc::io_error);
                return;
            }
            r.src[i] = std::move(*h);
            r.src_mr[i] = &r.src[i].region();
        }
    }
    for (int k = 0; k < used; ++k) post_write(r, k);
}

void engine::post_write(send_request& r, int k) noexcept {
    const auto i = static_cast<std::size_t>(k);
    const std::size_t max = rail_at(k).max_write;
    r.chunk[i] = std::min(r.stripe_len[i] - r.stripe_done[i], max);
    r.write_ops[i].kind = op_kind::rma_write;
    r.write_ops[i].slot = static_cast<std::uint8_t>(k);
    ++rail_at(k).writes;
    post(r.write_ops[i]);
}

void engine::on_recv_op(recv_request& r, op& o, const completion_event& ev) noexcept {
    auto& s = r.slots[o.slot];
    if (o.kind == op_kind::flush_read) {
        if (ev.has_error()) {
            LOOM_WARN("flush read failed: {}", ev.error_text.empty() ? ev.error.message() : ev.error_text);
            fail_request(r, errc::io_error);
        } else {
            finish_slot(r, s);
        }
        return;
    }
    if (o.kind == op_kind::cts_send) {
        if (ev.has_error()) fail_request(r, errc::io_error);
        return;
    }
    if (s.done) return;
    const bool small = s.capacity < scratch_size;
    if (ev.has_error()) {
        if (ev.error == make_error_code(errc::truncated)) {
            // The sender sent more than this receive holds: keep what fits (hosts may post a
            // send larger than its receive and expect the data truncated).
            ++stats_.truncated;
            if (small) std::memcpy(s.data, s.scratch.data(), s.capacity);
            s.received = s.capacity;
            finish_slot(r, s);
            return;
        }
        if (ev.error != make_error_code(errc::canceled))
            LOOM_WARN("receive from {} failed: {}", r.chan->peer_name,
                      ev.error_text.empty() ? ev.error.message() : ev.error_text);
        fail_request(r, errc::io_error);
        return;
    }
    if (match_bits::kind_of(ev.tag) == message_kind::data) {
        land(r, s, ev.bytes_transferred);
        return;
    }
    // Rendezvous request (no payload, the size in the immediate data): answer with where the
    // data goes.
    if (ev.bytes_transferred != 0 || !ev.flags.has(op_flag::remote_cq_data)) {
        LOOM_WARN("malformed rendezvous request from {}", r.chan->peer_name);
        fail_request(r, errc::io_error);
        return;
    }
    const std::uint64_t total = ev.data;
    s.rendezvous = true;
    s.expected = std::min<std::uint64_t>(total, s.capacity);
    s.landed = 0;
    if (s.expected != 0 && !slot_keys(s, r.chan->rails)) {
        LOOM_WARN("registering a {}-byte receive buffer for the rendezvous failed", s.capacity);
        fail_request(r, errc::io_error);
        return;
    }
    clear_to_send cts{
        .target = {.channel = r.chan->id, .request = static_cast<receiver*>(r.chan)->pool.index_of(r), .slot = o.slot},
        .capacity = std::min<std::uint64_t>(s.capacity, immediate::length_mask),
        .rails = r.chan->rails};
    for (std::size_t k = 0; k < static_cast<std::size_t>(cts.rails); ++k) cts.rail[k] = {s.raddr[k], s.rkey[k]};
    const auto len = encode(cts, s.cts);  // fits: cts_max_size bytes, rails and capacity in range
    if (!len) {
        fail_request(r, errc::io_error);
        return;
    }
    s.cts_len = *len;
    s.cts_op.kind = op_kind::cts_send;
    s.cts_op.slot = o.slot;
    post(s.cts_op);
    if (s.expected == 0) {
        s.received = 0;
        finish_slot(r, s);
    }
}

auto engine::writes_into(const receiver& rc) noexcept -> write_tally {
    write_tally t;
    for (const auto& r : rc.pool) {
        if (!r.active) continue;
        for (int i = 0; i < r.n; ++i) {
            const auto& s = r.slots[static_cast<std::size_t>(i)];
            t.landed += s.landed;
            t.awaited = t.awaited || (s.rendezvous && !s.done && s.landed < s.expected);
        }
    }
    return t;
}

auto engine::awaits_writes(const receiver& rc) const noexcept -> bool { return writes_into(rc).awaited; }

void engine::on_remote_write(std::uint64_t imm) noexcept {
    if (immediate::is_user_value(imm)) {
        if (remote_data_hook_ != nullptr) remote_data_hook_(remote_data_context_, immediate::user_value_of(imm));
        return;
    }
    const auto at = immediate::target_of(imm);
    auto it = receivers_.find(at.channel);
    if (it == receivers_.end()) return;  // a late write to a closed channel
    auto& rc = *it->second;
    if (at.request >= rc.pool.size()) return;  // not a request of ours
    auto& r = rc.pool.at(at.request);
    auto& s = r.slots[at.slot];
    if (r.magic.load(std::memory_order_relaxed) != magic_rreq || !s.rendezvous || s.done) return;
    rc.live->answered = true;  // its writes are landing
    s.landed += immediate::length_of(imm);
    if (s.landed >= s.expected) {
        s.received = s.expected;
        finish_slot(r, s);
    }
}

}  // namespace loom::plugins
