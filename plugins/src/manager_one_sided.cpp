// Memory and one-sided operations: registrations and their remote keys (one per rail), RMA
// write (with a user's immediate data) and read, striped over the rails when large, native
// 64-bit atomics — each a foreign operation the engine submits and defers like its own, ended
// into an event.
#include "endpoint_manager_impl.hpp"

#include <loom/plugins/stripe_plan.hpp>

#include <loom/atomic.hpp>
#include <loom/gpu/cuda.hpp>
#include <loom/provider_facts.hpp>
#include <loom/rma.hpp>

#include <algorithm>

namespace loom::plugins {

using op_what = one_sided_op::what;

auto endpoint_manager::impl::check_one_sided(const send_ep& s, const memory_key& key, std::uint64_t offset,
                                             std::size_t length) -> void_result {
    if (!eng->nic_info().rma) return make_unexpected(errc::not_supported);
    if (s.state == link_state::connecting) return make_unexpected(errc::not_connected);
    if (s.state != link_state::ready || s.chan->state != chan_state::ready)
        return make_unexpected(errc::connection_aborted);
    if (key.rails < 1 || key.rails > max_rails || length == 0 || offset > key.length || length > key.length - offset)
        return make_unexpected(errc::invalid_argument);
    if (s.ops_in_flight == s.ops.size()) return make_unexpected(errc::again);
    return {};
}

auto endpoint_manager::impl::take_op(send_ep& s, op_what what, const memory_key& key, int rail, std::uint64_t offset,
                                     std::size_t length) -> one_sided_op* {
    auto o = std::ranges::find_if(s.ops, [](const one_sided_op& x) { return !x.used; });
    if (o == s.ops.end()) return nullptr;
    const auto& k = key.rail[static_cast<std::size_t>(rail)];
    o->op = what;
    o->mgr = this;
    o->ep = &s;
    o->chan = s.chan;
    o->rail = rail;
    o->remote = {.addr = k.base + offset, .key = k.key, .length = length};
    o->submit_with = &impl::submit_one_sided;
    o->on_end = &impl::end_one_sided;
    o->immediate.reset();
    o->delivered = false;
    o->answered_by_peer = what != op_what::write;  // reads and atomics; a write only once delivered
    o->previous = nullptr;
    o->context = nullptr;
    o->local = {};
    o->local_mr = &s.ops_mh->reg.region();
    o->lead = &*o;
    o->pieces_left = 1;
    o->first_error = {};
    o->reported = false;
    o->used = true;
    ++s.ops_in_flight;
    return &*o;
}

auto endpoint_manager::impl::post_rma(send_ep& s, op_what what, std::span<std::byte> local, memory_handle& mh,
                                      const memory_key& key, std::uint64_t offset, const rma_settings& how)
    -> void_result {
    // Immediate data must announce the whole write, so such a write stays on one rail; the
    // pieces of a striped one take free slots (fewer rails when fewer are free).
    const std::size_t free = s.ops.size() - s.ops_in_flight;
    const int rails = how.immediate
                          ? 1
                          : static_cast<int>(std::min<std::size_t>(
                                {static_cast<std::size_t>(s.chan->rails), static_cast<std::size_t>(key.rails), free}));
    const stripe_plan plan = plan_stripes(local.size(), rails);
    std::array<one_sided_op*, max_rails> pieces{};
    for (int k = 0; k < plan.count; ++k) {
        const stripe& st = plan.stripes[static_cast<std::size_t>(k)];
        one_sided_op* o = take_op(s, what, key, k, offset + st.offset, st.length);
        o->local = local.subspan(st.offset, st.length);
        o->local_mr = k == 0 ? &mh.reg.region() : &mh.extra[static_cast<std::size_t>(k - 1)].region();
        o->immediate = how.immediate;
        o->delivered = how.delivered;
        o->answered_by_peer = what != op_what::write || how.delivered;
        o->context = how.context;
        o->lead = pieces[0] != nullptr ? pieces[0] : o;
        pieces[static_cast<std::size_t>(k)] = o;
    }
    pieces[0]->pieces_left = plan.count;  // before any is posted: one may end at once
    for (int k = 0; k < plan.count; ++k) eng->post_foreign(*pieces[static_cast<std::size_t>(k)]);
    return {};
}

auto endpoint_manager::impl::submit_one_sided(foreign_op& f, endpoint& ep, fabric_addr peer) noexcept -> int {
    auto& o = static_cast<one_sided_op&>(f);
    void_result r;
    switch (o.op) {
        case op_what::write:
            if (o.delivered)
                r = rma::write_to<operation_defaults::inherit>(ep, o.local, *o.local_mr, peer, o.remote,
                                                               op_flag::delivery_complete, &o);
            else if (o.immediate)
                r = rma::write_data_to(ep, o.local, *o.local_mr, peer, o.remote,
                                       immediate::make_user_value(*o.immediate), &o);
            else
                r = rma::write_to(ep, o.local, *o.local_mr, peer, o.remote, &o);
            break;
        case op_what::read: r = rma::read_to(ep, o.local, *o.local_mr, peer, o.remote, &o); break;
        case op_what::fetch_add:
            r = atomic::fetch_add_to<std::uint64_t>(ep, o.operand, &o.result, o.local_mr, o.local_mr, peer, o.remote,
                                                    &o);
            break;
        case op_what::compare_swap:
            r = atomic::cas_to<std::uint64_t>(ep, o.compare, o.local_mr, o.operand, o.local_mr, &o.result, o.local_mr,
                                              peer, o.remote, &o);
            break;
    }
    return r ? 0 : -r.error().value();
}

namespace {
auto completion_kind(op_what w) noexcept -> event_kind {
    static constexpr event_kind kinds[] = {event_kind::write_complete, event_kind::read_complete,
                                           event_kind::atomic_complete, event_kind::atomic_complete};
    return kinds[static_cast<int>(w)];
}
}  // namespace

void endpoint_manager::impl::end_one_sided(foreign_op& f, std::error_code why) noexcept {
    auto& o = static_cast<one_sided_op&>(f);
    one_sided_op& lead = *o.lead;
    if (why && !lead.first_error) lead.first_error = why;
    if (!why && o.previous != nullptr) *o.previous = o.result;
    auto release = [](one_sided_op& x) {
        x.used = false;
        --x.ep->ops_in_flight;
    };
    if (&o != &lead) release(o);
    if (--lead.pieces_left > 0) return;
    release(lead);
    if (!lead.reported)
        lead.mgr->emit({.kind = completion_kind(lead.op),
                        .error = lead.first_error,
                        .context = lead.context,
                        .sender = lead.ep->id});
}

void endpoint_manager::impl::report_one_sided(send_ep& s, errc why) {
    for (auto& o : s.ops) {
        if (!o.used || o.lead != &o || o.reported) continue;
        o.reported = true;
        o.previous = nullptr;  // the caller's result may be gone before the provider ends it
        emit({.kind = completion_kind(o.op), .error = make_error_code(why), .context = o.context, .sender = s.id});
    }
}

void endpoint_manager::impl::on_remote_data(void* self, std::uint64_t value) noexcept {
    static_cast<impl*>(self)->emit({.kind = event_kind::remote_write, .value = value});
}

// ---------------------------------------------------------------- the public face
auto endpoint_manager::register_memory(std::span<std::byte> buffer, gpu::memory_kind kind) -> result<memory_handle*> {
    if (buffer.empty() || buffer.data() == nullptr) return make_unexpected(errc::invalid_argument);
    std::lock_guard lock(impl_->eng->mutex());
    result<memory_handle*> m = make_unexpected(errc::not_supported);
    if (kind == gpu::memory_kind::host) {
        m = impl_->eng->register_memory(buffer.data(), buffer.size());
    } else if (kind == gpu::memory_kind::cuda) {
        auto where = locate_cuda_memory(*impl_->eng, buffer.data(), buffer.size());
        if (!where) return std::unexpected(where.error());
        m = impl_->eng->register_memory(buffer.data(), buffer.size(), &*where);
    }
    if (m) impl_->registrations_.push_back(*m);
    return m;
}

auto endpoint_manager::supports_memory(gpu::memory_kind kind) const -> bool {
    if (kind == gpu::memory_kind::host) return true;
    return kind == gpu::memory_kind::cuda && impl_->eng->hmem() && gpu::cuda_driver::instance().has_value();
}

void endpoint_manager::deregister(memory_handle* mh) noexcept {
    std::lock_guard lock(impl_->eng->mutex());
    if (!impl_->eng->is_live(mh) || std::erase(impl_->registrations_, mh) == 0) return;  // stale, or not the caller's
    impl_->eng->deregister(*mh);
}

auto endpoint_manager::remote_key_of(const memory_handle* mh) const -> result<remote_key_bytes> {
    std::lock_guard lock(impl_->eng->mutex());
    if (!impl_->eng->is_live(mh)) return make_unexpected(errc::invalid_argument);
    auto k = impl_->eng->export_key(*mh);
    if (!k) return std::unexpected(k.error());
    return encode(*k);
}

auto endpoint_manager::rail_count() const noexcept -> int { return impl_->eng->rail_count(); }

auto endpoint_manager::one_sided_operations(int rail) const -> std::uint64_t {
    std::lock_guard lock(impl_->eng->mutex());
    return impl_->eng->rail_one_sided(rail);
}

auto endpoint_manager::peers_declared_dead() const -> std::uint64_t {
    std::lock_guard lock(impl_->eng->mutex());
    return impl_->eng->stats().peers_declared_dead;
}

auto endpoint_manager::supports_atomics() const noexcept -> bool {
    return impl_->eng->atomics() && !provider_facts_for(impl_->eng->nic_info().provider).broken_fetch_atomics;
}

auto endpoint_manager::write(send_endpoint_id ep, std::span<const std::byte> local, memory_handle* mh,
                             std::span<const std::byte> remote_key, std::uint64_t offset,
                             std::optional<std::uint64_t> immediate, void* context, write_completion completion)
    -> void_result {
    auto key = decode_remote_key(remote_key);
    if (!key) return make_unexpected(errc::invalid_argument);
    return write(ep, local, mh, *key, offset, immediate, context, completion);
}

auto endpoint_manager::write(send_endpoint_id ep, std::span<const std::byte> local, memory_handle* mh,
                             const memory_key& remote_key, std::uint64_t offset, std::optional<std::uint64_t> immediate,
                             void* context, write_completion completion) -> void_result {
    const bool delivered = completion == write_completion::delivered;
    std::lock_guard lock(impl_->eng->mutex());
    send_ep* s = impl_->lookup(ep);
    if (s == nullptr || mh == nullptr || !impl_->eng->covers(mh, local.data(), local.size()) ||
        (immediate && (*immediate > immediate::max_user_value || delivered)) ||
        (completion != write_completion::transmitted && !delivered))
        return make_unexpected(errc::invalid_argument);
    if (auto ok = impl_->check_one_sided(*s, remote_key, offset, local.size()); !ok) return ok;
    // Only read by the write.
    const std::span<std::byte> source{const_cast<std::byte*>(local.data()), local.size()};
    return impl_->post_rma(*s, op_what::write, source, *mh, remote_key, offset,
                           {.immediate = immediate, .delivered = delivered, .context = context});
}

auto endpoint_manager::read(send_endpoint_id ep, std::span<std::byte> local, memory_handle* mh,
                            std::span<const std::byte> remote_key, std::uint64_t offset, void* context) -> void_result {
    auto key = decode_remote_key(remote_key);
    if (!key) return make_unexpected(errc::invalid_argument);
    return read(ep, local, mh, *key, offset, context);
}

auto endpoint_manager::read(send_endpoint_id ep, std::span<std::byte> local, memory_handle* mh,
                            const memory_key& remote_key, std::uint64_t offset, void* context) -> void_result {
    std::lock_guard lock(impl_->eng->mutex());
    send_ep* s = impl_->lookup(ep);
    if (s == nullptr || mh == nullptr || !impl_->eng->covers(mh, local.data(), local.size()))
        return make_unexpected(errc::invalid_argument);
    if (auto ok = impl_->check_one_sided(*s, remote_key, offset, local.size()); !ok) return ok;
    return impl_->post_rma(*s, op_what::read, local, *mh, remote_key, offset, {.context = context});
}

auto endpoint_manager::impl::post_atomic(send_endpoint_id ep, op_what what, std::uint64_t operand,
                                         std::uint64_t compare, std::uint64_t* previous,
                                         std::span<const std::byte> remote_key, std::uint64_t offset, void* context)
    -> void_result {
    if (previous == nullptr || offset % alignof(std::uint64_t) != 0) return make_unexpected(errc::invalid_argument);
    if (!eng->atomics() || provider_facts_for(eng->nic_info().provider).broken_fetch_atomics)
        return make_unexpected(errc::not_supported);
    return with(ep, [&](send_ep& s) -> void_result {
        auto key = decode_remote_key(remote_key);
        if (!key) return make_unexpected(errc::invalid_argument);
        if (auto ok = check_one_sided(s, *key, offset, sizeof(std::uint64_t)); !ok) return ok;
        one_sided_op* o = take_op(s, what, *key, 0, offset, sizeof(std::uint64_t));
        o->operand = operand;
        o->compare = compare;
        o->previous = previous;
        o->context = context;
        eng->post_foreign(*o);
        return {};
    });
}

auto endpoint_manager::fetch_add(send_endpoint_id ep, std::uint64_t increment, std::uint64_t* previous,
                                 std::span<const std::byte> remote_key, std::uint64_t offset, void* context)
    -> void_result {
    return impl_->post_atomic(ep, op_what::fetch_add, increment, 0, previous, remote_key, offset, context);
}

auto endpoint_manager::compare_swap(send_endpoint_id ep, std::uint64_t expected, std::uint64_t desired,
                                    std::uint64_t* previous, std::span<const std::byte> remote_key,
                                    std::uint64_t offset, void* context) -> void_result {
    return impl_->post_atomic(ep, op_what::compare_swap, desired, expected, previous, remote_key, offset, context);
}

}  // namespace loom::plugins
