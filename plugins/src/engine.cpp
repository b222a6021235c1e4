// The engine: set-up and teardown of its rails (fabric, domain, endpoint, queue, AV, caches).
#include "engine_internals.hpp"

#include <loom/gpu/cuda.hpp>
#include <loom/plugins/liveness.hpp>
#include <loom/plugins/log.hpp>
#include <loom/provider_facts.hpp>

#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <malloc.h>

#include <algorithm>
#include <cstring>
#include <mutex>

namespace loom::plugins {

using namespace engine_detail;
using match_bits::make_tag;

// ---------------------------------------------------------------- tag sequences
void tag_sequences::reset() noexcept { e_ = {}; }

// ---------------------------------------------------------------- engine set-up
auto engine::open(const nic& n, const config& cfg) -> result<std::unique_ptr<engine>> {
    return open(std::vector<nic>{n}, cfg);
}

namespace {
// Where sending to an endpoint closed in the same process crashes the provider (shm), a closing
// engine leaves its rails open and unpolled while other engines of the process live: their
// sends to it then meet a silent peer (the peer monitor's business), not a crash. The last
// engine of the process closes them all. Never destroyed: nothing closes at exit.
struct engines_of_process {
    std::mutex mu;
    int alive{0};
    std::vector<std::unique_ptr<rail>> kept;
};
auto engines() -> engines_of_process& {
    static auto* e = new engines_of_process;
    return *e;
}
}  // namespace

auto engine::keep_rails_for_local_peers() noexcept -> bool {
    auto& all = engines();
    std::lock_guard lock(all.mu);
    --all.alive;
    if (provider_facts_for(nic_.provider).unsafe_close_with_local_peers && all.alive > 0) {
        discard_reg_.release();
        flush_reg_.release();
        all.kept.push_back(std::move(main_));
        for (auto& r : extra_) all.kept.push_back(std::move(r));
        extra_.clear();
        return true;
    }
    if (all.alive == 0) all.kept.clear();
    return false;
}

namespace {
auto liveness_text(const engine& e) -> std::string {
    switch (e.route_of_liveness()) {
        case liveness_route::with_the_data: return "with the data";
        case liveness_route::own_endpoint: return "on its own endpoint";
        case liveness_route::another_provider:
            return "on its own endpoint of " + std::string(provider_facts_for(e.nic_info().provider).liveness_provider);
    }
    return {};
}
}  // namespace

auto engine::open(const std::vector<nic>& nics, const config& cfg) -> result<std::unique_ptr<engine>> {
    if (nics.empty() || nics.size() > static_cast<std::size_t>(max_rails) || cfg.peer_timeout < min_peer_timeout)
        return make_unexpected(errc::invalid_argument);
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
    e->open_liveness_endpoint();
    e->host_id_ = this_host_id();
    e->pid_ends_peer_ = !provider_facts_for(n.provider).sent_data_outlives_sender;
    e->submissions_.reserve(1024);
    e->submissions_.set_timeout(cfg.eagain_timeout);
    e->unposted_.reserve(1024);
    if (cfg.progress_thread) e->mu_.make_plain();  // two busy threads: no owner to favour
    {
        std::lock_guard lock(engines().mu);
        ++engines().alive;
        e->counted_ = true;
    }
    e->progress_thread_ = std::thread([self = e.get()] { self->watchdog(); });
    const std::size_t kept = e->cache_->limits().max_entries;
    LOOM_INFO(
        "engine on {} ({}, {} rail{}): eager <= {} B, rendezvous {}, inject {} B, {} idle registrations "
        "kept, completion queue of {}, liveness {}",
        n.name, n.provider, nics.size(), nics.size() == 1 ? "" : "s", e->eager_max_,
        n.rma ? "RMA write + immediate data" : "off (no RMA)", e->inject_size_,
        kept == mr_cache_limits::unbounded ? std::string("all") : std::to_string(kept), cfg.cq_size, liveness_text(*e));
    return e;
}

engine::~engine() {
    stop_.store(true);
    if (progress_thread_.joinable()) progress_thread_.join();
    LOOM_INFO("engine closing: {} submissions retried after FI_EAGAIN, {} completion errors, {} peers declared dead",
              stats_.eagain_retries, stats_.cq_errors, stats_.peers_declared_dead);
    if (counted_ && keep_rails_for_local_peers()) return;
    // Channels still open at this point are the host's leak; their ops may still sit in the
    // provider, which closing the endpoint below discards.
    extra_.clear();
    (void)ep_.close();
    discard_reg_.release();
    flush_reg_.release();
    main_.reset();  // cache, AV, CQ, domain, fabric in that order (rail's member order)
#if defined(__GLIBC__)
    // The provider's pools are freed now (ofi_rxm's receive pool alone is ~120 MiB). Once
    // glibc's dynamic mmap threshold has risen, such blocks come from and go back to its heap,
    // which keeps them resident: a host that opens and closes engines (a transport initialised
    // and finalized again and again) grew by up to that much per malloc arena. Hand the free
    // pages back.
    (void)::malloc_trim(0);
#endif
}

namespace {
/// `a` in `av`, inserted once (`peers` keeps the handles by raw address).
auto insert_peer(address_vector& av, std::map<std::string, fabric_addr, std::less<>>& peers, const address& a)
    -> result<fabric_addr> {
    const auto bytes = to_raw(a);
    std::string raw(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    if (auto it = peers.find(raw); it != peers.end()) return it->second;
    auto fa = av.insert(a);
    if (!fa) return std::unexpected(fa.error());
    peers.emplace(std::move(raw), *fa);
    return *fa;
}
}  // namespace

void engine::open_liveness_endpoint() noexcept {
    const auto wanted = cfg_.liveness_endpoint;
    const auto facts = provider_facts_for(nic_.provider);
    if (wanted == tristate::off || (wanted == tristate::automatic && !facts.own_liveness_endpoint)) return;
    auto& r = *main_;
    auto link = facts.liveness_provider.empty() ? open_liveness_link(r.dom, r.cq, nic_)
                                                : open_liveness_link(facts.liveness_provider, nic_);
    if (!link) {
        // Liveness still works without it, only behind the data.
        LOOM_WARN("no liveness endpoint on {} ({}): pings and pongs go with the data", nic_.name,
                  link.error().message());
        return;
    }
    r.live = std::move(*link);
    for (std::size_t i = 0; i < live_recvs_.size(); ++i) {
        live_recvs_[i] = {};
        live_recvs_[i].owner = this;
        live_recvs_[i].kind = op_kind::liveness_any;
        live_recvs_[i].slot = static_cast<std::uint8_t>(i);
        post(live_recvs_[i]);
    }
}

auto engine::liveness_address() const -> std::optional<address> {
    if (!main_->live.is_open()) return std::nullopt;
    return main_->live.end.self;
}

auto engine::route_of_liveness() const noexcept -> liveness_route {
    if (!main_->live.is_open()) return liveness_route::with_the_data;
    return main_->live.has_own_queue() ? liveness_route::another_provider : liveness_route::own_endpoint;
}

void engine::connect_liveness(channel_base& c, const std::optional<address>& remote) noexcept {
    c.live->via = fabric_addrs::unspecified;
    if (!remote || !main_->live.is_open()) return;
    auto fa = insert_peer(main_->live.end.av, main_->live.peers, *remote);
    if (!fa) {
        LOOM_WARN("liveness endpoint of {} unusable ({}); pings go with the data", c.peer_name, fa.error().message());
        return;
    }
    c.live->via = *fa;
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

auto engine::rail_one_sided(int i) const noexcept -> std::uint64_t {
    if (i < 0 || i > static_cast<int>(extra_.size())) return 0;
    return i == 0 ? main_->one_sided : extra_[static_cast<std::size_t>(i - 1)]->one_sided;
}

auto engine::insert_rail_peer(int k, const address& a) -> result<fabric_addr> {
    auto& r = rail_at(k);
    return insert_peer(r.av, r.peers, a);
}

auto engine::rail_addresses() const -> std::vector<address> {
    std::vector<address> out;
    out.reserve(extra_.size());
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
            LOOM_WARN("rail {} to {} unusable ({}); carrying on with {} rail(s)", k, c.peer_name, fa.error().message(),
                      k);
            return;
        }
        c.rail_peer[static_cast<std::size_t>(k)] = *fa;
        c.rails = k + 1;
    }
}

void engine::fail_request(request_base& r, errc why) noexcept {
    if (r.error == errc::success) r.error = why;
    r.done = true;
}

}  // namespace loom::plugins
