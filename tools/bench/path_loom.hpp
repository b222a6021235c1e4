// tools/bench/path_loom.hpp — the loom paths (loom, sender, asio): one class template over the
// front end, each instantiated in its own source file (path_loom.cpp, path_sender.cpp,
// path_asio.cpp) so that one front end's code does not change how the compiler builds another's.
// The loom core API: query_all → fabric → domain → completion_queue / address_vector →
// endpoint, registered buffers, tagged_send / tagged_recv and batched completion reads in place
// (completion_queue::read_tagged);
// loom::rma::write_to / read_to and loom::atomic::fetch_add_to for the one-sided operations.
// Same hints, objects and loops as the raw path. As the "sender" path, the same objects with
// every operation a loom::execution sender (connected into per-slot storage, started, completed
// through loom::execution::poll_completions): the cost of the sender front end over the core.
// As the "asio" path, every operation a loom::asio::endpoint operation with a handler, run by
// the io_context (run_one) whose fabric_service polls the queue: the cost of the Asio front end.
// Its ping-pongs are handler chains (run_chain), the way an Asio program or coroutine runs
// them; the other operations use the shared loops, waiting between operations.
#pragma once

#include <array>
#include <cstring>
#include <loom/asio.hpp>
#include <loom/execution.hpp>
#include <loom/loom.hpp>
#include <optional>

#include "path.hpp"

namespace loom::bench::loom_paths {

inline auto err(const char* what, const std::error_code& ec) -> std::string {
    return std::string(what) + ": " + ec.message();
}

/// The sender path's receiver: marks its slot done with the length (receives, RMA) or the
/// fetched value (atomics); an error ends the run.
template <class Path>
struct slot_receiver {
    using receiver_concept = loom::execution::receiver_t;
    Path* p;
    int slot;
    void set_value() && noexcept { p->st_.done[slot] = true; }
    void set_value(std::size_t n) && noexcept {
        p->st_.done[slot] = true;
        p->st_.len[slot] = n;
    }
    void set_error(std::error_code ec) && noexcept { p->sender_failed("completion", ec); }
    void set_stopped() && noexcept { p->sender_failed("stopped", make_error_code(loom::errc::canceled)); }
};

/// The Asio path's handler: marks its slot done with the length; an error ends the run.
template <class Path>
struct slot_handler {
    Path* p;
    int slot;
    void operator()(std::error_code ec, std::size_t n) const {
        if (ec) [[unlikely]]
            return p->sender_failed("completion", ec);
        p->st_.done[slot] = true;
        p->st_.len[slot] = n;
        if (p->chain_.active) p->chain_advance(slot);
    }
};

enum class front_end { core, senders, asio };

/// One code copy of the path (path.hpp: place_copy); every copy is the same code.
template <int Copy, front_end FE = front_end::core>
class loom_path final : public path {
    // open() runs its steps (below) through open_in_steps.
    template <class P>
    friend auto loom::bench::open_in_steps(P& p, const path_config& cfg, const buffers& buf, channel& ch,
                                           std::string& rma_note, std::string& atomic_note) -> std::string;
    static constexpr bool Senders = FE == front_end::senders;
    static constexpr bool Asio = FE == front_end::asio;
    using receiver = slot_receiver<loom_path>;
    friend receiver;
    friend slot_handler<loom_path>;
    template <class Sender>
    using op_slots = std::array<std::optional<loom::execution::connect_result_t<Sender, receiver>>, slot_count>;

public:
    auto name() const -> std::string override { return Senders ? "sender" : Asio ? "asio" : "loom"; }
    auto unsupported(operation op) const -> std::string override {
        if (is_rma(op)) return rma_note_;
        if (is_atomic(op)) return Asio ? "the Asio front end has no atomics" : atomic_note_;
        return {};
    }
    auto domain_name() const -> std::string override { return std::string(info_.domain_name()); }

    auto open(const path_config& cfg, const buffers& buf, channel& ch, int) -> std::string override {
        buf_ = buf;
        if (auto e = open_in_steps(*this, cfg, buf, ch, rma_note_, atomic_note_); !e.empty()) return e;
        if constexpr (Asio) return start_asio();
        return {};
    }

