// The PE group: set-up, connections, memory and its descriptors, the manager's events and the
// target side of staged atomics. Operations are in pe_group_operations.cpp.
#include "pe_group_impl.hpp"

#include <loom/plugins/detail/little_endian.hpp>
#include <loom/plugins/log.hpp>

#include <loom/gpu/cuda.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>

namespace loom::plugins {

using detail::get_le;
using detail::put_le;

// ---------------------------------------------------------------- the read-modify-write
namespace {
template <class T>
auto apply_typed(T* target, const amo_request& r) -> std::uint64_t {
    std::atomic_ref<T> a(*target);
    const T value = static_cast<T>(r.operand);
    switch (r.op) {
        case amo_op::set: a.store(value); return 0;
        case amo_op::swap: return a.exchange(value);
        case amo_op::compare_swap: {
            T expected = static_cast<T>(r.compare);
            a.compare_exchange_strong(expected, value);
            return expected;  // the old value whether or not it matched
        }
        case amo_op::add:
        case amo_op::fetch_add: return a.fetch_add(value);
        case amo_op::bit_and:
        case amo_op::fetch_and: return a.fetch_and(value);
        case amo_op::bit_or:
        case amo_op::fetch_or: return a.fetch_or(value);
        case amo_op::bit_xor:
        case amo_op::fetch_xor: return a.fetch_xor(value);
        case amo_op::fetch: return a.load();
    }
    return 0;
}
}  // namespace

auto apply_amo(void* target, const amo_request& r) -> std::uint64_t {
    if (r.size == 4) return apply_typed(static_cast<std::uint32_t*>(target), r);
    return apply_typed(static_cast<std::uint64_t*>(target), r);
}

auto apply_amo_on_device(void* target, const amo_request& r) -> result<std::uint64_t> {
    if ((r.size != 4 && r.size != 8) || r.op > amo_op::fetch) return make_unexpected(errc::invalid_argument);
    auto drv = gpu::cuda_driver::instance();
    if (!drv) return make_unexpected(errc::not_supported);
    alignas(8) std::byte word[8]{};
    if (auto ok = (*drv)->copy_to_host(word, target, r.size); !ok) return std::unexpected(ok.error());
    alignas(8) std::byte before[8];
    std::memcpy(before, word, sizeof word);
    const auto old = apply_amo(word, r);
    if (std::memcmp(before, word, r.size) != 0)
        if (auto ok = (*drv)->copy_to_device(target, word, r.size); !ok) return std::unexpected(ok.error());
    return old;
}

// ---------------------------------------------------------------- set-up
auto pe_group::create(pe_group_options options) -> result<std::unique_ptr<pe_group>> {
    if (options.pes < 1 || options.pe < 0 || options.pe >= options.pes || options.queues < 1 || options.queues > 8)
        return make_unexpected(errc::invalid_argument);
    auto cfg = config::from_env();
    if (!cfg) return std::unexpected(cfg.error());
    options.settings.apply_to(*cfg);
    auto p = std::make_unique<impl>(std::move(options), std::move(*cfg));
    impl* self = p.get();
    auto mgr = endpoint_manager::create({.device = self->opts.device,
                                         .rails = self->opts.rails,
                                         .on_event = [self](const event& ev) { self->on_event(ev); },
                                         .thread_safe = true,
                                         .settings = self->opts.settings});
    if (!mgr) return std::unexpected(mgr.error());
    self->mgr = std::move(*mgr);
    const bool native_ok = self->mgr->supports_atomics();
    if (self->opts.atomics == atomic_path::native && !native_ok) return make_unexpected(errc::not_supported);
    self->staged = self->opts.atomics == atomic_path::staged || !native_ok;
    auto rx = self->mgr->open_receive_endpoint({});
    if (!rx) return std::unexpected(rx.error());
    self->rx = *rx;
    auto address = self->mgr->address_of(self->rx);
    if (!address) return std::unexpected(address.error());
    self->my_address = *address;
    const auto slots = static_cast<std::size_t>(self->opts.pes) * static_cast<std::size_t>(self->opts.queues);
    self->connections.resize(slots);
    self->outstanding.assign(slots, 0);
    self->first_error.assign(slots, {});
    self->ops.resize(pe_op_pool_size);
    self->bounce_memory.resize(pe_op_pool_size * pe_bounce_size);
    for (std::uint32_t i = 0; i < pe_op_pool_size; ++i) {
        self->ops[i].index = i;
        self->ops[i].bounce = self->bounce_memory.data() + std::size_t{i} * pe_bounce_size;
        self->free_ops.push_back(pe_op_pool_size - 1 - i);
    }
    auto mh = self->mgr->register_memory(self->bounce_memory);
    if (!mh) return std::unexpected(mh.error());
    self->bounce_region = new pe_region{.mh = *mh, .range = self->bounce_memory};
    self->replies.reserve(64);
    if (self->opts.progress_thread)
        self->progress_thread = std::jthread([self](const std::stop_token& stop) {
            while (!stop.stop_requested())
                if (self->progress_once() == 0) std::this_thread::yield();
        });
    return std::unique_ptr<pe_group>(new pe_group(std::move(p)));
}

pe_group::pe_group(std::unique_ptr<impl> p) noexcept : impl_(std::move(p)) {}

pe_group::~pe_group() {
    if (impl_->progress_thread.joinable()) {
        impl_->progress_thread.request_stop();
        impl_->progress_thread.join();
    }
    (void)impl_->wait_until([&] { return std::ranges::all_of(impl_->outstanding, [](auto n) { return n == 0; }); },
                            impl_->cfg.peer_timeout);
    std::vector<send_endpoint_id> open;
    {
        std::lock_guard lock(impl_->mu);
        for (auto& c : impl_->connections)
            if (c.tx != send_endpoint_id{}) open.push_back(c.tx);
    }
    for (auto tx : open) (void)impl_->mgr->close_send_endpoint(tx);
    // Every PE finalizes at once: the receive endpoint stays open until each connected sender
    // has said goodbye (or is lost), so a PE closing later still has somewhere to say its own.
    (void)impl_->wait_until([&] { return impl_->incoming_ended >= impl_->incoming; }, impl_->cfg.peer_timeout);
    impl_->mgr.reset();  // deregisters what is left; outstanding operations end first
    std::lock_guard lock(impl_->mu);
    for (auto& [start, r] : impl_->regions) delete r;
    delete impl_->bounce_region;
}

auto pe_group::pe() const noexcept -> int { return impl_->opts.pe; }
auto pe_group::pes() const noexcept -> int { return impl_->opts.pes; }
auto pe_group::queues() const noexcept -> int { return impl_->opts.queues; }
auto pe_group::stages_atomics() const noexcept -> bool { return impl_->staged; }
auto pe_group::address() const -> handle_bytes { return impl_->my_address; }

auto pe_group::connect(std::span<const handle_bytes> addresses, const std::function<bool()>& barrier) -> void_result {
    const int n = impl_->opts.pes;
    const int q = impl_->opts.queues;
    if (addresses.size() != static_cast<std::size_t>(n)) return make_unexpected(errc::invalid_argument);
    if (addresses[static_cast<std::size_t>(impl_->opts.pe)] != impl_->my_address)
        return make_unexpected(errc::invalid_argument);
    for (const auto& a : addresses)
        if (auto ok = impl_->mgr->resolve(a); !ok) return ok;
    if (barrier && !barrier()) return make_unexpected(errc::canceled);
    {
        std::lock_guard lock(impl_->mu);
        for (int pe = 0; pe < n; ++pe)
            for (int queue = 0; queue < q; ++queue) {
                auto& c = impl_->connections[(static_cast<std::size_t>(pe) * static_cast<std::size_t>(q)) +
                                             static_cast<std::size_t>(queue)];
                if (c.tx != send_endpoint_id{}) return make_unexpected(errc::busy);  // connected before
                auto tx = impl_->mgr->open_send_endpoint(addresses[static_cast<std::size_t>(pe)], {});
                if (!tx) return std::unexpected(tx.error());
                c.tx = *tx;
                impl_->slot_of_tx[static_cast<std::uint64_t>(*tx)] = pe * q + queue;
            }
    }
    // Until every PE's connections to us are accepted too: a PE that returned early and
    // blocked in the job's bootstrap would leave its peers' handshakes unanswered.
    std::error_code why;
    const bool settled = impl_->wait_until(
        [&] {
            for (const auto& c : impl_->connections) {
                if (c.failure) {
                    why = c.failure;
                    return true;
                }
                if (!c.connected) return false;
            }
            return impl_->incoming >= impl_->connections.size();
        },
        impl_->cfg.connect_timeout);
    if (!settled) return make_unexpected(errc::timed_out);
    if (why) return std::unexpected(why);
    return {};
}

// ---------------------------------------------------------------- memory
auto pe_group::register_memory(std::span<std::byte> buffer, gpu::memory_kind kind) -> result<pe_region*> {
    if (buffer.empty() || buffer.data() == nullptr) return make_unexpected(errc::invalid_argument);
    {
        std::lock_guard lock(impl_->mu);
        const auto start = reinterpret_cast<std::uintptr_t>(buffer.data());
        auto it = impl_->regions.upper_bound(start + buffer.size() - 1);
        if (it != impl_->regions.begin()) {
            auto* before = std::prev(it)->second;
            if (reinterpret_cast<std::uintptr_t>(before->range.data()) + before->range.size() > start)
                return make_unexpected(errc::busy);  // overlaps a registration of this group
        }
    }
    auto mh = impl_->mgr->register_memory(buffer, kind);
    if (!mh) return std::unexpected(mh.error());
    std::lock_guard lock(impl_->mu);
    auto* r = new pe_region{.mh = *mh, .range = buffer, .kind = kind};
    impl_->regions[reinterpret_cast<std::uintptr_t>(buffer.data())] = r;
    return r;
}

auto pe_group::deregister(pe_region* region) -> void_result {
    std::lock_guard lock(impl_->mu);
    auto it = region == nullptr ? impl_->regions.end()
                                : impl_->regions.find(reinterpret_cast<std::uintptr_t>(region->range.data()));
    if (it == impl_->regions.end() || it->second != region) return make_unexpected(errc::invalid_argument);
    if (region->in_flight != 0) return make_unexpected(errc::busy);
    impl_->mgr->deregister(region->mh);
    impl_->regions.erase(it);
    delete region;
    return {};
}

auto pe_group::describe(const pe_region* region) const -> result<region_descriptor> {
    std::lock_guard lock(impl_->mu);
    auto it = region == nullptr ? impl_->regions.end()
                                : impl_->regions.find(reinterpret_cast<std::uintptr_t>(region->range.data()));
    if (it == impl_->regions.end() || it->second != region) return make_unexpected(errc::invalid_argument);
    auto key = impl_->mgr->remote_key_of(region->mh);
    if (!key) return std::unexpected(key.error());
    remote_view v{.base = reinterpret_cast<std::uintptr_t>(region->range.data()),
                  .length = region->range.size(),
                  .owner = impl_->opts.pe,
                  .key_bytes = *key};
    return encode_region(v);
}

auto pe_group::impl::find_region(const void* p, std::size_t n) -> pe_region* {
    const auto start = reinterpret_cast<std::uintptr_t>(p);
    auto it = regions.upper_bound(start);
    if (it == regions.begin()) return nullptr;
    pe_region* r = std::prev(it)->second;
    const auto base = reinterpret_cast<std::uintptr_t>(r->range.data());
    if (start + n < start || start + n > base + r->range.size()) return nullptr;
    return r;
}

// ---------------------------------------------------------------- events
void pe_group::impl::on_event(const event& ev) {
    std::lock_guard lock(mu);
    switch (ev.kind) {
        case event_kind::write_complete:
        case event_kind::read_complete:
        case event_kind::atomic_complete: {
            auto* o = static_cast<pe_op*>(ev.context);
            if (o != nullptr && o->busy && !o->done) finish(*o, ev.error);
            return;
        }
        case event_kind::connected:
            if (auto it = slot_of_tx.find(static_cast<std::uint64_t>(ev.sender)); it != slot_of_tx.end())
                connections[static_cast<std::size_t>(it->second)].connected = true;
            return;
        case event_kind::peer_connected:
            if (ev.receiver == rx) ++incoming;
            return;
        case event_kind::peer_closed:
            if (ev.receiver == rx) {
                ++incoming_ended;
                return;
            }
            [[fallthrough]];  // a PE whose receive endpoint closed first: its slot is gone as if lost
        case event_kind::connection_failed:
        case event_kind::peer_lost:
            if (ev.receiver == rx && ev.sender == send_endpoint_id{}) {
                ++incoming_ended;
                return;
            }
            if (auto it = slot_of_tx.find(static_cast<std::uint64_t>(ev.sender)); it != slot_of_tx.end())
                fail_slot(it->second, ev.error ? ev.error : make_error_code(errc::connection_aborted));
            return;
        case event_kind::message:
            if (ev.receiver != rx) return;
            if (ev.record == amo_request_record)
                serve_amo(ev.data);
            else if (ev.record == amo_reply_record)
                take_reply(ev.data);
            return;
        case event_kind::error: LOOM_WARN("pe group {}: {}", opts.pe, ev.error.message()); return;
        default: return;
    }
}

void pe_group::impl::fail_slot(int slot, std::error_code why) {
    auto& c = connections[static_cast<std::size_t>(slot)];
    if (!c.failure) LOOM_WARN("pe group {}: connection {} lost: {}", opts.pe, slot, why.message());
    c.failure = why;
    // Staged atomics wait for an answer that will not come; the manager ends the rest.
    const int pe = slot / opts.queues;
    for (auto& o : ops)
        if (o.busy && !o.done && o.awaiting_reply && o.slot / opts.queues == pe) finish(o, why);
}

// Staged request (40 bytes): u64 id, u32 origin PE, u8 verb, u8 size, u16 0, u64 address,
// u64 operand, u64 compare. Answer (24 bytes): u64 id, u64 old value, u32 status, u32 0.
void pe_group::impl::serve_amo(std::span<const std::byte> q) {
    if (q.size() != 40) {
        LOOM_WARN("pe group {}: a malformed staged atomic was dropped", opts.pe);
        return;
    }
    const auto origin = get_le<std::uint32_t>(q, 8);
    if (origin >= static_cast<std::uint32_t>(opts.pes)) return;
    amo_request r{.op = static_cast<amo_op>(get_le<std::uint8_t>(q, 12)),
                  .size = get_le<std::uint8_t>(q, 13),
                  .operand = get_le<std::uint64_t>(q, 24),
                  .compare = get_le<std::uint64_t>(q, 32)};
    const auto address = get_le<std::uint64_t>(q, 16);
    std::uint64_t old = 0;
    errc status = errc::success;
    // A peer names the word by its address in this process.
    auto* target = reinterpret_cast<void*>(address);  // NOLINT(performance-no-int-to-ptr)
    auto* region = find_region(target, r.size);
    if ((r.size != 4 && r.size != 8) || address % r.size != 0 || r.op > amo_op::fetch || region == nullptr)
        status = errc::invalid_argument;
    else if (region->kind == gpu::memory_kind::cuda) {
        auto v = apply_amo_on_device(target, r);  // serialized: under mu
        if (v)
            old = *v;
        else
            status = v.error() == make_error_code(errc::not_supported) ? errc::not_supported : errc::io_error;
    } else if (region->kind != gpu::memory_kind::host)
        status = errc::not_supported;  // ROCm, Level Zero: not registered by the runtime yet
    else
        old = apply_amo(target, r);
    reply a{.pe = static_cast<int>(origin)};
    put_le<std::uint64_t>(a.bytes, 0, get_le<std::uint64_t>(q, 0));
    put_le<std::uint64_t>(a.bytes, 8, old);
    put_le<std::uint32_t>(a.bytes, 16, static_cast<std::uint32_t>(status));
    replies.push_back(a);
    send_replies();
}

void pe_group::impl::send_replies() {
    std::size_t sent = 0;
    for (; sent < replies.size(); ++sent) {
        const auto& a = replies[sent];
        const auto& c = connections[static_cast<std::size_t>(a.pe) * static_cast<std::size_t>(opts.queues)];
        if (c.failure) continue;  // its origin is gone
        auto r = mgr->send_record(c.tx, amo_reply_record, a.bytes);
        if (!r && is_again(r.error())) break;
        if (r) (void)mgr->flush(c.tx);
    }
    replies.erase(replies.begin(), replies.begin() + static_cast<std::ptrdiff_t>(sent));
}

void pe_group::impl::take_reply(std::span<const std::byte> a) {
    if (a.size() != 24) return;
    const auto id = get_le<std::uint64_t>(a, 0);
    const auto index = static_cast<std::uint32_t>(id & 0xffffffffU);
    if (index >= ops.size()) return;
    pe_op& o = ops[index];
    if (!o.busy || o.done || o.generation != static_cast<std::uint32_t>(id >> 32)) return;  // a stale answer
    const auto status = static_cast<errc>(get_le<std::uint32_t>(a, 16));
    const auto old = get_le<std::uint64_t>(a, 8);
    if (status == errc::success && o.result != nullptr) {
        if (o.result_size == 4) {
            const auto v = static_cast<std::uint32_t>(old);
            std::memcpy(o.result, &v, 4);
        } else {
            std::memcpy(o.result, &old, 8);
        }
    }
    finish(o, status == errc::success ? std::error_code{} : make_error_code(status));
}

}  // namespace loom::plugins
