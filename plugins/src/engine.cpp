#include <loom/plugins/engine.hpp>

#include <loom/gpu/cuda.hpp>
#include <loom/plugins/log.hpp>
#include <loom/plugins/stripe_plan.hpp>

#include <loom/rma.hpp>

#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace loom::plugins {
namespace {

using match_bits::make_tag;

const mr_access_flags full_access = mr_access_flags::send | mr_access_flags::recv | mr_access_flags::read |
                                    mr_access_flags::write | mr_access_flags::remote_read |
                                    mr_access_flags::remote_write;

// ---------------------------------------------------------------- never-freed object slabs
template <class T>
class slab {
public:
    auto get() -> T* {
        std::lock_guard lock(mu_);
        if (!free_.empty()) {
            T* p = free_.back();
            free_.pop_back();
            return p;
        }
        return new T();  // NOLINT: slab objects live until process exit by design
    }
    void put(T* p) {
        std::lock_guard lock(mu_);
        free_.push_back(p);
    }

private:
    std::mutex mu_;
    std::vector<T*> free_;
};

template <class T>
auto slab_of() -> slab<T>& {
    static auto* s = new slab<T>();  // NOLINT: outlives every engine and the host's atexit order
    return *s;
}

/// The request an operation belongs to; nullptr for a channel's own (set-up) operations.
auto owner_request(const op& o) noexcept -> request_base* {
    switch (o.kind) {
    case op_kind::send_eager: case op_kind::send_rts: case op_kind::cts_recv: case op_kind::rma_write:
        return static_cast<send_request*>(o.owner);
    case op_kind::recv_slot: case op_kind::cts_send: case op_kind::flush_read:
        return static_cast<recv_request*>(o.owner);
    default: return nullptr;
    }
}

/// The channel a set-up operation belongs to (listen, connect, accept).
auto owner_channel(const op& o) noexcept -> channel_base* {
    switch (o.kind) {
    case op_kind::listen_recv: return static_cast<listener*>(o.owner);
    case op_kind::connect_send: case op_kind::accept_recv: return static_cast<sender*>(o.owner);
    case op_kind::accept_send: return static_cast<receiver*>(o.owner);
    case op_kind::liveness_recv: return static_cast<channel_base*>(o.owner);
    default: return nullptr;
    }
}

/// Operations that only receive: the ones fi_cancel can take back (sends cannot be recalled).
auto cancellable(const op& o) noexcept -> bool {
    return o.kind == op_kind::recv_slot || o.kind == op_kind::cts_recv || o.kind == op_kind::listen_recv ||
           o.kind == op_kind::accept_recv || o.kind == op_kind::liveness_recv;
}

auto busy(const op& o) noexcept -> bool { return o.in_flight || o.deferred; }

/// Calls f on every operation a request may have posted.
template <class F>
void for_each_op(request_base& r, F&& f) {
    if (r.is_send) {
        auto& q = static_cast<send_request&>(r);
        f(q.main);
        f(q.cts_op);
        for (auto& w : q.write_ops) f(w);
    } else {
        auto& q = static_cast<recv_request&>(r);
        for (int i = 0; i < q.n; ++i) {
            f(q.slots[static_cast<std::size_t>(i)].recv_op);
            f(q.slots[static_cast<std::size_t>(i)].cts_op);
        }
    }
}

/// A request from the channel's pool, reset for a new operation; nullptr when all are in use.
template <class C>
auto take_request(C& c, clock::time_point now) noexcept -> decltype(&c.pool[0]) {
    if (c.free_list.empty()) return nullptr;
    auto& r = c.pool[static_cast<std::size_t>(c.free_list.back())];
    c.free_list.pop_back();
    r.gen += 1;
    r.chan = &c;
    r.done = false;
    r.released = false;
    r.error = errc::success;
    r.started = now;
    return &r;
}

auto ops_busy(request_base& r) noexcept -> bool {
    if (r.is_send) {
        // Only a rendezvous posts the CTS receive and the writes.
        auto& q = static_cast<send_request&>(r);
        if (busy(q.main)) return true;
        if (!q.rendezvous) return false;
        return busy(q.cts_op) || std::ranges::any_of(q.write_ops, busy);
    }
    auto& q = static_cast<recv_request&>(r);
    for (int i = 0; i < q.n; ++i) {
        const auto& s = q.slots[static_cast<std::size_t>(i)];
        if (busy(s.recv_op) || busy(s.cts_op)) return true;
    }
    return false;
}

}  // namespace

// ---------------------------------------------------------------- tag sequences
void tag_sequences::reset() noexcept { e_ = {}; }

// ---------------------------------------------------------------- engine set-up
auto engine::open(const nic& n, const config& cfg) -> result<std::unique_ptr<engine>> {
    return open(std::vector<nic>{n}, cfg);
}