    auto run(operation op, int rank, std::size_t n, int iterations, int window) -> std::string override {
        if constexpr (Asio) {
            if (op == operation::pingpong || op == operation::pingpong_untagged)
                return run_chain(rank == 0, n, iterations, op == operation::pingpong);
        }
        return run_reporting(*this, error_, op, rank, n, iterations, window);
    }

    // ------------------------------------------------------------ primitives (see path.hpp)

    auto post_send(int slot, std::size_t offset, std::size_t n, bool tagged, bool control) -> bool {
        const std::span<const std::byte> data{control ? buf_.tx + buf_.capacity : buf_.tx + offset, n};
        if constexpr (Asio) {
            const loom::asio::const_registered_buffer b{::asio::buffer(data.data(), n), &tx_mr_};
            if (tagged)
                aep_->async_tagged_send_to(b, *peer_, control ? tag_ack : tag_data,
                                           slot_handler<loom_path>{this, slot});
            else
                aep_->async_send_to(b, *peer_, slot_handler<loom_path>{this, slot});
            return !sender_failed_;
        }
        if constexpr (Senders) {
            auto messages = loom::async(ep_);
            return start_in(send_ops_[slot],
                            tagged ? messages.tagged_send_to(data, tx_desc_, *peer_, control ? tag_ack : tag_data, &cq_)
                                   : messages.send_to(data, tx_desc_, *peer_, &cq_),
                            slot);
        }
        for (;;) {
            auto r = tagged ? ep_.tagged_send(data, control ? tag_ack : tag_data, *peer_, tx_desc_, &st_.ctx[slot])
                            : ep_.send(data, *peer_, tx_desc_, &st_.ctx[slot]);
            if (r) [[likely]]
                return true;
            if (!loom::is_again(r.error())) return fail("send", r.error());
            if (!progress()) return false;
        }
    }
    auto post_recv(int slot, std::size_t offset, std::size_t n, bool tagged, bool control) -> bool {
        const std::span<std::byte> data{control ? buf_.rx + buf_.capacity : buf_.rx + offset, n};
        st_.expect[slot] = n;
        if constexpr (Asio) {
            const loom::asio::mutable_registered_buffer b{::asio::buffer(data.data(), n), &rx_mr_};
            if (tagged)
                aep_->async_tagged_receive(b, control ? tag_ack : tag_data, 0, slot_handler<loom_path>{this, slot});
            else
                aep_->async_receive(b, slot_handler<loom_path>{this, slot});
            return !sender_failed_;
        }
        if constexpr (Senders) {
            auto messages = loom::async(ep_);
            const auto any = loom::fabric_addrs::unspecified;
            return start_in(recv_ops_[slot],
                            tagged
                                ? messages.tagged_recv_from(data, rx_desc_, any, control ? tag_ack : tag_data, 0, &cq_)
                                : messages.recv_from(data, rx_desc_, any, &cq_),
                            slot);
        }
        for (;;) {
            auto r = tagged ? ep_.tagged_recv(data, control ? tag_ack : tag_data, 0, loom::fabric_addrs::unspecified,
                                              rx_desc_, &st_.ctx[slot])
                            : ep_.recv(data, loom::fabric_addrs::unspecified, rx_desc_, &st_.ctx[slot]);
            if (r) [[likely]]
                return true;
            if (!loom::is_again(r.error())) return fail("recv", r.error());
            if (!progress()) return false;
        }
    }
    /// Writes tx[offset, +n) into the peer's rx at the same offset, or reads the peer's tx
    /// there into rx.
    auto post_rma(int slot, std::size_t offset, std::size_t n, bool read) -> bool {
        if constexpr (Asio) {
            const auto& remote = read ? peer_tx_ : peer_rx_;
            auto at = remote.subregion(offset, n);
            if (!at) return fail("remote range", at.error());
            if (read)
                aep_->async_read_from(::asio::buffer(buf_.rx + offset, n), rx_mr_, *peer_, *at,
                                      slot_handler<loom_path>{this, slot});
            else
                aep_->async_write_to(::asio::buffer(buf_.tx + offset, n), tx_mr_, *peer_, *at,
                                     slot_handler<loom_path>{this, slot});
            return !sender_failed_;
        }
        if constexpr (Senders) {
            auto remote = (read ? peer_tx_ : peer_rx_).subregion(offset, n);
            if (!remote) return fail("remote range", remote.error());
            auto one_sided = loom::rma_async(ep_);
            return start_in(rma_ops_[slot],
                            read ? one_sided.read_from({buf_.rx + offset, n}, rx_mr_, *peer_, *remote, &cq_)
                                 : one_sided.write_to({buf_.tx + offset, n}, tx_mr_, *peer_, *remote, &cq_),
                            slot);
        }
        for (;;) {
            auto remote = (read ? peer_tx_ : peer_rx_).subregion(offset, n);
            if (!remote) return fail("remote range", remote.error());
            auto r =
                read ? loom::rma::read_to(ep_, std::span{buf_.rx + offset, n}, rx_mr_, *peer_, *remote, &st_.ctx[slot])
                     : loom::rma::write_to(ep_, std::span<const std::byte>{buf_.tx + offset, n}, tx_mr_, *peer_,
                                           *remote, &st_.ctx[slot]);
            if (r) [[likely]]
                return true;
            if (!loom::is_again(r.error())) return fail(read ? "rma read" : "rma write", r.error());
            if (!progress()) return false;
        }
    }
    /// Adds the operand (1) to the peer's counter, fetching the previous value into result slot `slot`.
    auto post_fadd(int slot) -> bool {
        if constexpr (Asio)
            return fail("fetch_add", make_error_code(loom::errc::not_supported));
        else if constexpr (Senders)
            return start_in(fadd_ops_[slot],
                            loom::rma_async(ep_).fetch_add_to(*buf_.operand(), &tx_mr_, buf_.fetch_results()[slot],
                                                              &rx_mr_, *peer_, peer_counter_, &cq_),
                            slot);
        for (;;) {
            auto r = loom::atomic::fetch_add_to<std::uint64_t>(ep_, *buf_.operand(), buf_.fetch_results() + slot,
                                                               &tx_mr_, &rx_mr_, *peer_, peer_counter_, &st_.ctx[slot]);
            if (r) [[likely]]
                return true;
            if (!loom::is_again(r.error())) return fail("fetch_add", r.error());
            if (!progress()) return false;
        }
    }
    auto wait(int slot) -> bool {
        return st_.wait(slot, error_, [this] { return progress(); });
    }

private:
    // ------------------------------------------------------------ open(), step by step (open_in_steps)
    /// The provider's info for the capabilities asked (dropping RMA, then atomics, where it has
    /// none), on the loopback domain unless cfg.domain names one.
    auto choose_info(const path_config& cfg, bool& rma, bool& atomic) -> std::string {
        auto query = [&] {
            auto caps = loom::capability::msg | loom::capability::tagged;
            if (rma) caps = caps | loom::capability::rma;
            if (atomic) caps = caps | loom::capability::atomic;
            return loom::query_all({.capabilities = caps,
                                    .ep_type = loom::endpoint_types::rdm,
                                    .provider = cfg.provider,
                                    .threading = cfg.threading});
        };
        auto all = query();
        while (!all && all.error() == make_error_code(loom::errc::no_data) && (rma || atomic)) {
            drop_capability(rma, atomic, rma_note_, atomic_note_, cfg.provider);
            all = query();
        }
        if (!all) return err("query_all", all.error());
        info_ = *all->begin();
        for (const auto& i : *all) {
            if ((!cfg.domain.empty() && i.domain_name() == cfg.domain) ||
                (cfg.domain.empty() && (i.domain_name() == "lo" || i.provider_name() == "shm"))) {
                info_ = i;
                break;
            }
        }
        return {};
    }
    /// Fabric, domain, queue, address vector and the enabled endpoint.
    auto create_objects() -> std::string {
        auto f = loom::fabric::create(info_);
        if (!f) return err("fabric", f.error());
        fabric_ = std::move(*f);
        auto d = loom::domain::create(fabric_, info_);
        if (!d) return err("domain", d.error());
        domain_ = std::move(*d);
        auto c = loom::completion_queue::create(domain_, {.size = 128});
        if (!c) return err("completion_queue", c.error());
        cq_ = std::move(*c);
        auto a = loom::address_vector::create(domain_);
        if (!a) return err("address_vector", a.error());
        av_ = std::move(*a);
        auto e = loom::endpoint::create(domain_, info_);
        if (!e) return err("endpoint", e.error());
        ep_ = std::move(*e);
        if (auto r = ep_.bind_cq(cq_, loom::cq_bind::transmit | loom::cq_bind::recv); !r)
            return err("bind_cq", r.error());
        if (auto r = ep_.bind_av(av_); !r) return err("bind_av", r.error());
        if (auto r = ep_.enable(); !r) return err("enable", r.error());
        return {};
    }
    auto has_fetch_add() -> bool {
        std::size_t count = 0;
        return loom::atomic::is_fetch_valid(ep_, loom::atomic::operation::sum, loom::atomic::datatype::uint64,
                                            &count) &&
               count >= 1;
    }
    /// tx: source of writes and fetch-add operands, target of the peer's reads; rx: target of
    /// the peer's writes and atomics, sink of reads and fetch results.
    auto register_buffers(const buffers& buf, bool rma, bool atomic) -> std::string {
        using acc = loom::mr_access_flags;
        acc tx_access = acc::send, rx_access = acc::recv;
        if (rma) {
            tx_access = tx_access | acc::write | acc::remote_read;
            rx_access = rx_access | acc::read | acc::remote_write;
        }
        if (atomic) {
            tx_access = tx_access | acc::write;
            rx_access = rx_access | acc::read | acc::remote_read | acc::remote_write;
        }
        auto t = loom::memory_region::register_memory(domain_, std::span{buf.tx, buf.registered_size()}, tx_access);
        if (!t) return err("register tx", t.error());
        tx_mr_ = std::move(*t);
        auto r = loom::memory_region::register_memory(domain_, std::span{buf.rx, buf.registered_size()}, rx_access);
        if (!r) return err("register rx", r.error());
        rx_mr_ = std::move(*r);
        tx_desc_ = tx_mr_.descriptor();
        rx_desc_ = rx_mr_.descriptor();
        return {};
    }
    /// Each side's address (its format first) to the other; the peer's goes into the AV.
    auto exchange_addresses(channel& ch) -> std::string {
        auto me = ep_.name();
        if (!me) return err("name", me.error());
        const auto raw = loom::to_raw(*me);
        std::vector<std::byte> mine(4 + raw.size());
        const auto fmt = static_cast<std::uint32_t>(loom::native_format(*me));
        std::memcpy(mine.data(), &fmt, 4);
        std::memcpy(mine.data() + 4, raw.data(), raw.size());
        std::vector<std::byte> theirs;
        if (!ch.send_blob(mine) || !ch.recv_blob(theirs) || theirs.size() < 4) return "address exchange failed";
        std::uint32_t peer_fmt = 0;
        std::memcpy(&peer_fmt, theirs.data(), 4);
        auto peer = loom::address_from_raw(static_cast<loom::address_format>(peer_fmt),
                                           std::span<const std::byte>{theirs}.subspan(4));
        if (!peer) return err("peer address", peer.error());
        auto h = av_.insert(*peer);
        if (!h) return err("av insert", h.error());
        peer_.emplace(*h);
        return {};
    }
    /// The registrations' remote views (remote_memory::from_mr: virtual address or offset per
    /// the domain's mr_mode), exchanged for the one-sided operations.
    auto exchange_regions(channel& ch, const buffers& buf) -> std::string {
        auto tx_remote = loom::remote_memory::from_mr(tx_mr_);
        if (!tx_remote) return err("remote_memory tx", tx_remote.error());
        auto rx_remote = loom::remote_memory::from_mr(rx_mr_);
        if (!rx_remote) return err("remote_memory rx", rx_remote.error());
        const remote_regions mine{tx_remote->addr, tx_remote->key, rx_remote->addr, rx_remote->key,
                                  buf.registered_size()};
        remote_regions theirs_r;
        if (!ch.send(&mine, sizeof mine) || !ch.recv(&theirs_r, sizeof theirs_r)) return "registration exchange failed";
        peer_tx_ = {theirs_r.tx_addr, theirs_r.tx_key, theirs_r.length};
        peer_rx_ = {theirs_r.rx_addr, theirs_r.rx_key, theirs_r.length};
        auto c = peer_rx_.subregion(buf.capacity + buffers::atomic_offset, sizeof(std::uint64_t));
        if (!c) return err("remote counter", c.error());
        peer_counter_ = *c;
        return {};
    }
    /// The asio path: its io_context, the Asio endpoint over the native one, the service.
    auto start_asio() -> std::string {
        // A domain whose threading model has the program serialize its calls (--threading
        // domain or completion) is used from this one thread: the io_context is told so too.
        const bool one_thread = loom::serializes_queue_access(info_.get_domain_attr()->threading);
        ioc_.emplace(one_thread ? ASIO_CONCURRENCY_HINT_UNSAFE : ASIO_CONCURRENCY_HINT_DEFAULT);
        // progress() drives run_one between operations; with work of its own the io_context
        // does not stop (and need a restart) each time no operation is outstanding.
        work_.emplace(ioc_->get_executor());
        aep_.emplace(*ioc_, std::move(ep_), cq_, cq_);
        auto& service = loom::asio::fabric_service::use(*ioc_);
        if (auto r = service.register_cq(cq_); !r) return err("register_cq", r.error());
        service.start();
        return {};
    }

