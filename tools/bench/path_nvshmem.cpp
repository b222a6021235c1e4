// The nvshmem path: the built nvshmem_transport_libfabric.so.4, loaded and driven through its
// host ops as NVSHMEM's core and proxy drive a remote transport: nvshmemt_init, a bootstrap
// over the bench channel, connect_endpoints, the two buffers registered with get_mem_handle and
// their handles exchanged, then rma (non-blocking puts and gets, --window of them, then quiet)
// and amo (fetch-add on the peer's counter). The target's progress runs in a thread while the
// initiator measures, as NVSHMEM's proxy thread would. The transport picks its provider from
// LOOM_PROVIDER / LOOM_IFACE, which loom-bench sets.
#include <dlfcn.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "../../nvshmem-transport/src/transport_abi.hpp"
#include "path.hpp"

namespace loom::bench {
namespace {

namespace abi = loom::nvshmem::abi;

struct boot_state {
    channel* ch{nullptr};
    int rank{0};
};

// Two ranks: this rank's part goes to the peer, and each part lands at its rank's place.
int channel_allgather(const void* send, void* recv, int bytes, abi::bootstrap_handle* h) {
    auto* s = static_cast<boot_state*>(h->comm_state);
    auto* out = static_cast<std::byte*>(recv);
    const auto n = static_cast<std::size_t>(bytes);
    std::memcpy(out + static_cast<std::size_t>(s->rank) * n, send, n);
    if (!s->ch->send(send, n) || !s->ch->recv(out + static_cast<std::size_t>(1 - s->rank) * n, n)) return 1;
    return 0;
}
int channel_barrier(abi::bootstrap_handle* h) { return static_cast<boot_state*>(h->comm_state)->ch->barrier() ? 0 : 1; }

auto nvshmem_error(const char* what, int rc) -> std::string {
    return std::string(what) + ": NVSHMEM status " + std::to_string(rc);
}

/// One code copy of the path (path.hpp: place_copy); every copy is the same code.
template <int Copy>
class nvshmem_path final : public path {
public:
    ~nvshmem_path() override {
        if (t_ == nullptr) return;
        for (auto* h : {&tx_, &rx_})
            if (h == &tx_ ? tx_registered_ : rx_registered_) (void)t_->ops.release_mem_handle(h, t_);
        (void)t_->ops.finalize(t_);
    }
    auto name() const -> std::string override { return "nvshmem"; }
    auto unsupported(operation op) const -> std::string override {
        if (op == operation::rma_write || op == operation::rma_read || op == operation::atomic_fadd) return {};
        return "NVSHMEM's transport moves data one-sided only (put, get, atomics)";
    }

