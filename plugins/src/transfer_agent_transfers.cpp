// Transfers: a list of segments checked once at prepare(), cut into pieces of at most
// transfer_piece_max, posted as far as the network takes them (the rest by later pumps), and
// — for a write with a notification — the notification sent only after every piece reported
// delivery at the peer.
#include "transfer_agent_impl.hpp"

#include <algorithm>
#include <utility>

namespace loom::plugins {
namespace {

auto inside(std::uint64_t start, std::uint64_t length, std::uint64_t base, std::uint64_t size) -> bool {
    return start >= base && length <= size && start - base <= size - length;
}

}  // namespace

auto transfer_agent::prepare(transfer_op op, std::string_view peer, std::span<const segment> segments)
    -> result<transfer*> {
    if ((op != transfer_op::read && op != transfer_op::write) || segments.empty())
        return make_unexpected(errc::invalid_argument);
    std::lock_guard lock(impl_->mu);
    if (impl_->find_peer(peer) == nullptr && peer != impl_->opts.name) return make_unexpected(errc::no_entry);
    auto t = std::make_unique<transfer>();
    t->op = op;
    t->peer = std::string(peer);
    for (const auto& s : segments) {
        auto* l = const_cast<local_region*>(s.local_registration);
        auto* r = const_cast<remote_region*>(s.remote_registration);
        if (!impl_->locals.contains(l) || !impl_->remotes.contains(r) || r->peer != peer || s.local.empty() ||
            !inside(reinterpret_cast<std::uintptr_t>(s.local.data()), s.local.size(),
                    reinterpret_cast<std::uintptr_t>(l->range.data()), l->range.size()) ||
            !inside(s.remote_address, s.local.size(), r->data.address, r->data.length))
            return make_unexpected(errc::invalid_argument);
        for (std::size_t at = 0; at < s.local.size(); at += transfer_piece_max) {
            const std::size_t n = std::min(transfer_piece_max, s.local.size() - at);
            t->pieces.push_back({.local = s.local.subspan(at, n),
                                 .mh = l->mh,
                                 .key = r->key,
                                 .offset = s.remote_address - r->data.address + at});
        }
    }
    for (auto& pc : t->pieces) pc.owner = t.get();
    impl_->transfers.insert(t.get());
    return t.release();
}

auto transfer_agent::post(transfer* t, std::optional<std::string_view> notification) -> result<transfer_state> {
    {
        std::lock_guard lock(impl_->mu);
        if (!impl_->transfers.contains(t)) return make_unexpected(errc::invalid_argument);
        if (t->in_flight || t->outstanding > 0) return make_unexpected(errc::busy);  // or a piece has not ended
        auto* p = impl_->find_peer(t->peer);
        if (p == nullptr) return make_unexpected(errc::not_connected);
        if (p->failure) return std::unexpected(p->failure);
        t->notify = false;
        if (notification) {
            if (auto r = encode_notification(impl_->opts.name, *notification, t->notification); !r)
                return std::unexpected(r.error());
            t->notify = true;
        }
        t->next = 0;
        t->outstanding = 0;
        t->error = {};
        t->in_flight = true;
        impl_->active.push_back(t);
        impl_->pump(*t);
    }
    return check(t);
}

auto transfer_agent::check(transfer* t) -> result<transfer_state> {
    // An ended transfer reports how it ended until it is posted again, whichever call's
    // progress ended it.
    auto ended = [t]() -> result<transfer_state> {
        if (t->error) return std::unexpected(t->error);
        return transfer_state::done;
    };
    {
        std::lock_guard lock(impl_->mu);
        if (!impl_->transfers.contains(t)) return make_unexpected(errc::invalid_argument);
        if (!t->in_flight) return ended();
    }
    if (!impl_->opts.progress_thread) progress();
    std::lock_guard lock(impl_->mu);
    if (t->in_flight) return transfer_state::in_progress;
    return ended();
}

auto transfer_agent::release(transfer* t) -> void_result {
    std::lock_guard lock(impl_->mu);
    if (!impl_->transfers.contains(t)) return make_unexpected(errc::invalid_argument);
    impl_->transfers.erase(t);
    if (t->in_flight || t->outstanding > 0) {
        // What is posted still ends (and may still land); nothing more is posted, no
        // notification is sent, and the last completion frees it.
        t->abandoned = true;
        t->next = t->pieces.size();
        t->notify = false;
        impl_->abandoned.insert(t);
        return {};
    }
    // A transfer that ended inside post() (or since the last sweep) is still listed as active.
    std::erase(impl_->active, t);
    delete t;
    return {};
}

void transfer_agent::impl::pump_active() {
    for (transfer* t : active) pump(*t);  // pump adds and removes no active transfer
    std::erase_if(active, [this](transfer* t) {
        if (t->in_flight) return false;
        if (t->abandoned) {
            if (t->outstanding > 0) return false;  // a piece has not ended
            abandoned.erase(t);
            delete t;
        }
        return true;
    });
}

void transfer_agent::impl::pump(transfer& t) {
    if (!t.in_flight) return;
    auto* p = find_peer(t.peer);
    if (p == nullptr && !t.error) t.error = make_error_code(errc::not_connected);
    if (p != nullptr && p->failure && !t.error) t.error = p->failure;
    if (t.error || t.abandoned) t.next = t.pieces.size();  // what is posted still ends; nothing more goes
    while (p != nullptr && t.next < t.pieces.size() && p->connected) {
        piece& pc = t.pieces[t.next];
        const auto r = t.op == transfer_op::write ? mgr->write(p->tx, pc.local, pc.mh, pc.key, pc.offset, std::nullopt,
                                                               &pc, write_completion::delivered)
                                                  : mgr->read(p->tx, pc.local, pc.mh, pc.key, pc.offset, &pc);
        if (!r && r.error() == make_error_code(errc::again)) break;
        if (!r) {
            t.error = r.error();
            t.next = t.pieces.size();
            break;
        }
        ++t.next;
        ++t.outstanding;
    }
    if (t.next < t.pieces.size() || t.outstanding > 0) return;
    if (t.notify && !t.error && p != nullptr) {
        auto r = mgr->send_record(p->tx, notification_record, as_bytes_of(t.notification));
        if (!r && r.error() == make_error_code(errc::again)) return;  // the next pump tries again
        if (!r)
            t.error = r.error();
        else
            (void)mgr->flush(p->tx);
        t.notify = false;
    }
    t.in_flight = false;
}

}  // namespace loom::plugins