    /// The asio path's ping-pong as an Asio program writes it: each handler starts the next
    /// operation (pingpong_loop's order), and the io_context runs them.
    auto run_chain(bool initiator, std::size_t n, int iterations, bool tagged) -> std::string {
        error_.clear();
        if (iterations <= 0) return {};
        chain_ = {true, initiator, tagged, n, iterations, 0, false};
        chain_iteration();
        unsigned spins = 0;
        auto deadline = std::chrono::steady_clock::time_point::max();
        while (!chain_.finished && !sender_failed_) {
            ioc_->run_one();
            if ((++spins & 0xfffU) == 0) {
                const auto now = std::chrono::steady_clock::now();
                if (deadline == std::chrono::steady_clock::time_point::max()) deadline = now + wait_limit;
                if (now > deadline) {
                    error_ = "ping-pong chain: no completion within the wait limit";
                    break;
                }
            }
        }
        chain_.active = false;
        return chain_.finished && error_.empty() ? std::string{} : (error_.empty() ? "failed" : error_);
    }
    void chain_iteration() {
        const int s = 0, r = max_window;
        chain_.pending = 2;  // its receive and its send
        if (!post_recv(r, 0, chain_.n, chain_.tagged, false)) return;
        if (chain_.initiator) (void)post_send(s, 0, chain_.n, chain_.tagged, false);
    }
    void chain_advance(int slot) {
        if (!st_.consume(slot, error_)) {
            sender_failed_ = true;
            return;
        }
        if (--chain_.pending != 0) {
            if (!chain_.initiator && is_receive_slot(slot)) (void)post_send(0, 0, chain_.n, chain_.tagged, false);
            return;
        }
        if (--chain_.left == 0) {
            chain_.finished = true;
            return;
        }
        chain_iteration();
    }