namespace {
auto open_rail(const nic& n, const config& cfg) -> result<std::unique_ptr<rail>> {
    auto r = std::make_unique<rail>();
    r->n = n;
    auto fab = fabric::create(n.info);
    if (!fab) return std::unexpected(fab.error());
    r->fab = std::move(*fab);
    auto dom = domain::create(r->fab, n.info);
    if (!dom) return std::unexpected(dom.error());
    r->dom = std::move(*dom);
    auto cq = completion_queue::create(r->dom, {.size = 4096, .format = cq_format::tagged});
    if (!cq) return std::unexpected(cq.error());
    r->cq = std::move(*cq);
    auto av = address_vector::create(r->dom);
    if (!av) return std::unexpected(av.error());
    r->av = std::move(*av);
    auto ep = endpoint::create(r->dom, n.info);
    if (!ep) return std::unexpected(ep.error());
    r->ep = std::move(*ep);
    if (auto x = r->ep.bind_cq(r->cq, cq_bind::transmit | cq_bind::recv); !x) return std::unexpected(x.error());
    if (auto x = r->ep.bind_av(r->av); !x) return std::unexpected(x.error());
    if (auto x = r->ep.enable(); !x) return std::unexpected(x.error());
    auto self = r->ep.name();
    if (!self) return std::unexpected(self.error());
    r->self = std::move(*self);
    mr_cache_limits limits{};
    if (cfg.mr_cache_entries != 0) limits.max_entries = cfg.mr_cache_entries;
    auto cache = r->dom.get_memory_region_mode().has(mr_mode_flags::endpoint) ? make_mr_cache(r->dom, r->ep, limits)
                                                                              : make_mr_cache(r->dom, limits);
    if (!cache) return std::unexpected(cache.error());
    r->cache = std::make_unique<mr_cache>(std::move(*cache));
    // Device memory is not retained: a freed and reallocated device buffer must not hit a stale
    // registration, and hosts that register device memory keep their own caches above us.
    const mr_cache_limits none{.max_entries = 0, .max_registered_bytes = 0};
    auto dev = r->dom.get_memory_region_mode().has(mr_mode_flags::endpoint) ? make_mr_cache(r->dom, r->ep, none)
                                                                            : make_mr_cache(r->dom, none);
    if (!dev) return std::unexpected(dev.error());
    r->dev_cache = std::make_unique<mr_cache>(std::move(*dev));
    r->virt_addr = r->dom.get_memory_region_mode().has(mr_mode_flags::virt_addr);
    const std::size_t max_msg = r->ep.max_msg_size() != 0 ? r->ep.max_msg_size() : (std::size_t{1} << 30);
    r->max_write = std::min<std::size_t>(max_msg, std::size_t{1} << 30);
    return r;
}
}  // namespace

auto engine::open(const std::vector<nic>& nics, const config& cfg) -> result<std::unique_ptr<engine>> {
    if (nics.empty() || nics.size() > static_cast<std::size_t>(max_rails)) return make_unexpected(errc::invalid_argument);
    const nic& n = nics.front();
    auto main = open_rail(n, cfg);
    if (!main) return std::unexpected(main.error());
    std::unique_ptr<engine> e(new engine(std::move(*main)));
    e->nic_ = n;
    e->cfg_ = cfg;
    e->inject_size_ = e->ep_.inject_size();
    const std::size_t max_msg = e->ep_.max_msg_size() != 0 ? e->ep_.max_msg_size() : (std::size_t{1} << 30);
    e->eager_max_ = n.rma ? std::min(n.eager_max, max_msg) : max_msg;
    // shm (2.1) even overruns a short receive with an inline message, so every provider gets it.
    if (n.rma && e->eager_max_ > 0 && e->ep_.iov_limits().rx >= 2) {
        e->discard_.resize(e->eager_max_);
        auto reg = e->cache_->lookup(std::span<std::byte>{e->discard_}, full_access);
        if (!reg) return std::unexpected(reg.error());
        e->discard_reg_ = std::move(*reg);
    }
    for (std::size_t i = 1; i < nics.size(); ++i) {
        if (!nics[i].rma || !n.rma) return make_unexpected(errc::not_supported);  // striping needs RMA on every rail
        auto r = open_rail(nics[i], cfg);
        if (!r) return std::unexpected(r.error());
        e->extra_.push_back(std::move(*r));
    }
    e->host_id_ = this_host_id();
    e->deferred_.reserve(1024);
    e->unposted_.reserve(1024);
    if (cfg.progress_thread) e->mu_.make_plain();  // two busy threads: no owner to favour
    e->progress_thread_ = std::thread([self = e.get()] { self->watchdog(); });
    LOOM_INFO("engine on {} ({}, {} rail{}): eager <= {} B, rendezvous {}, inject {} B", n.name, n.provider,
              nics.size(), nics.size() == 1 ? "" : "s", e->eager_max_,
              n.rma ? "RMA write + immediate data" : "off (no RMA)", e->inject_size_);
    return e;
}

engine::~engine() {
    stop_.store(true);
    if (progress_thread_.joinable()) progress_thread_.join();
    // Channels still open at this point are the host's leak; their ops may still sit in the
    // provider, which closing the endpoint below discards.
    extra_.clear();
    (void)ep_.close();
    discard_reg_.release();
    flush_reg_.release();
    main_.reset();  // cache, AV, CQ, domain, fabric in that order (rail's member order)
}

auto engine::new_channel_id() -> result<std::uint32_t> {
    if (next_id_ > match_bits::max_channel_id) return make_unexpected(errc::no_space);
    return next_id_++;
}

