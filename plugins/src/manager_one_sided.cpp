// Memory and one-sided operations: registrations and their remote keys, RMA write (with a
// user's immediate data) and read, native 64-bit atomics — each a foreign operation the
// engine submits and defers like its own, ended into an event.
#include "endpoint_manager_impl.hpp"

#include <loom/atomic.hpp>
#include <loom/gpu/cuda.hpp>
#include <loom/provider_facts.hpp>
#include <loom/rma.hpp>

#include <algorithm>

namespace loom::plugins {

using op_what = one_sided_op::what;

auto endpoint_manager::impl::start_one_sided(send_ep& s, op_what what, std::span<const std::byte> key_bytes,
                                             std::uint64_t offset, std::size_t length) -> result<one_sided_op*> {
    if (!eng->nic_info().rma) return make_unexpected(errc::not_supported);
    if (s.state == link_state::connecting) return make_unexpected(errc::not_connected);
    if (s.state != link_state::ready || s.chan->state != chan_state::ready) return make_unexpected(errc::connection_aborted);
    auto key = decode_remote_key(key_bytes);
    if (!key || length == 0 || offset > key->length || length > key->length - offset)
        return make_unexpected(errc::invalid_argument);
    auto o = std::ranges::find_if(s.ops, [](const one_sided_op& x) { return !x.used; });
    if (o == s.ops.end()) return make_unexpected(errc::again);
    o->op = what;
    o->mgr = this;
    o->ep = &s;
    o->chan = s.chan;
    o->remote = {.addr = key->base + offset, .key = key->key, .length = length};
    o->submit_with = &impl::submit_one_sided;
    o->on_end = &impl::end_one_sided;
    o->immediate.reset();
    o->delivered = false;
    o->previous = nullptr;
    o->local = {};
    o->local_mr = &s.ops_mh->reg.region();
    o->used = true;
    ++s.ops_in_flight;
    return &*o;
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
            r = rma::write_data_to(ep, o.local, *o.local_mr, peer, o.remote, immediate::make_user_value(*o.immediate), &o);
        else
            r = rma::write_to(ep, o.local, *o.local_mr, peer, o.remote, &o);
        break;
    case op_what::read: r = rma::read_to(ep, o.local, *o.local_mr, peer, o.remote, &o); break;
    case op_what::fetch_add:
        r = atomic::fetch_add_to<std::uint64_t>(ep, o.operand, &o.result, o.local_mr, o.local_mr, peer, o.remote, &o);
        break;
    case op_what::compare_swap:
        r = atomic::cas_to<std::uint64_t>(ep, o.compare, o.local_mr, o.operand, o.local_mr, &o.result, o.local_mr, peer,
                                          o.remote, &o);
        break;
    }
    return r ? 0 : -r.error().value();
}

void endpoint_manager::impl::end_one_sided(foreign_op& f, std::error_code why) noexcept {
    auto& o = static_cast<one_sided_op&>(f);
    static constexpr event_kind kinds[] = {event_kind::write_complete, event_kind::read_complete, event_kind::atomic_complete,
                                           event_kind::atomic_complete};
    if (!why && o.previous != nullptr) *o.previous = o.result;
    o.used = false;
    --o.ep->ops_in_flight;
    o.mgr->emit({.kind = kinds[static_cast<int>(o.op)], .error = why, .context = o.context, .sender = o.ep->id});
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

auto endpoint_manager::supports_atomics() const noexcept -> bool {
    return impl_->eng->atomics() && !provider_facts_for(impl_->eng->nic_info().provider).broken_fetch_atomics;
}

auto endpoint_manager::write(send_endpoint_id ep, std::span<const std::byte> local, memory_handle* mh,
                             std::span<const std::byte> remote_key, std::uint64_t offset,
                             std::optional<std::uint64_t> immediate, void* context, write_completion completion)
    -> void_result {
    const bool delivered = completion == write_completion::delivered;
    std::lock_guard lock(impl_->eng->mutex());
    send_ep* s = impl_->lookup(ep);
    if (s == nullptr || mh == nullptr || !impl_->eng->covers(mh, local.data(), local.size()) ||
        (immediate && (*immediate > immediate::max_user_value || delivered)) ||
        (completion != write_completion::transmitted && !delivered))
        return make_unexpected(errc::invalid_argument);
    auto o = impl_->start_one_sided(*s, op_what::write, remote_key, offset, local.size());
    if (!o) return std::unexpected(o.error());
    (*o)->local = {const_cast<std::byte*>(local.data()), local.size()};  // only read by the write
    (*o)->local_mr = &mh->reg.region();
    (*o)->immediate = immediate;
    (*o)->delivered = delivered;
    (*o)->context = context;
    impl_->eng->post_foreign(**o);
    return {};
}

auto endpoint_manager::read(send_endpoint_id ep, std::span<std::byte> local, memory_handle* mh,
                            std::span<const std::byte> remote_key, std::uint64_t offset, void* context) -> void_result {
    std::lock_guard lock(impl_->eng->mutex());
    send_ep* s = impl_->lookup(ep);
    if (s == nullptr || mh == nullptr || !impl_->eng->covers(mh, local.data(), local.size()))
        return make_unexpected(errc::invalid_argument);
    auto o = impl_->start_one_sided(*s, op_what::read, remote_key, offset, local.size());
    if (!o) return std::unexpected(o.error());
    (*o)->local = local;
    (*o)->local_mr = &mh->reg.region();
    (*o)->context = context;
    impl_->eng->post_foreign(**o);
    return {};
}

auto endpoint_manager::impl::post_atomic(send_endpoint_id ep, op_what what, std::uint64_t operand, std::uint64_t compare,
                                         std::uint64_t* previous, std::span<const std::byte> remote_key,
                                         std::uint64_t offset, void* context) -> void_result {
    if (previous == nullptr || offset % alignof(std::uint64_t) != 0) return make_unexpected(errc::invalid_argument);
    if (!eng->atomics() || provider_facts_for(eng->nic_info().provider).broken_fetch_atomics)
        return make_unexpected(errc::not_supported);
    return with(ep, [&](send_ep& s) -> void_result {
        auto o = start_one_sided(s, what, remote_key, offset, sizeof(std::uint64_t));
        if (!o) return std::unexpected(o.error());
        (*o)->operand = operand;
        (*o)->compare = compare;
        (*o)->previous = previous;
        (*o)->context = context;
        eng->post_foreign(**o);
        return {};
    });
}

auto endpoint_manager::fetch_add(send_endpoint_id ep, std::uint64_t increment, std::uint64_t* previous,
                                 std::span<const std::byte> remote_key, std::uint64_t offset, void* context)
    -> void_result {
    return impl_->post_atomic(ep, op_what::fetch_add, increment, 0, previous, remote_key, offset, context);
}

auto endpoint_manager::compare_swap(send_endpoint_id ep, std::uint64_t expected, std::uint64_t desired,
                                    std::uint64_t* previous, std::span<const std::byte> remote_key, std::uint64_t offset,
                                    void* context) -> void_result {
    return impl_->post_atomic(ep, op_what::compare_swap, desired, expected, previous, remote_key, offset, context);
}

}  // namespace loom::plugins