    /// Connects `s` into the slot's storage (the previous operation there has completed) and starts it.
    template <class Op, class Sender>
    auto start_in(std::optional<Op>& storage, Sender&& s, int slot) -> bool {
        auto& op = storage.emplace(loom::execution::detail::emplace_from{
            [&] { return loom::execution::connect(static_cast<Sender&&>(s), receiver{this, slot}); }});
        loom::execution::start(op);
        return !sender_failed_;
    }
    void sender_failed(const char* what, const std::error_code& ec) noexcept {
        sender_failed_ = true;
        fail(what, ec);
    }
    auto progress() -> bool {
        if constexpr (Asio) {
            ioc_->run_one();
            return !sender_failed_;
        }
        if constexpr (Senders) {
            auto r = loom::execution::poll_completions(cq_);
            if (r.unhandled) [[unlikely]]
                return fail("unhandled completion", r.unhandled->error);
            return !sender_failed_;
        }
        // The provider's entries as they are (completion_queue::read_tagged); an error entry
        // is then read with its details as a typed event.
        auto n = cq_.read_tagged(st_.entries);
        if (!n) [[unlikely]] {
            if (n.error() != make_error_code(loom::errc::error_available)) return fail("cq read", n.error());
            std::array<loom::completion_event, 1> ev;
            auto e = cq_.read(ev);
            if (!e) return fail("cq read", e.error());
            if (*e == 1 && ev[0].has_error())
                error_ = "completion error: " + ev[0].error.message() + " (" + ev[0].error_text + ")";
            else
                error_ = "completion error announced, none read";
            return false;
        }
        for (std::size_t i = 0; i < *n; ++i) {
            const auto slot = static_cast<std::size_t>(st_.entries[i].request() - st_.ctx.data());
            st_.done[slot] = true;
            st_.len[slot] = st_.entries[i].bytes_transferred();
        }
        return true;
    }
    auto fail(const char* what, const std::error_code& ec) -> bool {
        error_ = err(what, ec);
        return false;
    }