auto engine::rail_ep(int k) noexcept -> endpoint& { return rail_at(k).ep; }
auto engine::rail_cache(int k) noexcept -> mr_cache& { return *rail_at(k).cache; }
auto engine::rail_writes(int i) const noexcept -> std::uint64_t {
    if (i < 0 || i > static_cast<int>(extra_.size())) return 0;
    return i == 0 ? main_->writes : extra_[static_cast<std::size_t>(i - 1)]->writes;
}

auto engine::insert_rail_peer(int k, const address& a) -> result<fabric_addr> {
    auto& r = rail_at(k);
    const auto bytes = to_raw(a);
    std::string raw(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    if (auto it = r.peers.find(raw); it != r.peers.end()) return it->second;
    auto fa = r.av.insert(a);
    if (!fa) return std::unexpected(fa.error());
    r.peers.emplace(std::move(raw), *fa);
    return *fa;
}

auto engine::rail_addresses() const -> std::vector<address> {
    std::vector<address> out;
    for (const auto& r : extra_) out.push_back(r->self);
    return out;
}

void engine::connect_rails(channel_base& c, const std::vector<address>& remote) noexcept {
    c.rails = 1;
    c.rail_peer[0] = c.peer;
    const int common = std::min(rail_count(), 1 + static_cast<int>(remote.size()));
    for (int k = 1; k < common; ++k) {
        auto fa = insert_rail_peer(k, remote[static_cast<std::size_t>(k - 1)]);
        if (!fa) {
            LOOM_WARN("rail {} to {} unusable ({}); carrying on with {} rail(s)", k, c.peer_name, fa.error().message(), k);
            return;
        }
        c.rail_peer[static_cast<std::size_t>(k)] = *fa;
        c.rails = k + 1;
    }
}

// ---------------------------------------------------------------- submission
auto engine::submit(op& o) noexcept -> int {
    auto code = [](const void_result& r) -> int { return r ? 0 : -r.error().value(); };
    auto control = [&](std::span<const std::byte> msg, std::uint64_t tag, fabric_addr to) -> int {
        if (msg.size() <= inject_size_) {
            const int rc = code(ep_.tagged_inject(msg, tag, to));
            return rc == 0 ? 1 : rc;  // 1: complete already
        }
        return code(ep_.tagged_send(msg, tag, to, nullptr, &o));
    };
    switch (o.kind) {
    case op_kind::send_eager: {
        auto& r = *static_cast<send_request*>(o.owner);
        return code(ep_.tagged_send({r.data, r.size}, make_tag(message_kind::data, r.chan->remote_id, r.seq, r.user_tag),
                                    r.chan->peer, r.desc, &o));
    }
    case op_kind::send_rts: {
        // No payload: the size travels as immediate data, so nothing lands in the user's buffer.
        auto& r = *static_cast<send_request*>(o.owner);
        const int rc = code(ep_.tagged_injectdata({}, make_tag(message_kind::rendezvous_request, r.chan->remote_id, r.seq, r.user_tag), r.size,
                                                  r.chan->peer));
        return rc == 0 ? 1 : rc;
    }
    case op_kind::cts_recv: {
        auto& r = *static_cast<send_request*>(o.owner);
        return code(ep_.tagged_recv(r.cts, make_tag(message_kind::clear_to_send, r.chan->id, r.seq, r.user_tag), 0,
                                    fabric_addrs::unspecified, nullptr, &o));
    }
    case op_kind::rma_write: {
        auto& r = *static_cast<send_request*>(o.owner);
        const std::size_t k = o.slot;
        if (r.src_mr[k] == nullptr) return -FI_EINVAL;
        const std::size_t at = r.stripe_off[k] + r.stripe_done[k];
        const remote_memory remote{r.remote_addr[k] + at, r.remote_key[k], r.chunk[k]};
        return code(rma::write_data_to(rail_ep(static_cast<int>(k)), {r.data + at, r.chunk[k]}, *r.src_mr[k],
                                       r.chan->rail_peer[k], remote, r.imm_base | r.chunk[k], &o));
    }
    case op_kind::recv_slot: {
        auto& r = *static_cast<recv_request*>(o.owner);
        return submit_recv_slot(r, r.slots[o.slot], o);
    }
    case op_kind::cts_send: {
        auto& r = *static_cast<recv_request*>(o.owner);
        auto& s = r.slots[o.slot];
        return control({s.cts.data(), s.cts_len}, make_tag(message_kind::clear_to_send, r.chan->remote_id, s.seq, s.user_tag), r.chan->peer);
    }
    case op_kind::listen_recv: {
        auto& l = *static_cast<listener*>(o.owner);
        return code(ep_.tagged_recv(l.buffer, make_tag(message_kind::control, l.id, 0, 0), 0, fabric_addrs::unspecified, nullptr,
                                    &o));
    }
    case op_kind::connect_send: {
        auto& s = *static_cast<sender*>(o.owner);
        return control({s.connect_msg.data(), s.connect_len}, make_tag(message_kind::control, s.listen_id, 0, 0), s.peer);
    }
    case op_kind::accept_recv: {
        auto& s = *static_cast<sender*>(o.owner);
        return code(ep_.tagged_recv(s.accept_msg, make_tag(message_kind::control, s.id, 0, 0), 0, fabric_addrs::unspecified,
                                    nullptr, &o));
    }
    case op_kind::accept_send: {
        auto& r = *static_cast<receiver*>(o.owner);
        return control({r.accept_msg.data(), r.accept_len}, make_tag(message_kind::control, r.remote_id, 0, 0), r.peer);
    }
    case op_kind::liveness_recv: {
        auto& c = *static_cast<channel_base*>(o.owner);
        return code(ep_.tagged_recv(c.live_buf, make_tag(message_kind::control, c.id, liveness_sequence, 0),
                                    0xffffffffU, fabric_addrs::unspecified, nullptr, &o));
    }
    case op_kind::flush_read: {
        auto& r = *static_cast<recv_request*>(o.owner);
        auto& s = r.slots[o.slot];
        const std::size_t len = std::min<std::size_t>(s.capacity, 8);
        const remote_memory remote{s.raddr[0], s.rkey[0], len};
        return code(rma::read_to(ep_, {flush_buf_.data() + 8 * std::size_t{o.slot}, len}, flush_reg_.region(),
                                 self_addr_, remote, &o));
    }
    }
    return -FI_EINVAL;
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
        rc = ep_.tagged_recv(buf, tag, match_bits::rendezvous_ignore, fabric_addrs::unspecified, small ? nullptr : s.desc, &o);
    }
    return rc ? 0 : -rc.error().value();
}