    auto open(const path_config& cfg, const buffers& buf, channel& ch, int rank) -> std::string override {
        buf_ = buf;
        boot_ = {.ch = &ch, .rank = rank};
        void* lib = ::dlopen(cfg.nvshmem_transport.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (lib == nullptr) return std::string("dlopen: ") + ::dlerror();
        auto init = reinterpret_cast<abi::init_fn>(::dlsym(lib, "nvshmemt_init"));
        if (init == nullptr) return "no nvshmemt_init in " + cfg.nvshmem_transport;
        if (int rc = init(&t_, nullptr, abi::interface_version); rc != 0) return nvshmem_error("nvshmemt_init", rc);
        handle_ = {.version = 1,
                   .pg_rank = rank,
                   .pg_size = 2,
                   .mype_node = rank,
                   .npes_node = 2,
                   .allgather = channel_allgather,
                   .alltoall = nullptr,
                   .barrier = channel_barrier,
                   .global_exit = nullptr,
                   .finalize = nullptr,
                   .show_info = nullptr,
                   .pre_init_ops = nullptr,
                   .comm_state = &boot_};
        t_->boot_handle = &handle_;
        t_->my_pe = rank;
        t_->n_pes = 2;
        int dev = 0, qps[2] = {};
        if (int rc = t_->ops.connect_endpoints(t_, &dev, 1, qps, 2); rc != 0)
            return nvshmem_error("connect_endpoints", rc);
        if (int rc = t_->ops.get_mem_handle(&tx_, buf.tx, buf.registered_size(), t_, false); rc != 0)
            return nvshmem_error("get_mem_handle", rc);
        tx_registered_ = true;
        if (int rc = t_->ops.get_mem_handle(&rx_, buf.rx, buf.registered_size(), t_, false); rc != 0)
            return nvshmem_error("get_mem_handle", rc);
        rx_registered_ = true;
        const std::array<std::uint64_t, 2> mine{reinterpret_cast<std::uint64_t>(buf.tx),
                                                reinterpret_cast<std::uint64_t>(buf.rx)};
        if (!ch.send(&tx_, sizeof tx_) || !ch.send(&rx_, sizeof rx_) || !ch.send(mine.data(), sizeof mine) ||
            !ch.recv(&peer_tx_, sizeof peer_tx_) || !ch.recv(&peer_rx_, sizeof peer_rx_) ||
            !ch.recv(peer_.data(), sizeof peer_))
            return "handle exchange failed";
        return ch.barrier() ? std::string{} : "barrier failed";
    }

    auto run(operation op, int rank, std::size_t n, int iterations, int window) -> std::string override {
        if (rank != 0) return serve();
        for (int i = 0; i < iterations; ++i) {
            for (int k = 0; k < window; ++k) {
                const int rc = op == operation::atomic_fadd ? fetch_add(k) : rma(op == operation::rma_read, k, n);
                if (rc != 0) [[unlikely]]
                    return nvshmem_error(op == operation::atomic_fadd ? "amo" : "rma", rc);
            }
            if (int rc = t_->ops.quiet(t_, 1, 0); rc != 0) [[unlikely]]
                return nvshmem_error("quiet", rc);
        }
        const char done = 'd';
        return boot_.ch->send(&done, 1) ? std::string{} : "closing message failed";
    }

private:
    /// Slot k: bytes [k·n, (k+1)·n) — a put from tx into the peer's rx, a get of the peer's tx
    /// into rx (the raw path's addresses).
    auto rma(bool read, int k, std::size_t n) -> int {
        const std::size_t off = static_cast<std::size_t>(k) * n;
        abi::rma_verb verb{read ? abi::op_get : abi::op_put, 1, 0, nullptr};
        abi::rma_memdesc remote{reinterpret_cast<void*>((read ? peer_[0] : peer_[1]) + off), off,
                                read ? &peer_tx_ : &peer_rx_};
        abi::rma_memdesc local{(read ? buf_.rx : buf_.tx) + off, off, read ? &rx_ : &tx_};
        return t_->ops.rma(t_, 1, verb, &remote, &local, {n, 1, 1, 1}, 0);
    }
    /// Fetch-add of 1 on the peer's counter; the old value into rx slot k·8.
    auto fetch_add(int k) -> int {
        abi::amo_memdesc target{};
        target.remote_memdesc = {reinterpret_cast<void*>(peer_[1] + buf_.capacity + buffers::atomic_offset),
                                 buf_.capacity + buffers::atomic_offset, &peer_rx_};
        target.val = 1;
        target.retptr = buf_.fetch_results() + k;
        return t_->ops.amo(t_, 1, target.retptr, {abi::amo_fetch_add, 1, 1, 0}, &target, {0, 8}, 0);
    }
    /// The target: its progress in a thread (NVSHMEM's proxy) until the initiator is done.
    auto serve() -> std::string {
        std::atomic<bool> stop{false};
        std::thread progress([&] {
            while (!stop.load(std::memory_order_relaxed)) (void)t_->ops.progress(t_);
        });
        char done = 0;
        const bool got = boot_.ch->recv(&done, 1);
        stop = true;
        progress.join();
        return got && done == 'd' ? std::string{} : "no closing message";
    }

    buffers buf_{};
    boot_state boot_{};
    abi::bootstrap_handle handle_{};
    abi::transport* t_{nullptr};
    abi::mem_handle tx_{}, rx_{}, peer_tx_{}, peer_rx_{};
    bool tx_registered_{false}, rx_registered_{false};
    std::array<std::uint64_t, 2> peer_{};
};

}  // namespace

auto make_nvshmem_path(std::size_t offset, std::size_t copy) -> path_ptr {
    return place_copy<nvshmem_path>(copy, offset);
}

}  // namespace loom::bench
