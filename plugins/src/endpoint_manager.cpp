// The endpoint manager: set-up on the runtime's device, handles, and poll() — progress under
// the engine lock, then the events handed to the caller's handler outside it.
#include "endpoint_manager_impl.hpp"

#include <loom/plugins/log.hpp>
#include <loom/plugins/runtime.hpp>

namespace loom::plugins {

namespace {

template <class T, class Id>
auto find(std::vector<std::unique_ptr<T>>& table, Id id) noexcept -> T* {
    const auto v = static_cast<std::uint64_t>(id);
    const auto index = static_cast<std::uint32_t>(v);
    if (index == 0 || index > table.size()) return nullptr;
    T* p = table[index - 1].get();
    return p != nullptr && p->gen == static_cast<std::uint32_t>(v >> 32) ? p : nullptr;
}

/// The NICs of runtime device `dev` (and the next rails − 1 NICs), and the configuration
/// (under the runtime's lock).
auto nics_of(int dev, int rails) -> result<std::pair<std::vector<nic>, config>> {
    auto& rt = runtime::instance();
    auto lock = rt.guard();
    auto& reg = rt.devices();
    if (!reg.contains(dev) || rails < 1 || rails > max_rails ||
        (rails > 1 && (reg.is_virtual(dev) || dev + rails > reg.nic_count())))
        return make_unexpected(errc::invalid_argument);
    std::vector<nic> nics;
    for (int m : reg.members(dev)) nics.push_back(*reg.primary_nic(m));
    for (int k = 1; k < rails; ++k) nics.push_back(*reg.primary_nic(dev + k));
    return std::pair{std::move(nics), rt.settings()};
}

}  // namespace

endpoint_manager::impl::impl(manager_options o, std::unique_ptr<engine> e) noexcept
    : opts(std::move(o)), eng(std::move(e)) {
    eng->set_remote_data_hook(&impl::on_remote_data, this);
}

endpoint_manager::impl::~impl() {
    stop_.store(true);
    if (progress_thread_.joinable()) progress_thread_.join();
    close_all();
    eng.reset();  // the provider lets go of every context: abandoned endpoints can go
    abandoned.clear();
    abandoned_receives.clear();
}

auto endpoint_manager::impl::lookup(send_endpoint_id id) noexcept -> send_ep* { return find(sends, id); }
auto endpoint_manager::impl::lookup(receive_endpoint_id id) noexcept -> recv_ep* { return find(receives, id); }

void endpoint_manager::impl::close_all() noexcept {
    std::lock_guard lock(eng->mutex());
    for (auto& s : sends)
        if (s) (void)close_send(*s);
    for (auto& r : receives)
        if (r) close_receive(*r);
    for (memory_handle* m : registrations_) eng->deregister(*m);
    registrations_.clear();
}

auto endpoint_manager::impl::poll() -> std::size_t {
    std::unique_lock<std::mutex> one_at_a_time;
    if (opts.thread_safe) one_at_a_time = std::unique_lock(delivery_mu_);
    {
        std::lock_guard lock(eng->mutex());
        eng->progress();
        for (auto& s : sends)
            if (s) progress_send(*s);
        for (auto& r : receives)
            if (r) progress_receive(*r);
        delivering_.swap(pending_);
        reposting_.swap(reposts_);
    }
    // Outside the lock: the handler may send, post or close from inside.
    for (const auto& e : delivering_) opts.on_event(e);
    const std::size_t n = delivering_.size();
    delivering_.clear();
    if (!reposting_.empty() || !retiring_.empty()) {
        std::lock_guard lock(eng->mutex());
        repost_all();
        retire_connections();
    }
    return n;
}

void endpoint_manager::impl::start_progress_thread() {
    progress_thread_ = std::thread([this] {
        while (!stop_.load(std::memory_order_relaxed))
            if (poll() == 0) std::this_thread::yield();
    });
}

// ---------------------------------------------------------------- the public face
endpoint_manager::endpoint_manager(std::unique_ptr<impl> p) noexcept : impl_(std::move(p)) {}

endpoint_manager::~endpoint_manager() {
    impl_.reset();
    (void)runtime::instance().release();
}

auto endpoint_manager::create(manager_options options) -> result<std::unique_ptr<endpoint_manager>> {
    if (!options.on_event) return make_unexpected(errc::invalid_argument);
    if (options.progress_thread) options.thread_safe = true;
    if (auto a = runtime::instance().acquire(std::nullopt, nullptr, options.settings); !a)
        return std::unexpected(a.error());
    auto give_back = [](std::error_code ec) {
        (void)runtime::instance().release();
        return std::unexpected(ec);
    };
    auto nics = nics_of(options.device, options.rails);
    if (!nics) return give_back(nics.error());
    if (nics->first.empty()) return give_back(make_error_code(errc::no_device));
    auto eng = nics->first.size() == 1 ? engine::open(nics->first.front(), nics->second)
                                       : engine::open(nics->first, nics->second);
    if (!eng) return give_back(eng.error());
    if (options.thread_safe) (*eng)->mutex().make_plain();
    const bool threaded = options.progress_thread;
    auto p = std::make_unique<impl>(std::move(options), std::move(*eng));
    if (threaded) p->start_progress_thread();
    return std::unique_ptr<endpoint_manager>(new endpoint_manager(std::move(p)));
}

auto endpoint_manager::poll() -> std::size_t { return impl_->poll(); }

auto endpoint_manager::open_receive_endpoint(const receive_parameters& params, void* context)
    -> result<receive_endpoint_id> {
    std::lock_guard lock(impl_->eng->mutex());
    return impl_->open_receive(params, context);
}

auto endpoint_manager::address_of(receive_endpoint_id ep) const -> result<handle_bytes> {
    return impl_->with(ep, [](recv_ep& r) -> result<handle_bytes> { return r.address; });
}

auto endpoint_manager::close_receive_endpoint(receive_endpoint_id ep) -> void_result {
    return impl_->with(ep, [&](recv_ep& r) -> void_result {
        impl_->close_receive(r);
        return {};
    });
}

auto endpoint_manager::post_receive(receive_endpoint_id ep, std::span<std::byte> buffer, memory_handle* mh,
                                    void* context) -> void_result {
    return impl_->with(ep, [&](recv_ep& r) { return impl_->post_receive(r, buffer, mh, context); });
}

auto endpoint_manager::open_send_endpoint(std::span<const std::byte> peer_address, const connection_parameters& params,
                                          void* context) -> result<send_endpoint_id> {
    std::lock_guard lock(impl_->eng->mutex());
    return impl_->open_send(peer_address, params, context);
}

auto endpoint_manager::resolve(std::span<const std::byte> peer_address) -> void_result {
    std::lock_guard lock(impl_->eng->mutex());
    return impl_->eng->resolve(peer_address);
}

auto endpoint_manager::close_send_endpoint(send_endpoint_id ep) -> void_result {
    return impl_->with(ep, [&](send_ep& s) { return impl_->close_send(s); });
}

auto endpoint_manager::available_buffers(send_endpoint_id ep) -> result<std::size_t> {
    return impl_->with(ep, [](send_ep& s) -> result<std::size_t> {
        const std::size_t least = std::min(s.least_available, s.available());
        s.least_available = s.available();
        return least;
    });
}

auto endpoint_manager::send(send_endpoint_id ep, std::span<const std::byte> message) -> void_result {
    return impl_->with(ep, [&](send_ep& s) {
        return impl_->send_buffered(s, static_cast<std::uint16_t>(record_kind::message), message);
    });
}

auto endpoint_manager::send_record(send_endpoint_id ep, std::uint16_t kind, std::span<const std::byte> payload)
    -> void_result {
    if (kind < first_component_kind || kind > last_component_kind) return make_unexpected(errc::invalid_argument);
    return impl_->with(ep, [&](send_ep& s) { return impl_->send_buffered(s, kind, payload); });
}

auto endpoint_manager::send(send_endpoint_id ep, std::span<const std::byte> data, memory_handle* mh,
                            std::span<const std::byte> header, void* context) -> void_result {
    return impl_->with(ep, [&](send_ep& s) { return impl_->send_zero_copy(s, data, mh, header, context); });
}

auto endpoint_manager::flush(send_endpoint_id ep) -> void_result {
    return impl_->with(ep, [&](send_ep& s) { return impl_->flush(s); });
}

auto endpoint_manager::messages_sent(send_endpoint_id ep) -> result<std::uint64_t> {
    return impl_->with(ep, [](send_ep& s) -> result<std::uint64_t> { return s.messages_sent; });
}

}  // namespace loom::plugins
