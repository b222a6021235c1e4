// The PE group's operations: put, get, atomics (staged or native), put-with-signal, quiet.
#include "pe_group_impl.hpp"

#include <loom/plugins/detail/little_endian.hpp>
#include <loom/plugins/limits.hpp>

#include <cstring>

namespace loom::plugins {

using detail::put_le;

// ---------------------------------------------------------------- the operation pool
auto pe_group::impl::check_target(int pe, int queue) const -> void_result {
    if (pe < 0 || pe >= opts.pes || queue < 0 || queue >= opts.queues) return make_unexpected(errc::invalid_argument);
    std::lock_guard lock(mu);  // the handler sets connected and failure
    const auto& c = connections[static_cast<std::size_t>(pe * opts.queues + queue)];
    if (c.failure) return std::unexpected(c.failure);
    if (!c.connected) return make_unexpected(errc::not_connected);
    return {};
}

auto pe_group::impl::acquire(int pe, int queue) -> result<pe_op*> {
    pe_op* o = nullptr;
    const bool got = wait_until(
        [&] {
            if (free_ops.empty()) return false;
            o = &ops[free_ops.back()];
            free_ops.pop_back();
            return true;
        },
        cfg.peer_timeout);
    if (!got) return make_unexpected(errc::timed_out);
    std::lock_guard lock(mu);
    const std::uint32_t generation = o->generation + 1;
    const std::uint32_t index = o->index;
    std::byte* bounce = o->bounce;
    *o = pe_op{};
    o->index = index;
    o->generation = generation;
    o->bounce = bounce;
    o->busy = true;
    o->slot = pe * opts.queues + queue;
    ++outstanding[static_cast<std::size_t>(o->slot)];
    return o;
}

auto pe_group::impl::attach_local(pe_op& o, std::span<std::byte> local, bool is_source)
    -> result<std::pair<std::span<std::byte>, memory_handle*>> {
    if (auto* r = find_region(local.data(), local.size())) {
        ++r->in_flight;
        o.region = r;
        return std::pair{local, r->mh};
    }
    if (local.size() <= pe_bounce_size) {
        if (is_source)
            std::memcpy(o.bounce, local.data(), local.size());
        else {
            o.copy_back = local.data();
            o.copy_size = local.size();
        }
        return std::pair{std::span<std::byte>(o.bounce, local.size()), bounce_region->mh};
    }
    auto mh = mgr->register_memory(local);  // the MR cache keeps it for the next time
    if (!mh) return std::unexpected(mh.error());
    o.temporary = *mh;
    return std::pair{local, *mh};
}

void pe_group::impl::finish(pe_op& o, std::error_code error) {
    if (!error && o.copy_back != nullptr) std::memcpy(o.copy_back, o.bounce, o.copy_size);
    if (!error && !o.awaiting_reply && o.result != nullptr) std::memcpy(o.result, &o.previous, o.result_size);
    if (o.region != nullptr) --o.region->in_flight;
    if (o.temporary != nullptr) mgr->deregister(o.temporary);
    o.region = nullptr;
    o.temporary = nullptr;
    auto& n = outstanding[static_cast<std::size_t>(o.slot)];
    if (n > 0) --n;
    auto& first = first_error[static_cast<std::size_t>(o.slot)];
    if (error && !first) first = error;
    o.done = true;
    o.error = error;
    if (!o.waited) release(o);
}

void pe_group::impl::release(pe_op& o) {
    o.busy = false;
    free_ops.push_back(o.index);
}

auto pe_group::impl::wait_op(pe_op& o) -> void_result {
    const bool ended = wait_until([&] { return o.done; }, cfg.peer_timeout);
    std::lock_guard lock(mu);
    if (!ended) {
        o.waited = false;       // the completion frees it whenever it comes,
        o.copy_back = nullptr;  // and writes nothing the caller has given up
        o.result = nullptr;
        return make_unexpected(errc::timed_out);
    }
    const auto error = o.error;
    release(o);
    if (error) return std::unexpected(error);
    return {};
}

/// A submission the network refused for good: the operation ends without reaching quiet's error.
static void abandon(pe_group::impl& g, pe_op& o) {
    std::lock_guard lock(g.mu);
    o.copy_back = nullptr;
    o.result = nullptr;
    o.waited = true;
    g.finish(o, {});
    g.release(o);
}

auto pe_group::impl::progress_once() -> std::size_t {
    const auto n = mgr->poll();
    std::lock_guard lock(mu);
    if (!replies.empty()) send_replies();
    return n;
}

// ---------------------------------------------------------------- RMA
auto pe_group::impl::rma(int pe, int queue, std::span<std::byte> local, std::span<const std::byte> remote,
                         std::uint64_t address, bool is_write, bool blocking) -> void_result {
    if (auto ok = check_target(pe, queue); !ok) return ok;
    if (local.data() == nullptr && !local.empty()) return make_unexpected(errc::invalid_argument);
    auto v = decode_region(remote);
    if (!v || v->owner != pe) return make_unexpected(errc::invalid_argument);
    if (address < v->base || local.size() > v->length || address - v->base > v->length - local.size())
        return make_unexpected(errc::invalid_argument);
    if (local.empty()) return {};
    for (std::size_t done = 0; done < local.size();) {
        const std::size_t n = std::min(local.size() - done, max_rma_chunk);
        const auto piece = local.subspan(done, n);
        const std::uint64_t offset = address - v->base + done;
        auto o = acquire(pe, queue);
        if (!o) return std::unexpected(o.error());
        result<std::pair<std::span<std::byte>, memory_handle*>> mem;
        {
            std::lock_guard lock(mu);
            mem = attach_local(**o, piece, is_write);
            // A put whose source went to the bounce slot may return at once.
            if (mem) (*o)->waited = blocking && (!is_write || (*o)->bounce != mem->first.data());
        }
        if (!mem) {
            abandon(*this, **o);
            return std::unexpected(mem.error());
        }
        const auto tx = connections[static_cast<std::size_t>((*o)->slot)].tx;
        auto posted = submit_retrying([&] {
            return is_write ? mgr->write(tx, mem->first, mem->second, v->key, offset, std::nullopt, *o,
                                         write_completion::delivered)
                            : mgr->read(tx, mem->first, mem->second, v->key, offset, *o);
        });
        if (!posted) {
            abandon(*this, **o);
            return posted;
        }
        bool waited = false;
        {
            std::lock_guard lock(mu);
            waited = (*o)->waited;
        }
        if (waited)
            if (auto ok = wait_op(**o); !ok) return ok;
        done += n;
    }
    return {};
}

auto pe_group::put(int pe, int queue, std::span<const std::byte> source, std::span<const std::byte> remote,
                   std::uint64_t remote_address) -> void_result {
    const std::span<std::byte> s{const_cast<std::byte*>(source.data()), source.size()};  // only read
    return impl_->rma(pe, queue, s, remote, remote_address, true, true);
}
auto pe_group::put_nbi(int pe, int queue, std::span<const std::byte> source, std::span<const std::byte> remote,
                       std::uint64_t remote_address) -> void_result {
    const std::span<std::byte> s{const_cast<std::byte*>(source.data()), source.size()};
    return impl_->rma(pe, queue, s, remote, remote_address, true, false);
}
auto pe_group::get(int pe, int queue, std::span<std::byte> destination, std::span<const std::byte> remote,
                   std::uint64_t remote_address) -> void_result {
    return impl_->rma(pe, queue, destination, remote, remote_address, false, true);
}
auto pe_group::get_nbi(int pe, int queue, std::span<std::byte> destination, std::span<const std::byte> remote,
                       std::uint64_t remote_address) -> void_result {
    return impl_->rma(pe, queue, destination, remote, remote_address, false, false);
}

// ---------------------------------------------------------------- atomics
auto pe_group::atomic(int pe, int queue, const amo_request& r, std::span<const std::byte> remote,
                      std::uint64_t remote_address) -> void_result {
    if (auto ok = impl_->check_target(pe, queue); !ok) return ok;
    if ((r.size != 4 && r.size != 8) || remote_address % r.size != 0 || r.op > amo_op::fetch ||
        (is_fetching(r.op) && r.result == nullptr))
        return make_unexpected(errc::invalid_argument);
    auto v = decode_region(remote);
    if (!v || v->owner != pe || remote_address < v->base || v->length < r.size ||
        remote_address - v->base > v->length - r.size)
        return make_unexpected(errc::invalid_argument);
    if (impl_->staged) return impl_->staged_amo(pe, queue, r, remote_address, is_fetching(r.op));
    return impl_->native_amo(pe, queue, r, *v, remote_address);
}

auto pe_group::impl::staged_amo(int pe, int queue, const amo_request& r, std::uint64_t address, bool blocking)
    -> void_result {
    auto o = acquire(pe, queue);
    if (!o) return std::unexpected(o.error());
    std::array<std::byte, 40> q{};
    {
        std::lock_guard lock(mu);
        (*o)->awaiting_reply = true;
        (*o)->waited = blocking;
        if (is_fetching(r.op)) {
            (*o)->result = r.result;
            (*o)->result_size = r.size;
        }
        put_le<std::uint64_t>(q, 0, (std::uint64_t{(*o)->generation} << 32) | (*o)->index);
    }
    put_le<std::uint32_t>(q, 8, static_cast<std::uint32_t>(opts.pe));
    put_le<std::uint8_t>(q, 12, static_cast<std::uint8_t>(r.op));
    put_le<std::uint8_t>(q, 13, static_cast<std::uint8_t>(r.size));
    put_le<std::uint64_t>(q, 16, address);
    put_le<std::uint64_t>(q, 24, r.operand);
    put_le<std::uint64_t>(q, 32, r.compare);
    const auto tx = connections[static_cast<std::size_t>((*o)->slot)].tx;
    auto sent = submit_retrying([&] { return mgr->send_record(tx, amo_request_record, q); });
    if (!sent) {
        abandon(*this, **o);
        return sent;
    }
    (void)mgr->flush(tx);
    if (blocking) return wait_op(**o);
    return {};
}

auto pe_group::impl::native_step(int pe, int queue, bool cas, std::uint64_t operand, std::uint64_t compare,
                                 const remote_view& v, std::uint64_t offset) -> result<std::uint64_t> {
    auto o = acquire(pe, queue);
    if (!o) return std::unexpected(o.error());
    {
        std::lock_guard lock(mu);
        (*o)->waited = true;
    }
    const auto tx = connections[static_cast<std::size_t>((*o)->slot)].tx;
    auto posted = submit_retrying([&] {
        return cas ? mgr->compare_swap(tx, compare, operand, &(*o)->previous, v.key_bytes, offset, *o)
                   : mgr->fetch_add(tx, operand, &(*o)->previous, v.key_bytes, offset, *o);
    });
    if (!posted) {
        abandon(*this, **o);
        return std::unexpected(posted.error());
    }
    std::uint64_t previous = 0;
    const bool ended = wait_until([&] { return (*o)->done; }, cfg.peer_timeout);
    std::lock_guard lock(mu);
    if (!ended) {
        (*o)->waited = false;  // freed by its completion, whenever that comes
        return make_unexpected(errc::timed_out);
    }
    previous = (*o)->previous;
    const auto error = (*o)->error;
    release(**o);
    if (error) return std::unexpected(error);
    return previous;
}

namespace {
auto next_value(const amo_request& r, std::uint64_t old) -> std::uint64_t {
    switch (r.op) {
        case amo_op::set:
        case amo_op::swap:
        case amo_op::compare_swap: return r.operand;
        case amo_op::add:
        case amo_op::fetch_add: return old + r.operand;
        case amo_op::bit_and:
        case amo_op::fetch_and: return old & r.operand;
        case amo_op::bit_or:
        case amo_op::fetch_or: return old | r.operand;
        case amo_op::bit_xor:
        case amo_op::fetch_xor: return old ^ r.operand;
        case amo_op::fetch: return old;
    }
    return old;
}
}  // namespace

// Native: 8-byte adds are the provider's fetch-add; every other verb (and every 4-byte one, on
// its aligned 8-byte word) is a compare-swap loop, so all of them stay atomic with each other.
auto pe_group::impl::native_amo(int pe, int queue, const amo_request& r, const remote_view& v, std::uint64_t address)
    -> void_result {
    const std::uint64_t offset = address - v.base;
    const bool is_add = r.op == amo_op::add || r.op == amo_op::fetch_add || r.op == amo_op::fetch;
    if (r.size == 8 && is_add) {
        auto old = native_step(pe, queue, false, r.op == amo_op::fetch ? 0 : r.operand, 0, v, offset);
        if (!old) return std::unexpected(old.error());
        if (r.result != nullptr) std::memcpy(r.result, &*old, 8);
        return {};
    }
    const std::uint64_t word = offset & ~std::uint64_t{7};
    if (word + 8 > v.length) return make_unexpected(errc::not_supported);  // no whole word to swap
    const unsigned shift = r.size == 4 ? static_cast<unsigned>((offset - word) * 8) : 0;
    const std::uint64_t mask = r.size == 4 ? std::uint64_t{0xffffffffU} << shift : ~std::uint64_t{0};
    auto current = native_step(pe, queue, false, 0, 0, v, word);
    if (!current) return std::unexpected(current.error());
    const auto deadline = std::chrono::steady_clock::now() + cfg.peer_timeout;
    for (;;) {
        std::uint64_t old = (*current & mask) >> shift;
        if (r.op == amo_op::compare_swap && old != (r.compare & (mask >> shift))) break;
        const std::uint64_t value = (next_value(r, old) << shift) & mask;
        auto seen = native_step(pe, queue, true, (*current & ~mask) | value, *current, v, word);
        if (!seen) return std::unexpected(seen.error());
        if (*seen == *current) break;
        current = *seen;
        if (std::chrono::steady_clock::now() >= deadline) return make_unexpected(errc::timed_out);
    }
    if (r.result != nullptr) {
        const std::uint64_t old = (*current & mask) >> shift;
        std::memcpy(r.result, &old, r.size);  // little-endian hosts: the low bytes
    }
    return {};
}

auto pe_group::put_signal(int pe, int queue, std::span<const std::span<const std::byte>> sources,
                          std::span<const std::uint64_t> remote_addresses, std::span<const std::byte> remote,
                          const amo_request& signal, std::span<const std::byte> signal_remote,
                          std::uint64_t signal_address) -> void_result {
    if (sources.size() != remote_addresses.size() || is_fetching(signal.op))
        return make_unexpected(errc::invalid_argument);
    for (std::size_t i = 0; i < sources.size(); ++i)
        if (auto ok = put_nbi(pe, queue, sources[i], remote, remote_addresses[i]); !ok) return ok;
    // The writes are delivery-complete: once quiet has seen them, the data is at the target.
    if (auto ok = quiet(pe, queue); !ok) return ok;
    return atomic(pe, queue, signal, signal_remote, signal_address);
}

// ---------------------------------------------------------------- completion
auto pe_group::quiet(int pe, int queue) -> void_result {
    auto& g = *impl_;
    if (pe < -1 || pe >= g.opts.pes || queue < -1 || queue >= g.opts.queues)
        return make_unexpected(errc::invalid_argument);
    auto selected = [&](std::size_t slot) {
        const int p = static_cast<int>(slot) / g.opts.queues;
        const int q = static_cast<int>(slot) % g.opts.queues;
        return (pe == -1 || p == pe) && (queue == -1 || q == queue);
    };
    const bool idle = g.wait_until(
        [&] {
            for (std::size_t s = 0; s < g.outstanding.size(); ++s)
                if (selected(s) && g.outstanding[s] != 0) return false;
            return true;
        },
        g.cfg.peer_timeout);
    std::lock_guard lock(g.mu);
    if (!idle) return make_unexpected(errc::timed_out);
    std::error_code first;
    for (std::size_t s = 0; s < g.first_error.size(); ++s)
        if (selected(s) && g.first_error[s]) {
            if (!first) first = g.first_error[s];
            g.first_error[s] = {};
        }
    if (first) return std::unexpected(first);
    return {};
}

auto pe_group::fence(int pe, int queue) -> void_result { return quiet(pe, queue); }

auto pe_group::progress() -> std::size_t { return impl_->progress_once(); }

auto pe_group::outstanding() const -> std::size_t {
    std::lock_guard lock(impl_->mu);
    std::size_t n = 0;
    for (auto k : impl_->outstanding) n += k;
    return n;
}

}  // namespace loom::plugins