void engine::post(op& o) noexcept {
    if (request_base* r = owner_request(o)) o.gen = r->gen;
    o.deferred = false;
    settle(o, submit(o));
}

void engine::settle(op& o, int rc) noexcept {
    const bool retried = o.deferred;
    o.deferred = false;
    if (rc == 0 || rc == 1) {
        o.in_flight = rc == 0;  // 1: injected, nothing will complete
        if (request_base* r = owner_request(o); r != nullptr && !o.in_flight) recycle(*r);
        return;
    }
    if (rc == -FI_EAGAIN) {
        const auto now = clock::now();
        if (!retried) {
            ++stats_.eagain_retries;
            o.deferred_since = now;
        }
        if (now - o.deferred_since < cfg_.eagain_timeout) {
            o.deferred = true;
            deferred_.push_back(&o);
            return;
        }
    }
    fail_op(o, rc);
}

void engine::fail_op(op& o, int rc) noexcept {
    request_base* r = owner_request(o);
    LOOM_WARN("{} to {}: {}", rc == -FI_EAGAIN ? "gave up retrying a submission" : "submission failed",
              r != nullptr ? r->chan->peer_name : owner_channel(o)->peer_name,
              rc == -FI_EAGAIN ? "provider busy beyond LOOM_EAGAIN_TIMEOUT_MS" : fi_strerror(-rc));
    if (r != nullptr) {
        fail_request(*r, errc::io_error);
        recycle(*r);
    } else {
        owner_channel(o)->state = chan_state::failed;
    }
}

// ---------------------------------------------------------------- progress
void engine::poll_rail(rail& r) noexcept {
    // The provider's entries in place (read_tagged); everything but an eager message into a
    // live receive goes through dispatch as a typed event (built in a member, once per entry).
    // An error entry stops read_tagged: read() then returns it with its details.
    auto& ents = entries_;
    for (int round = 0; round < 64; ++round) {
        auto n = r.cq.read_tagged(ents);
        if (!n) [[unlikely]] {
            if (n.error() != make_error_code(errc::error_available)) return;
            auto e = r.cq.read(std::span{events_.data(), 1});
            if (e && *e == 1) dispatch(events_[0]);
            continue;
        }
        if (*n == 0) return;
        for (std::size_t i = 0; i < *n; ++i) {
            if (land_eager(ents[i])) continue;
            completion_queue::refill(events_[0], ents[i].native());
            dispatch(events_[0]);
        }
        if (*n < ents.size()) return;
    }
}

auto engine::land_eager(const tagged_completion& c) noexcept -> bool {
    // The common completion, an eager message into a live receive, without dispatch's
    // routing. (The tag is read only for receives: a send's completion leaves it undefined.)
    if (c.context() == nullptr) return false;
    auto* o = static_cast<op*>(c.request());
    if (o->kind != op_kind::recv_slot || match_bits::kind_of(c.tag()) != message_kind::data) return false;
    auto& q = *static_cast<recv_request*>(o->owner);
    if (q.magic.load(std::memory_order_relaxed) != magic_rreq || q.gen != o->gen) return false;
    o->in_flight = false;
    land(q, q.slots[o->slot], c.bytes_transferred());
    return true;
}

void engine::land(recv_request& r, recv_slot& s, std::size_t len) noexcept {
    if (s.done) return;
    ++stats_.recvs;
    s.received = std::min(len, s.capacity);
    if (s.capacity < scratch_size && s.received != 0) std::memcpy(s.data, s.scratch.data(), s.received);
    finish_slot(r, s);
}

void engine::post_unposted() noexcept {
    for (op* o : unposted_) {
        o->deferred = false;
        settle(*o, submit(*o));
    }
    unposted_.clear();
}

