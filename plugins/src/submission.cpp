// Submission: every operation kind handed to the provider; FI_EAGAIN defers and retries it
// until LOOM_EAGAIN_TIMEOUT_MS.
#include "engine_internals.hpp"

#include <loom/gpu/cuda.hpp>
#include <loom/plugins/log.hpp>

#include <loom/rma.hpp>

#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <algorithm>
#include <cstring>

namespace loom::plugins {

using namespace engine_detail;
using match_bits::make_tag;

// ---------------------------------------------------------------- submission
namespace {

auto code(const void_result& r) noexcept -> int { return r ? 0 : -r.error().value(); }

}  // namespace

auto engine::submit(op& o) noexcept -> int {
    switch (o.kind) {
        case op_kind::send_eager: {
            auto& r = *static_cast<send_request*>(o.owner);
            return code(ep_.tagged_send({r.data, r.size},
                                        make_tag(message_kind::data, r.chan->remote_id, r.seq, r.user_tag),
                                        r.chan->peer, r.desc, &o));
        }
        case op_kind::send_rts: {
            // No payload: the size travels as immediate data, so nothing lands in the user's buffer.
            auto& r = *static_cast<send_request*>(o.owner);
            const int rc = code(ep_.tagged_injectdata(
                {}, make_tag(message_kind::rendezvous_request, r.chan->remote_id, r.seq, r.user_tag), r.size,
                r.chan->peer));
            return rc == 0 ? 1 : rc;
        }
        case op_kind::cts_recv: {
            auto& r = *static_cast<send_request*>(o.owner);
            return code(ep_.tagged_recv(r.cts, make_tag(message_kind::clear_to_send, r.chan->id, r.seq, r.user_tag), 0,
                                        fabric_addrs::unspecified, nullptr, &o));
        }
        case op_kind::recv_slot: {
            auto& r = *static_cast<recv_request*>(o.owner);
            return submit_recv_slot(r, r.slots[o.slot], o);
        }
        case op_kind::cts_send: {
            auto& r = *static_cast<recv_request*>(o.owner);
            auto& s = r.slots[o.slot];
            return submit_control(o, {s.cts.data(), s.cts_len},
                                  make_tag(message_kind::clear_to_send, r.chan->remote_id, s.seq, s.user_tag),
                                  r.chan->peer);
        }
        case op_kind::rma_write:
        case op_kind::foreign:
        case op_kind::flush_read: return submit_one_sided_op(o);
        case op_kind::listen_recv:
        case op_kind::connect_send:
        case op_kind::accept_recv:
        case op_kind::accept_send:
        case op_kind::liveness_recv:
        case op_kind::liveness_any: return submit_connection_op(o);
    }
    return -FI_EINVAL;
}

auto engine::submit_control(op& o, std::span<const std::byte> msg, std::uint64_t tag, fabric_addr to) noexcept -> int {
    if (msg.size() <= inject_size_) {
        const int rc = code(ep_.tagged_inject(msg, tag, to));
        return rc == 0 ? 1 : rc;  // 1: complete already
    }
    return code(ep_.tagged_send(msg, tag, to, nullptr, &o));
}

auto engine::submit_one_sided_op(op& o) noexcept -> int {
    switch (o.kind) {
        case op_kind::rma_write: {
            auto& r = *static_cast<send_request*>(o.owner);
            const std::size_t k = o.slot;
            if (r.src_mr[k] == nullptr) return -FI_EINVAL;
            const std::size_t at = r.stripe_off[k] + r.stripe_done[k];
            const remote_memory remote{r.remote_addr[k] + at, r.remote_key[k], r.chunk[k]};
            return code(rma::write_data_to(rail_ep(static_cast<int>(k)), {r.data + at, r.chunk[k]}, *r.src_mr[k],
                                           r.chan->rail_peer[k], remote, r.imm_base | r.chunk[k], &o));
        }
        case op_kind::foreign: {
            // A layer above the engine defines what its operation submits, to the channel's peer.
            auto& f = static_cast<foreign_op&>(o);
            if (f.rail < 0 || f.rail >= f.chan->rails) return -FI_EINVAL;
            const int rc = f.submit_with(f, rail_ep(f.rail), f.chan->rail_peer[static_cast<std::size_t>(f.rail)]);
            if (rc >= 0) ++rail_at(f.rail).one_sided;
            return rc;
        }
        case op_kind::flush_read: {
            auto& r = *static_cast<recv_request*>(o.owner);
            auto& s = r.slots[o.slot];
            const std::size_t len = std::min<std::size_t>(s.capacity, 8);
            const remote_memory remote{s.raddr[0], s.rkey[0], len};
            return code(rma::read_to(ep_, {flush_buf_.data() + 8 * std::size_t{o.slot}, len}, flush_reg_.region(),
                                     self_addr_, remote, &o));
        }
        default: return -FI_EINVAL;
    }
}

auto engine::submit_connection_op(op& o) noexcept -> int {
    switch (o.kind) {
        case op_kind::listen_recv: {
            auto& l = *static_cast<listener*>(o.owner);
            return code(ep_.tagged_recv(l.buffer, make_tag(message_kind::control, l.id, 0, 0), 0,
                                        fabric_addrs::unspecified, nullptr, &o));
        }
        case op_kind::connect_send: {
            auto& s = *static_cast<sender*>(o.owner);
            return submit_control(o, {s.connect_msg.data(), s.connect_len},
                                  make_tag(message_kind::control, s.listen_id, 0, 0), s.peer);
        }
        case op_kind::accept_recv: {
            auto& s = *static_cast<sender*>(o.owner);
            return code(ep_.tagged_recv(s.accept_msg, make_tag(message_kind::control, s.id, 0, 0), 0,
                                        fabric_addrs::unspecified, nullptr, &o));
        }
        case op_kind::accept_send: {
            auto& r = *static_cast<receiver*>(o.owner);
            return submit_control(o, {r.accept_msg.data(), r.accept_len},
                                  make_tag(message_kind::control, r.remote_id, 0, 0), r.peer);
        }
        case op_kind::liveness_recv: {
            auto& c = *static_cast<channel_base*>(o.owner);
            return code(ep_.tagged_recv(c.live->buffer, make_tag(message_kind::control, c.id, liveness_sequence, 0),
                                        0xffffffffU, fabric_addrs::unspecified, nullptr, &o));
        }
        case op_kind::liveness_any: {
            // Any channel's pings and pongs: the channel is in the tag, the user tag says the kind.
            constexpr auto any_channel = std::uint64_t{match_bits::max_channel_id} << match_bits::channel_shift;
            return code(main_->live.end.ep.tagged_recv(
                live_bufs_[o.slot], make_tag(message_kind::control, 0, liveness_sequence, 0), any_channel | 0xffffffffU,
                fabric_addrs::unspecified, nullptr, &o));
        }
        default: return -FI_EINVAL;
    }
}

auto engine::submit_recv_slot(recv_request& r, recv_slot& s, op& o) noexcept -> int {
    const bool small = s.capacity < scratch_size;
    std::span<std::byte> buf = small ? std::span<std::byte>{s.scratch} : std::span<std::byte>{s.data, s.capacity};
    const auto tag = make_tag(message_kind::data, r.chan->id, s.seq, s.user_tag);
    void_result rc;
    if (buf.size() < eager_max_ && !discard_.empty()) {
        // Pad the receive to the eager limit with a shared discard area: an eager message
        // larger than this receive then lands whole (the excess in the discard area) and
        // the provider never truncates (several providers get truncation wrong).
        const std::array<::iovec, 2> iov{{{buf.data(), buf.size()}, {discard_.data(), eager_max_ - buf.size()}}};
        void* const descs[2] = {small ? nullptr : s.desc, discard_reg_.descriptor()};
        const bool any_desc = descs[0] != nullptr || descs[1] != nullptr;
        rc = ep_.tagged_recvv(iov, any_desc ? std::span<void* const>{descs} : std::span<void* const>{}, tag,
                              match_bits::rendezvous_ignore, fabric_addrs::unspecified, &o);
    } else {
        rc = ep_.tagged_recv(buf, tag, match_bits::rendezvous_ignore, fabric_addrs::unspecified,
                             small ? nullptr : s.desc, &o);
    }
    return rc ? 0 : -rc.error().value();
}

void engine::post(op& o) noexcept {
    if (request_base* r = owner_request(o)) o.gen = r->gen;
    o.deferred = false;
    settle(o, submit(o));
}

void engine::settle(op& o, int rc) noexcept {
    switch (submissions_.settle(o, rc)) {
        case settled::in_flight: return;
        case settled::complete:  // injected: nothing will complete
            if (o.kind == op_kind::foreign)
                end_foreign(static_cast<foreign_op&>(o), {});
            else if (request_base* r = owner_request(o))
                recycle(*r);
            return;
        case settled::deferred: stats_.eagain_retries = submissions_.refusals(); return;
        case settled::failed: fail_op(o, rc); return;
    }
}

void engine::fail_op(op& o, int rc) noexcept {
    // A submission refused because the provider cannot reach the peer fails its channels too.
    channel_base* lost = channel_lost_by(o, std::error_code(-rc, fabric_category()));
    end_failed_op(o, rc);
    declare_unreachable(lost);
}

void engine::end_failed_op(op& o, int rc) noexcept {
    if (o.kind == op_kind::foreign)
        return end_foreign(static_cast<foreign_op&>(o), std::error_code(-rc, fabric_category()));
    request_base* r = owner_request(o);
    channel_base* c = r != nullptr ? r->chan : owner_channel(o);
    LOOM_WARN("{} to {}: {}", rc == -FI_EAGAIN ? "gave up retrying a submission" : "submission failed",
              c != nullptr ? std::string_view(c->peer_name) : std::string_view("an unknown peer"),
              rc == -FI_EAGAIN ? "provider busy beyond LOOM_EAGAIN_TIMEOUT_MS" : fi_strerror(-rc));
    if (r != nullptr) {
        fail_request(*r, errc::io_error);
        recycle(*r);
    } else if (c != nullptr) {
        c->state = chan_state::failed;
    }
}

void engine::post_foreign(foreign_op& o) noexcept {
    o.kind = op_kind::foreign;
    o.owner = nullptr;
    if (o.chan->foreign_in_flight++ == 0) o.chan->foreign_since = coarse_now_;
    post(o);
}

void engine::end_foreign(foreign_op& o, std::error_code why) noexcept {
    o.in_flight = false;
    o.deferred = false;
    if (o.chan->foreign_in_flight > 0) --o.chan->foreign_in_flight;
    o.on_end(o, why);
}

}  // namespace loom::plugins