    // Members are destroyed in reverse order: endpoint and registrations before the domain.
    buffers buf_{};
    loom::fabric_info info_;
    loom::fabric fabric_;
    loom::domain domain_;
    loom::completion_queue cq_;
    loom::address_vector av_;
    loom::memory_region tx_mr_, rx_mr_;
    loom::endpoint ep_;
    void* tx_desc_{nullptr};
    void* rx_desc_{nullptr};
    /// What av.insert returned: a peer_addr, so sends to it go straight to the provider.
    std::optional<loom::peer_addr> peer_;
    loom::remote_memory peer_tx_{}, peer_rx_{}, peer_counter_{};
    std::string rma_note_, atomic_note_;
    slot_state<loom::request_context, loom::tagged_completion> st_;
    std::string error_;
    bool sender_failed_{false};
    op_slots<loom::message_senders::send_sender> send_ops_;
    op_slots<loom::message_senders::receive_sender> recv_ops_;
    op_slots<decltype(loom::rma_async(std::declval<loom::endpoint&>())
                          .read_from({}, std::declval<const loom::memory_region&>(), {}, {}, nullptr))>
        rma_ops_;
    op_slots<decltype(loom::rma_async(std::declval<loom::endpoint&>())
                          .fetch_add_to(std::declval<const std::uint64_t&>(), nullptr, std::declval<std::uint64_t&>(),
                                        nullptr, {}, {}, nullptr))>
        fadd_ops_;
    // Destroyed first: the Asio endpoint (which holds the native endpoint), then its io_context.
    std::optional<::asio::io_context> ioc_;  // made by open(): its concurrency hint follows the domain
    std::optional<::asio::executor_work_guard<::asio::io_context::executor_type>> work_;
    std::optional<loom::asio::endpoint> aep_;
    /// The asio path's ping-pong chain (run_chain).
    struct chain_state {
        bool active{false};
        bool initiator{false};
        bool tagged{true};
        std::size_t n{0};
        int left{0};
        int pending{0};
        bool finished{false};
    } chain_;
};

template <int Copy>
using core_path = loom_path<Copy, front_end::core>;
template <int Copy>
using sender_path = loom_path<Copy, front_end::senders>;
template <int Copy>
using asio_path = loom_path<Copy, front_end::asio>;

}  // namespace loom::bench::loom_paths