void engine::progress() noexcept {
    if (!unposted_.empty()) post_unposted();
    poll_rail(*main_);
    for (auto& r : extra_) poll_rail(*r);
    if (recycle_head_ != nullptr) drain_recycles();
    if (!deferred_.empty()) [[unlikely]] {
        retrying_.swap(deferred_);
        for (op* o : retrying_) settle(*o, submit(*o));
        retrying_.clear();
    }
    // Peer checks at most every 100 ms; the clock is read every 64th call only.
    // A plain increment (only lock holders write it); the watchdog reads it to see the host call.
    const auto calls = progress_calls_.load(std::memory_order_relaxed) + 1;
    progress_calls_.store(calls, std::memory_order_relaxed);
    if ((calls & 63U) == 0) [[unlikely]] {
        const auto now = clock::now();
        coarse_now_ = now;
        if (now >= next_peer_check_) {
            next_peer_check_ = now + std::chrono::milliseconds(100);
            check_peers();
        }
    }
}

void engine::dispatch(const completion_event& ev) noexcept {
    if (ev.context == nullptr) {
        if (!ev.has_error() && ev.flags.has(op_flag::remote_cq_data)) on_remote_write(ev.data);
        else if (ev.has_error()) {
            ++stats_.cq_errors;
            LOOM_WARN("completion error without context: {}", ev.error_text);
        }
        return;
    }
    auto* o = static_cast<op*>(ev.request());
    o->in_flight = false;
    if (ev.has_error() && ev.error != make_error_code(errc::truncated) && ev.error != make_error_code(errc::canceled))
        ++stats_.cq_errors;
    if (request_base* r = owner_request(*o)) {
        const auto m = r->magic.load(std::memory_order_relaxed);
        if (m == (r->is_send ? magic_sreq : magic_rreq) && r->gen == o->gen) {
            if (r->is_send) on_send_op(static_cast<send_request&>(*r), *o, ev);
            else on_recv_op(static_cast<recv_request&>(*r), *o, ev);
        } else if (m == magic_dead && r->released) {
            recycle(*r);  // the last operation of a request the host already handed back
        }
        return;
    }
    switch (o->kind) {
    case op_kind::listen_recv: {
        auto& l = *static_cast<listener*>(o->owner);
        if (l.magic.load(std::memory_order_relaxed) == magic_listen) on_listen(l, ev);
        return;
    }
    case op_kind::connect_send:
        if (ev.has_error()) static_cast<sender*>(o->owner)->state = chan_state::failed;
        return;
    case op_kind::accept_recv: {
        auto& s = *static_cast<sender*>(o->owner);
        if (s.magic.load(std::memory_order_relaxed) == magic_send) on_accept_msg(s, ev);
        return;
    }
    case op_kind::accept_send:
        if (ev.has_error()) static_cast<receiver*>(o->owner)->state = chan_state::failed;
        return;
    case op_kind::liveness_recv: {
        auto& c = *static_cast<channel_base*>(o->owner);
        const auto m = c.magic.load(std::memory_order_relaxed);
        if (m == magic_send || m == magic_recv) on_liveness(c, ev);
        return;
    }
    default: return;  // request operations: handled above
    }
}

