// The transfer agent: set-up, peers, memory, notifications and the manager's events.
// Transfers themselves are in transfer_agent_transfers.cpp.
#include "transfer_agent_impl.hpp"

#include <loom/plugins/log.hpp>

#include <algorithm>
#include <cstring>
#include <utility>

namespace loom::plugins {

auto transfer_agent::create(agent_options options) -> result<std::unique_ptr<transfer_agent>> {
    if (options.name.empty() || options.name.size() > max_agent_name || options.progress_delay.count() < 0)
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
    auto rx = self->mgr->open_receive_endpoint({});
    if (!rx) return std::unexpected(rx.error());
    self->rx = *rx;
    auto address = self->mgr->address_of(self->rx);
    if (!address) return std::unexpected(address.error());
    auto info = encode(plugins::connection_info{.agent = self->opts.name, .address = *address});
    if (!info) return std::unexpected(info.error());
    self->info = std::move(*info);
    if (self->opts.progress_thread)
        self->progress_thread = std::jthread([self](const std::stop_token& stop) { self->run_progress(stop); });
    return std::unique_ptr<transfer_agent>(new transfer_agent(std::move(p)));
}

transfer_agent::transfer_agent(std::unique_ptr<impl> p) noexcept : impl_(std::move(p)) {}

transfer_agent::~transfer_agent() {
    if (impl_->progress_thread.joinable()) {
        impl_->progress_thread.request_stop();
        impl_->progress_thread.join();
    }
    std::vector<send_endpoint_id> open;
    {
        std::lock_guard lock(impl_->mu);
        for (auto& [name, p] : impl_->peers)
            if (p->tx != send_endpoint_id{}) open.push_back(p->tx);
    }
    for (auto tx : open) (void)impl_->mgr->close_send_endpoint(tx);
    impl_->mgr.reset();  // outstanding operations end (their events still find the transfers)
    std::lock_guard lock(impl_->mu);
    for (auto* t : impl_->transfers) delete t;
    for (auto* t : impl_->abandoned) delete t;
    for (auto* r : impl_->remotes) delete r;
    for (auto* l : impl_->locals) delete l;
}

auto transfer_agent::name() const noexcept -> const std::string& { return impl_->opts.name; }
auto transfer_agent::connection_info() const -> std::string { return impl_->info; }

void transfer_agent::impl::run_progress(const std::stop_token& stop) {
    while (!stop.stop_requested()) {
        const auto n = progress_once();
        bool busy = false;
        {
            std::lock_guard lock(mu);
            busy = !active.empty();
        }
        if (n == 0 && !busy) {
            if (opts.progress_delay.count() > 0)
                std::this_thread::sleep_for(opts.progress_delay);
            else
                std::this_thread::yield();
        }
    }
}

// ---------------------------------------------------------------- events
void transfer_agent::impl::on_event(const event& ev) {
    std::lock_guard lock(mu);
    switch (ev.kind) {
        case event_kind::write_complete:
        case event_kind::read_complete: {
            auto* pc = static_cast<piece*>(ev.context);
            if (pc == nullptr || (!transfers.contains(pc->owner) && !abandoned.contains(pc->owner))) return;
            transfer& t = *pc->owner;
            --t.outstanding;
            if (ev.error && !t.error) t.error = ev.error;
            return;
        }
        case event_kind::connected:
            // Found by its send endpoint, not the event's context: the peer may be gone.
            if (auto* p = peer_of(ev.sender)) p->connected = true;
            return;
        case event_kind::peer_closed:
            if (auto* p = peer_of(ev.sender)) {
                p->failure = make_error_code(errc::shutdown);  // its agent went away in order
                LOOM_DEBUG("transfer agent {}: {} closed its connection", opts.name, p->name);
            }
            return;
        case event_kind::connection_failed:
        case event_kind::peer_lost:
            if (auto* p = peer_of(ev.sender)) {
                p->failure = ev.error ? ev.error : make_error_code(errc::connection_aborted);
                LOOM_WARN("transfer agent {}: connection to {} lost: {}", opts.name, p->name, p->failure.message());
            }
            return;
        case event_kind::message:
            if (ev.receiver == rx && ev.record == notification_record) {
                if (auto n = decode_notification(ev.data))
                    inbox.push_back(std::move(*n));
                else
                    LOOM_WARN("transfer agent {}: a malformed notification was dropped", opts.name);
            }
            return;
        case event_kind::error: LOOM_WARN("transfer agent {}: {}", opts.name, ev.error.message()); return;
        default: return;
    }
}

// ---------------------------------------------------------------- peers
auto transfer_agent::impl::find_peer(std::string_view name) -> peer_state* {
    auto it = peers.find(name);
    return it == peers.end() ? nullptr : it->second.get();
}

auto transfer_agent::impl::peer_of(send_endpoint_id tx) -> peer_state* {
    if (tx == send_endpoint_id{}) return nullptr;
    for (auto& [name, p] : peers)
        if (p->tx == tx) return p.get();
    return nullptr;
}

auto transfer_agent::impl::peer_problem(std::string_view name) -> std::error_code {
    auto* p = find_peer(name);
    if (p == nullptr) return make_error_code(errc::no_entry);
    return p->failure;
}

auto transfer_agent::impl::open_peer(std::string_view name, const handle_bytes& address) -> void_result {
    auto p = std::make_unique<peer_state>();
    p->name = std::string(name);
    p->address = address;
    auto tx = mgr->open_send_endpoint(p->address, {}, p.get());
    if (!tx) return std::unexpected(tx.error());
    p->tx = *tx;
    peers.emplace(p->name, std::move(p));
    return {};
}

auto transfer_agent::add_peer(std::string_view name, std::span<const std::byte> info) -> void_result {
    auto decoded = decode_connection_info(info);
    if (!decoded || decoded->agent != name) return make_unexpected(errc::invalid_argument);
    std::lock_guard lock(impl_->mu);
    if (auto* p = impl_->find_peer(name)) {
        if (p->address != decoded->address) return make_unexpected(errc::invalid_argument);
        return {};
    }
    return impl_->open_peer(name, decoded->address);
}

auto transfer_agent::connect(std::string_view name) -> void_result {
    {
        std::lock_guard lock(impl_->mu);
        if (impl_->find_peer(name) == nullptr) {
            if (name != impl_->opts.name) return make_unexpected(errc::no_entry);
            auto self = decode_connection_info(as_bytes_of(impl_->info));
            if (auto r = impl_->open_peer(name, self->address); !r) return r;  // a loopback connection
        }
    }
    std::error_code why;
    const bool up = impl_->wait_until(
        [&] {
            why = impl_->peer_problem(name);
            return why || impl_->find_peer(name)->connected;
        },
        impl_->cfg.connect_timeout);
    if (!up) return make_unexpected(errc::timed_out);
    if (why) return std::unexpected(why);
    return {};
}

auto transfer_agent::remove_peer(std::string_view name) -> void_result {
    send_endpoint_id tx{};
    {
        std::lock_guard lock(impl_->mu);
        auto it = impl_->peers.find(name);
        if (it == impl_->peers.end()) return make_unexpected(errc::no_entry);
        tx = it->second->tx;
        // Its transfers in flight keep running; the connection closes once they ended.
    }
    const auto closed = impl_->mgr->close_send_endpoint(tx);
    std::lock_guard lock(impl_->mu);
    impl_->peers.erase(std::string(name));
    return closed;
}

auto transfer_agent::knows_peer(std::string_view name) const -> bool {
    std::lock_guard lock(impl_->mu);
    return impl_->find_peer(name) != nullptr;
}

auto transfer_agent::is_connected(std::string_view name) const -> bool {
    std::lock_guard lock(impl_->mu);
    const auto* p = impl_->find_peer(name);
    return p != nullptr && p->connected && !p->failure;
}

// ---------------------------------------------------------------- memory
auto transfer_agent::register_memory(std::span<std::byte> buffer, gpu::memory_kind kind) -> result<local_region*> {
    if (buffer.empty() || buffer.data() == nullptr) return make_unexpected(errc::invalid_argument);
    auto mh = impl_->mgr->register_memory(buffer, kind);
    if (!mh) return std::unexpected(mh.error());
    std::lock_guard lock(impl_->mu);
    auto* r = new local_region{.mh = *mh, .range = buffer, .kind = kind};
    impl_->locals.insert(r);
    return r;
}

auto transfer_agent::supports_memory(gpu::memory_kind kind) const -> bool { return impl_->mgr->supports_memory(kind); }

auto transfer_agent::memory_kind_of(const local_region* region) const -> result<gpu::memory_kind> {
    std::lock_guard lock(impl_->mu);
    if (!impl_->locals.contains(const_cast<local_region*>(region))) return make_unexpected(errc::invalid_argument);
    return region->kind;
}

auto transfer_agent::deregister(local_region* region) -> void_result {
    std::lock_guard lock(impl_->mu);
    if (!impl_->locals.contains(region)) return make_unexpected(errc::invalid_argument);
    for (auto* t : impl_->active)
        for (const auto& pc : t->pieces)
            if (pc.mh == region->mh) return make_unexpected(errc::busy);
    impl_->mgr->deregister(region->mh);
    impl_->locals.erase(region);
    delete region;
    return {};
}

auto transfer_agent::public_data(const local_region* region) const -> result<std::string> {
    std::lock_guard lock(impl_->mu);
    if (!impl_->locals.contains(const_cast<local_region*>(region))) return make_unexpected(errc::invalid_argument);
    auto key = impl_->mgr->remote_key_of(region->mh);
    if (!key) return std::unexpected(key.error());
    return encode(plugins::public_data{.address = reinterpret_cast<std::uintptr_t>(region->range.data()),
                                       .length = region->range.size(),
                                       .key = *key});
}

auto transfer_agent::load_remote(std::string_view peer, std::span<const std::byte> data) -> result<remote_region*> {
    auto decoded = decode_public_data(data);
    if (!decoded) return std::unexpected(decoded.error());
    auto key = decode_remote_key(decoded->key);  // valid: decode_public_data checked it
    if (!key) return std::unexpected(key.error());
    std::lock_guard lock(impl_->mu);
    if (impl_->find_peer(peer) == nullptr && peer != impl_->opts.name) return make_unexpected(errc::no_entry);
    auto* r = new remote_region{.peer = std::string(peer), .data = *decoded, .key = *key};
    impl_->remotes.insert(r);
    return r;
}

auto transfer_agent::unload(remote_region* region) -> void_result {
    std::lock_guard lock(impl_->mu);
    if (!impl_->remotes.contains(region)) return make_unexpected(errc::invalid_argument);
    impl_->remotes.erase(region);
    delete region;
    return {};
}

// ---------------------------------------------------------------- notifications
auto transfer_agent::notify(std::string_view peer, std::string_view message) -> void_result {
    auto payload = encode_notification(impl_->opts.name, message);
    if (!payload) return std::unexpected(payload.error());
    std::error_code why;
    const bool sent = impl_->wait_until(
        [&] {
            why = impl_->peer_problem(peer);
            auto* p = impl_->find_peer(peer);
            if (!why && p->connected) {
                auto r = impl_->mgr->send_record(p->tx, notification_record, as_bytes_of(*payload));
                if (!r && r.error() == make_error_code(errc::again)) return false;
                if (!r)
                    why = r.error();
                else
                    (void)impl_->mgr->flush(p->tx);  // again: it leaves at the next poll
                return true;
            }
            return static_cast<bool>(why);
        },
        impl_->cfg.peer_timeout);
    if (!sent) return make_unexpected(errc::timed_out);
    if (why) return std::unexpected(why);
    impl_->mgr->poll();
    return {};
}

auto transfer_agent::take_notifications() -> std::vector<notification> {
    if (!impl_->opts.progress_thread) progress();
    std::lock_guard lock(impl_->mu);
    return std::exchange(impl_->inbox, {});
}

void transfer_agent::progress() { impl_->progress_once(); }

auto transfer_agent::impl::progress_once() -> std::size_t {
    const auto n = mgr->poll();
    std::lock_guard lock(mu);
    pump_active();
    return n;
}

}  // namespace loom::plugins