void engine::on_send_op(send_request& r, op& o, const completion_event& ev) noexcept {
    if (ev.has_error()) {
        if (!r.done) {
            LOOM_WARN("send to {} failed: {}", r.chan->peer_name, ev.error_text.empty() ? ev.error.message() : ev.error_text);
            fail_request(r, errc::io_error);
        }
        return;
    }
    switch (o.kind) {
    case op_kind::send_eager: r.done = true; break;
    case op_kind::send_rts: break;
    case op_kind::cts_recv: {
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
        if (r.to_write == 0) r.done = true;
        else start_writes(r);
        break;
    }
    case op_kind::rma_write: {
        const std::size_t k = o.slot;
        r.stripe_done[k] += r.chunk[k];
        r.written += r.chunk[k];
        if (r.written >= r.to_write) r.done = true;
        else if (r.stripe_done[k] < r.stripe_len[k]) post_write(r, static_cast<int>(k));
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
            LOOM_WARN("receive from {} failed: {}", r.chan->peer_name, ev.error_text.empty() ? ev.error.message() : ev.error_text);
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
        .target = {.channel = r.chan->id,
                   .request = static_cast<std::uint32_t>(&r - static_cast<receiver*>(r.chan)->pool.data()),
                   .slot = o.slot},
        .capacity = std::min<std::uint64_t>(s.capacity, immediate::length_mask),
        .rails = r.chan->rails};
    for (std::size_t k = 0; k < static_cast<std::size_t>(cts.rails); ++k) cts.rail[k] = {s.raddr[k], s.rkey[k]};
    s.cts_len = encode(cts, s.cts).value();  // fits: cts_max_size bytes, rails and capacity in range
    s.cts_op.kind = op_kind::cts_send;
    s.cts_op.slot = o.slot;
    post(s.cts_op);
    if (s.expected == 0) {
        s.received = 0;
        finish_slot(r, s);
    }
}

void engine::on_remote_write(std::uint64_t imm) noexcept {
    const auto at = immediate::target_of(imm);
    auto it = receivers_.find(at.channel);
    if (it == receivers_.end()) return;  // a late write to a closed channel
    auto& rc = *it->second;
    auto& r = rc.pool[at.request];
    auto& s = r.slots[at.slot];
    if (r.magic.load(std::memory_order_relaxed) != magic_rreq || !s.rendezvous || s.done) return;
    s.landed += immediate::length_of(imm);
    if (s.landed >= s.expected) {
        s.received = s.expected;
        finish_slot(r, s);
    }
}

void engine::fail_request(request_base& r, errc why) noexcept {
    if (r.error == errc::success) r.error = why;
    r.done = true;
}

// ---------------------------------------------------------------- connection set-up
auto engine::listen(handle_bytes& out) -> result<listener*> {
    auto id = new_channel_id();
    if (!id) return std::unexpected(id.error());
    auto h = encode_handle({.channel_id = *id, .flags = 0, .endpoint_address = self_});
    if (!h) return std::unexpected(h.error());
    listener* l = slab_of<listener>().get();
    l->eng = this;
    l->id = *id;
    l->state = chan_state::ready;
    l->arrived.clear();
    l->recv_op = {};
    l->recv_op.owner = l;
    l->recv_op.kind = op_kind::listen_recv;
    l->magic.store(magic_listen);
    post(l->recv_op);
    if (l->recv_op.deferred == false && l->recv_op.in_flight == false) {
        l->magic.store(magic_dead);
        slab_of<listener>().put(l);
        return make_unexpected(errc::io_error);
    }
    out = *h;
    return l;
}

void engine::on_listen(listener& l, const completion_event& ev) noexcept {
    if (ev.has_error()) {
        if (ev.error != make_error_code(errc::canceled)) {
            LOOM_WARN("listen receive failed: {}", ev.error.message());
            post(l.recv_op);
        }
        return;
    }
    auto m = decode_connect({l.buffer.data(), std::min(ev.bytes_transferred, l.buffer.size())});
    if (m && m->listen_channel == l.id) {
        l.arrived.push_back({.sender_id = m->sender_channel,
                             .pid = m->pid,
                             .host = m->host,
                             .peer_address = std::move(m->sender_address),
                             .rail_addresses = std::move(m->rails)});
    } else {
        LOOM_WARN("dropped a malformed connect message ({} bytes)", ev.bytes_transferred);
    }
    post(l.recv_op);
}

auto engine::connect(std::span<const std::byte> handle, const void* key) -> result<sender*> {
    if (auto it = connecting_.find(key); it != connecting_.end() &&
                                         std::ranges::equal(it->second.first, handle.first(handle_size))) {
        progress();
        sender* s = it->second.second;
        if (s->state == chan_state::ready) {
            connecting_.erase(it);
            return s;
        }
        if (s->state == chan_state::failed || clock::now() > s->deadline) {
            connecting_.erase(it);
            LOOM_WARN("connect to {} {}", s->peer_name, s->state == chan_state::failed ? "failed" : "timed out");
            close(*s);
            return make_unexpected(errc::connection_refused);
        }
        return nullptr;
    }
    auto info = decode_handle(handle);
    if (!info) return std::unexpected(info.error());
    if (info->channel_id == 0 || info->channel_id > match_bits::max_channel_id) return make_unexpected(errc::invalid_argument);
    if (native_format(info->endpoint_address) != nic_.info.addr_format() &&
        !(nic_.info.addr_format() == address_format::unspecified))
        return make_unexpected(errc::invalid_argument);
    auto peer = insert_rail_peer(0, info->endpoint_address);
    if (!peer) return std::unexpected(peer.error());
    auto id = new_channel_id();
    if (!id) return std::unexpected(id.error());
    sender* s = slab_of<sender>().get();
    s->eng = this;
    s->id = *id;
    s->listen_id = static_cast<std::uint32_t>(info->channel_id);
    s->peer = *peer;
    s->peer_name = to_string(info->endpoint_address);
    s->state = chan_state::connecting;
    s->deadline = clock::now() + cfg_.connect_timeout;
    s->seqs.reset();
    s->free_list.clear();
    for (int i = send_pool_size - 1; i >= 0; --i) s->free_list.push_back(i);
    for (auto& r : s->pool) {
        r.chan = s;
        r.is_send = true;
        r.main.owner = r.cts_op.owner = &r;
        for (auto& w : r.write_ops) w.owner = &r;
    }
    auto len = encode(connect_message{.sender_channel = s->id,
                                      .listen_channel = s->listen_id,
                                      .pid = static_cast<std::uint32_t>(::getpid()),
                                      .host = host_id_,
                                      .sender_address = self_,
                                      .rails = rail_addresses()},
                      s->connect_msg);
    if (!len) {
        s->magic.store(magic_dead);
        slab_of<sender>().put(s);
        return std::unexpected(len.error());
    }
    s->connect_len = *len;
    s->rails = 1;
    s->rail_peer[0] = s->peer;
    s->accept_op = {};
    s->accept_op.owner = s;
    s->accept_op.kind = op_kind::accept_recv;
    s->connect_op = {};
    s->connect_op.owner = s;
    s->connect_op.kind = op_kind::connect_send;
    s->magic.store(magic_send);
    s->is_sender = true;
    channels_.push_back(s);
    post(s->accept_op);
    post(s->connect_op);
    handle_bytes copy{};
    std::ranges::copy(handle.first(handle_size), copy.begin());
    connecting_[key] = {copy, s};
    progress();
    return nullptr;
}

void engine::on_accept_msg(sender& s, const completion_event& ev) noexcept {
    if (ev.has_error()) {
        if (ev.error != make_error_code(errc::canceled)) s.state = chan_state::failed;
        return;
    }
    auto m = decode_accept({s.accept_msg.data(), std::min(ev.bytes_transferred, s.accept_msg.size())});
    if (!m || m->sender_channel != s.id) {
        LOOM_WARN("malformed accept message from {}", s.peer_name);
        s.state = chan_state::failed;
        return;
    }
    s.remote_id = m->receiver_channel;
    s.peer_pid = m->pid;
    s.peer_host = m->host;
    connect_rails(s, m->rails);
    s.state = chan_state::ready;
    start_liveness(s);
}

auto engine::accept(listener& l) -> result<receiver*> {
    progress();
    if (l.arrived.empty()) return nullptr;
    pending_connect pc = std::move(l.arrived.front());
    l.arrived.pop_front();
    auto peer = insert_rail_peer(0, pc.peer_address);
    if (!peer) return std::unexpected(peer.error());
    auto id = new_channel_id();
    if (!id) return std::unexpected(id.error());
    receiver* r = slab_of<receiver>().get();
    r->eng = this;
    r->id = *id;
    r->remote_id = pc.sender_id;
    r->peer = *peer;
    r->peer_pid = pc.pid;
    r->peer_host = pc.host;
    r->peer_name = to_string(pc.peer_address);
    r->state = chan_state::ready;
    r->seqs.reset();
    r->free_list.clear();
    for (int i = recv_pool_size - 1; i >= 0; --i) r->free_list.push_back(i);
    for (auto& q : r->pool) {
        q.chan = r;
        for (std::uint8_t i = 0; i < max_slots; ++i) {
            q.slots[i].recv_op.owner = q.slots[i].cts_op.owner = &q;
            q.slots[i].recv_op.slot = q.slots[i].cts_op.slot = i;
        }
    }
    auto len = encode(accept_message{.receiver_channel = r->id,
                                     .sender_channel = r->remote_id,
                                     .pid = static_cast<std::uint32_t>(::getpid()),
                                     .host = host_id_,
                                     .rails = rail_addresses()},
                      r->accept_msg);
    if (!len) {
        r->magic.store(magic_dead);
        slab_of<receiver>().put(r);
        return std::unexpected(len.error());
    }
    r->accept_len = *len;
    connect_rails(*r, pc.rail_addresses);
    r->accept_op = {};
    r->accept_op.owner = r;
    r->accept_op.kind = op_kind::accept_send;
    r->magic.store(magic_recv);
    receivers_[r->id] = r;
    // Room for every receive this engine's channels can queue: irecv never allocates.
    unposted_.reserve(receivers_.size() * static_cast<std::size_t>(recv_pool_size * max_slots));
    r->is_sender = false;
    channels_.push_back(r);
    post(r->accept_op);
    start_liveness(*r);
    return r;
}

// ---------------------------------------------------------------- registration
auto engine::hmem() const noexcept -> bool {
    const ::fi_info* info = nic_.info.native();
    return info != nullptr && (info->caps & FI_HMEM) != 0;
}

auto locate_cuda_memory(const engine& e, const void* data, std::size_t size) -> result<device_memory> {
    if (!e.hmem()) {
        LOOM_WARN("CUDA memory registration requested, but {} was not opened with FI_HMEM", e.nic_info().provider);
        return make_unexpected(errc::not_supported);
    }
    auto cuda = gpu::cuda_driver::instance();
    if (!cuda) {
        LOOM_WARN("CUDA memory registration requested without a CUDA driver: {}", gpu::cuda_driver::unavailable_reason());
        return make_unexpected(errc::not_supported);
    }
    auto where = (*cuda)->pointer_info(data);
    if (!where || where->type != gpu::memory_type::device ||
        reinterpret_cast<std::uintptr_t>(data) + size > where->base + where->size) {
        LOOM_WARN("registration of {} bytes of device memory at {}: not inside one device allocation", size, data);
        return make_unexpected(errc::invalid_argument);
    }
    return device_memory{.iface = hmem_iface::cuda, .device = static_cast<std::uint64_t>(where->device)};
}

auto engine::register_memory(void* data, std::size_t size, const device_memory* dev) -> result<memory_handle*> {
    if (data == nullptr || size == 0) return make_unexpected(errc::invalid_argument);
    const std::span<std::byte> buf{static_cast<std::byte*>(data), size};
    if (dev != nullptr && dev->iface != hmem_iface::system && !hmem()) return make_unexpected(errc::not_supported);
    if (dev != nullptr && dev->dmabuf_fd >= 0 &&
        (dev->dmabuf_offset > reinterpret_cast<std::uintptr_t>(data)))  // base = data - offset must not wrap
        return make_unexpected(errc::invalid_argument);
    auto lookup = [&](int k) -> result<mr_handle> {
        if (dev == nullptr) return rail_cache(k).lookup(buf, full_access);
        auto& c = *rail_at(k).dev_cache;
        if (dev->dmabuf_fd < 0) return c.lookup_device(buf, dev->iface, dev->device, full_access);
        const dmabuf_region region{.fd = dev->dmabuf_fd,
                                   .offset = dev->dmabuf_offset,
                                   .length = size,
                                   .base_addr = static_cast<std::byte*>(data) - dev->dmabuf_offset};
        return c.lookup_dmabuf(region, dev->iface, dev->device, full_access);
    };
    auto h = lookup(0);
    if (!h) return std::unexpected(h.error());
    memory_handle* m = slab_of<memory_handle>().get();
    for (int k = 1; k < rail_count(); ++k) {
        auto x = lookup(k);
        if (!x) {
            for (auto& y : m->extra) y.release();
            slab_of<memory_handle>().put(m);
            return std::unexpected(x.error());
        }
        m->extra[static_cast<std::size_t>(k - 1)] = std::move(*x);
    }
    m->device = dev != nullptr && dev->iface != hmem_iface::system;
    m->eng = this;
    m->reg = std::move(*h);
    m->base = static_cast<std::byte*>(data);
    m->length = size;
    m->magic.store(magic_mr);
    return m;
}

void engine::deregister(memory_handle& m) noexcept {
    m.magic.store(magic_dead);
    m.reg.release();
    for (auto& x : m.extra) x.release();
    m.eng = nullptr;
    slab_of<memory_handle>().put(&m);
}



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
        s.raddr[i] = virt ? reinterpret_cast<std::uintptr_t>(s.data) : static_cast<std::uint64_t>(s.data - reg->address());
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
        s->free_list.push_back(static_cast<int>(&q - s->pool.data()));
    } else {
        auto& q = static_cast<recv_request&>(r);
        for (int i = 0; i < q.n; ++i) {
            auto& s = q.slots[static_cast<std::size_t>(i)];
            if (s.has_key)
                for (auto& h : s.tmp) h.release();
        }
        auto* rc = static_cast<receiver*>(r.chan);
        rc->free_list.push_back(static_cast<int>(&q - rc->pool.data()));
    }
    r.released = false;
}

void engine::cancel_ops(request_base& r) noexcept {
    // Queued submissions are dropped; posted receives are cancelled (their completion, with
    // FI_ECANCELED, recycles the request); posted sends run to completion.
    for_each_op(r, [&](op& o) {
        if (o.deferred) {
            std::erase(deferred_, &o);
            std::erase(unposted_, &o);
            o.deferred = false;
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
            if (n_sizes > 0) sizes[0] = q.rendezvous ? q.to_write : q.size;
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
        flush_buf_.resize(8 * max_slots);
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

// ---------------------------------------------------------------- closing
void engine::drain(channel_base& c, const std::function<bool()>& pending) noexcept {
    const auto deadline = clock::now() + std::min(cfg_.peer_timeout, std::chrono::milliseconds(5000));
    while (pending() && clock::now() < deadline) {
        progress();
        if (!peer_alive(c)) break;
        relax_lock();
    }
}

void engine::relax_lock() noexcept {
    // The caller holds the engine lock (every engine call does): give other threads a turn at
    // the engine during a wait that may last seconds, instead of making them spin for it.
    mu_.unlock();
    std::this_thread::yield();
    mu_.lock();
}

void engine::close(listener& l) noexcept {
    l.magic.store(magic_dead);
    if (l.recv_op.deferred) std::erase(deferred_, &l.recv_op);
    if (l.recv_op.in_flight) {
        (void)ep_.cancel(&l.recv_op);
        const auto deadline = clock::now() + std::chrono::milliseconds(1000);
        while (l.recv_op.in_flight && clock::now() < deadline) {
            progress();
            relax_lock();
        }
    }
    l.state = chan_state::closed;
    if (!l.recv_op.in_flight) slab_of<listener>().put(&l);  // otherwise retired for good
}

template <class C>
void engine::retire(C& c, std::initializer_list<op*> own) noexcept {
    drain_recycles();  // nothing of this channel's pool may stay on the list past its close
    for (auto& r : c.pool) {
        if (r.active) {
            fail_request(r, errc::io_error);
            release(r);
        }
    }
    for (op* o : own) {
        if (o->deferred) {
            std::erase(deferred_, o);
            o->deferred = false;
        }
        if (o->in_flight && cancellable(*o)) (void)ep_.cancel(o);
    }
    auto pending = [&] {
        return std::ranges::any_of(own, [](const op* o) { return o->in_flight; }) ||
               std::ranges::any_of(c.pool, [](auto& r) { return ops_busy(r); });
    };
    drain(c, pending);
    std::erase(channels_, &c);
    c.magic.store(magic_dead);
    c.state = chan_state::closed;
    if (!pending()) slab_of<C>().put(&c);  // otherwise retired for good: a late completion may name it
}

void engine::close(sender& s) noexcept {
    std::erase_if(connecting_, [&](const auto& kv) { return kv.second.second == &s; });
    // Outstanding sends get the chance to finish (the peer may still be receiving them); what
    // is left is failed and its cancellable parts cancelled.
    drain(s, [&] { return std::ranges::any_of(s.pool, [](const send_request& r) { return r.active && !r.done; }); });
    retire(s, {&s.connect_op, &s.accept_op, &s.live_op});
}

void engine::close(receiver& rc) noexcept {
    receivers_.erase(rc.id);
    retire(rc, {&rc.accept_op, &rc.live_op});
}

}  // namespace loom::plugins
