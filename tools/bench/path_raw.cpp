// The floor: plain libfabric C calls, written for the benchmark, with the same hints, objects,
// registrations and loops as the loom path.
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <array>
#include <cstring>
#include <string_view>

#include "path.hpp"

namespace loom::bench {
namespace {

auto fi_err(const char* what, long rc) -> std::string {
    return std::string(what) + ": " + ::fi_strerror(static_cast<int>(-rc)) + " (" + std::to_string(rc) + ")";
}

/// One code copy of the path (path.hpp: place_copy); every copy is the same code.
template <int Copy>
class raw_path final : public path {
    // open() runs its steps (below) through open_in_steps.
    template <class P>
    friend auto loom::bench::open_in_steps(P& p, const path_config& cfg, const buffers& buf, channel& ch,
                                           std::string& rma_note, std::string& atomic_note) -> std::string;

public:
    ~raw_path() override { close_all(); }
    auto name() const -> std::string override { return "raw"; }
    auto unsupported(operation op) const -> std::string override {
        if (is_rma(op)) return rma_note_;
        if (is_atomic(op)) return atomic_note_;
        return {};
    }
    auto domain_name() const -> std::string override { return domain_; }

    auto open(const path_config& cfg, const buffers& buf, channel& ch, int) -> std::string override {
        buf_ = buf;
        return open_in_steps(*this, cfg, buf, ch, rma_note_, atomic_note_);
    }

    auto run(operation op, int rank, std::size_t n, int iterations, int window) -> std::string override {
        return run_reporting(*this, error_, op, rank, n, iterations, window);
    }

    // ------------------------------------------------------------ primitives (see path.hpp)

    auto post_send(int slot, std::size_t offset, std::size_t n, bool tagged, bool control) -> bool {
        std::byte* p = control ? buf_.tx + buf_.capacity : buf_.tx + offset;
        const std::uint64_t tag = control ? tag_ack : tag_data;
        for (;;) {
            const ssize_t rc = tagged ? ::fi_tsend(ep_, p, n, tx_desc_, peer_, tag, &st_.ctx[slot])
                                      : ::fi_send(ep_, p, n, tx_desc_, peer_, &st_.ctx[slot]);
            if (rc == 0) [[likely]]
                return true;
            if (rc != -FI_EAGAIN) return fail("fi_tsend", rc);
            if (!progress()) return false;
        }
    }
    auto post_recv(int slot, std::size_t offset, std::size_t n, bool tagged, bool control) -> bool {
        std::byte* p = control ? buf_.rx + buf_.capacity : buf_.rx + offset;
        const std::uint64_t tag = control ? tag_ack : tag_data;
        st_.expect[slot] = n;
        for (;;) {
            const ssize_t rc = tagged ? ::fi_trecv(ep_, p, n, rx_desc_, FI_ADDR_UNSPEC, tag, 0, &st_.ctx[slot])
                                      : ::fi_recv(ep_, p, n, rx_desc_, FI_ADDR_UNSPEC, &st_.ctx[slot]);
            if (rc == 0) [[likely]]
                return true;
            if (rc != -FI_EAGAIN) return fail("fi_trecv", rc);
            if (!progress()) return false;
        }
    }
    /// Writes tx[offset, +n) into the peer's rx at the same offset, or reads the peer's tx
    /// there into rx.
    auto post_rma(int slot, std::size_t offset, std::size_t n, bool read) -> bool {
        for (;;) {
            const ssize_t rc = read ? ::fi_read(ep_, buf_.rx + offset, n, rx_desc_, peer_, remote_.tx_addr + offset,
                                                remote_.tx_key, &st_.ctx[slot])
                                    : ::fi_write(ep_, buf_.tx + offset, n, tx_desc_, peer_, remote_.rx_addr + offset,
                                                 remote_.rx_key, &st_.ctx[slot]);
            if (rc == 0) [[likely]]
                return true;
            if (rc != -FI_EAGAIN) return fail(read ? "fi_read" : "fi_write", rc);
            if (!progress()) return false;
        }
    }
    /// Adds the operand (1) to the peer's counter, fetching the previous value into result slot `slot`.
    auto post_fadd(int slot) -> bool {
        for (;;) {
            const ssize_t rc =
                ::fi_fetch_atomic(ep_, buf_.operand(), 1, tx_desc_, buf_.fetch_results() + slot, rx_desc_, peer_,
                                  remote_.rx_addr + buf_.capacity + buffers::atomic_offset, remote_.rx_key, FI_UINT64,
                                  FI_SUM, &st_.ctx[slot]);
            if (rc == 0) [[likely]]
                return true;
            if (rc != -FI_EAGAIN) return fail("fi_fetch_atomic", rc);
            if (!progress()) return false;
        }
    }
    auto wait(int slot) -> bool {
        return st_.wait(slot, error_, [this] { return progress(); });
    }

private:
    // ------------------------------------------------------------ open(), step by step (open_in_steps)
    /// fi_getinfo for exactly cfg.provider with the capabilities asked (dropping RMA, then
    /// atomics, where it has none), on the loopback domain unless cfg.domain names one.
    auto choose_info(const path_config& cfg, bool& rma, bool& atomic) -> std::string {
        int grc = 0;
        for (;;) {
            ::fi_info* hints = ::fi_allocinfo();
            if (hints == nullptr) return "fi_allocinfo failed";
            hints->caps = FI_MSG | FI_TAGGED | (rma ? FI_RMA : 0) | (atomic ? FI_ATOMIC : 0);
            hints->mode = FI_CONTEXT | FI_CONTEXT2;
            hints->ep_attr->type = FI_EP_RDM;
            hints->fabric_attr->prov_name = ::strdup(cfg.provider.c_str());
            hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
            static_assert(static_cast<int>(loom::threading_mode::domain) == FI_THREAD_DOMAIN &&
                          static_cast<int>(loom::threading_mode::completion) == FI_THREAD_COMPLETION &&
                          static_cast<int>(loom::threading_mode::safe) == FI_THREAD_SAFE);
            hints->domain_attr->threading = static_cast<::fi_threading>(cfg.threading);
            grc = ::fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), nullptr, nullptr, 0, hints, &list_);
            ::fi_freeinfo(hints);
            // Exactly the provider asked for (as loom's query_all): fi_getinfo("tcp") with
            // FI_ATOMIC answers with tcp;ofi_rxm, a different provider.
            if (grc == 0 && exact(list_, cfg.provider) == nullptr) {
                ::fi_freeinfo(list_);
                list_ = nullptr;
                grc = -FI_ENODATA;
            }
            if (grc != -FI_ENODATA || (!rma && !atomic)) break;
            drop_capability(rma, atomic, rma_note_, atomic_note_, cfg.provider);
        }
        if (grc != 0) return fi_err("fi_getinfo", grc);
        info_ = exact(list_, cfg.provider);
        for (::fi_info* i = list_; i != nullptr; i = i->next) {
            if (i->fabric_attr->prov_name == nullptr || cfg.provider != i->fabric_attr->prov_name) continue;
            const std::string_view dom = i->domain_attr->name != nullptr ? i->domain_attr->name : "";
            const std::string_view prov = i->fabric_attr->prov_name != nullptr ? i->fabric_attr->prov_name : "";
            if ((!cfg.domain.empty() && dom == cfg.domain) || (cfg.domain.empty() && (dom == "lo" || prov == "shm"))) {
                info_ = i;
                break;
            }
        }
        domain_ = info_->domain_attr->name != nullptr ? info_->domain_attr->name : "";
        return {};
    }
    /// Fabric, domain, queue, address vector and the enabled endpoint.
    auto create_objects() -> std::string {
        if (int rc = ::fi_fabric(info_->fabric_attr, &fabric_, nullptr); rc != 0) return fi_err("fi_fabric", rc);
        if (int rc = ::fi_domain(fabric_, info_, &domain_h_, nullptr); rc != 0) return fi_err("fi_domain", rc);
        ::fi_cq_attr cq_attr{};
        cq_attr.size = 128;
        cq_attr.format = FI_CQ_FORMAT_TAGGED;
        cq_attr.wait_obj = FI_WAIT_NONE;
        if (int rc = ::fi_cq_open(domain_h_, &cq_attr, &cq_, nullptr); rc != 0) return fi_err("fi_cq_open", rc);
        ::fi_av_attr av_attr{};
        if (int rc = ::fi_av_open(domain_h_, &av_attr, &av_, nullptr); rc != 0) return fi_err("fi_av_open", rc);
        if (int rc = ::fi_endpoint(domain_h_, info_, &ep_, nullptr); rc != 0) return fi_err("fi_endpoint", rc);
        if (int rc = ::fi_ep_bind(ep_, &cq_->fid, FI_TRANSMIT | FI_RECV); rc != 0) return fi_err("fi_ep_bind cq", rc);
        if (int rc = ::fi_ep_bind(ep_, &av_->fid, 0); rc != 0) return fi_err("fi_ep_bind av", rc);
        if (int rc = ::fi_enable(ep_); rc != 0) return fi_err("fi_enable", rc);
        return {};
    }
    auto has_fetch_add() -> bool {
        std::size_t count = 0;
        return ::fi_fetch_atomicvalid(ep_, FI_UINT64, FI_SUM, &count) == 0 && count >= 1;
    }
    /// Without FI_MR_PROV_KEY the application picks the keys: two distinct ones. tx is the
    /// source of writes and fetch-add operands and the target of the peer's reads; rx the
    /// target of the peer's writes and atomics and the sink of reads and fetch results.
    auto register_buffers(const buffers& buf, bool rma, bool atomic) -> std::string {
        const bool prov_key = (info_->domain_attr->mr_mode & FI_MR_PROV_KEY) != 0;
        std::uint64_t tx_access = FI_SEND, rx_access = FI_RECV;
        if (rma) {
            tx_access |= FI_WRITE | FI_REMOTE_READ;
            rx_access |= FI_READ | FI_REMOTE_WRITE;
        }
        if (atomic) {
            tx_access |= FI_WRITE;
            rx_access |= FI_READ | FI_REMOTE_READ | FI_REMOTE_WRITE;
        }
        if (int rc = ::fi_mr_reg(domain_h_, buf.tx, buf.registered_size(), tx_access, 0, prov_key ? 0 : 1, 0, &tx_mr_,
                                 nullptr);
            rc != 0)
            return fi_err("fi_mr_reg tx", rc);
        if (int rc = ::fi_mr_reg(domain_h_, buf.rx, buf.registered_size(), rx_access, 0, prov_key ? 0 : 2, 0, &rx_mr_,
                                 nullptr);
            rc != 0)
            return fi_err("fi_mr_reg rx", rc);
        tx_desc_ = ::fi_mr_desc(tx_mr_);
        rx_desc_ = ::fi_mr_desc(rx_mr_);
        return {};
    }
    /// Each side's endpoint name to the other; the peer's goes into the AV.
    auto exchange_addresses(channel& ch) -> std::string {
        std::vector<std::byte> name(256);
        std::size_t len = name.size();
        if (int rc = ::fi_getname(&ep_->fid, name.data(), &len); rc != 0) return fi_err("fi_getname", rc);
        name.resize(len);
        std::vector<std::byte> peer;
        if (!ch.send_blob(name) || !ch.recv_blob(peer)) return "address exchange failed";
        if (int rc = ::fi_av_insert(av_, peer.data(), 1, &peer_, 0, nullptr); rc != 1)
            return fi_err("fi_av_insert", rc);
        return {};
    }
    /// RMA addresses: virtual addresses under FI_MR_VIRT_ADDR, offsets into the registration
    /// otherwise; exchanged with the keys for the one-sided operations.
    auto exchange_regions(channel& ch, const buffers& buf) -> std::string {
        const bool virt = (info_->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0;
        const remote_regions mine{virt ? reinterpret_cast<std::uintptr_t>(buf.tx) : 0, ::fi_mr_key(tx_mr_),
                                  virt ? reinterpret_cast<std::uintptr_t>(buf.rx) : 0, ::fi_mr_key(rx_mr_),
                                  buf.registered_size()};
        if (mine.tx_key == FI_KEY_NOTAVAIL || mine.rx_key == FI_KEY_NOTAVAIL)
            return "fi_mr_key: no scalar key (raw keys are not handled)";
        if (!ch.send(&mine, sizeof mine) || !ch.recv(&remote_, sizeof remote_)) return "registration exchange failed";
        return {};
    }

    /// The first entry of `list` from exactly provider `prov`.
    static auto exact(::fi_info* list, const std::string& prov) -> ::fi_info* {
        for (::fi_info* i = list; i != nullptr; i = i->next)
            if (i->fabric_attr->prov_name != nullptr && prov == i->fabric_attr->prov_name) return i;
        return nullptr;
    }
    auto progress() -> bool {
        auto& ev = st_.entries;
        const ssize_t n = ::fi_cq_read(cq_, ev.data(), ev.size());
        if (n > 0) {
            for (ssize_t i = 0; i < n; ++i) {
                const auto slot =
                    static_cast<::fi_context2*>(ev[static_cast<std::size_t>(i)].op_context) - st_.ctx.data();
                st_.done[static_cast<std::size_t>(slot)] = true;
                st_.len[static_cast<std::size_t>(slot)] = ev[static_cast<std::size_t>(i)].len;
            }
            return true;
        }
        if (n == -FI_EAGAIN) return true;
        if (n == -FI_EAVAIL) {
            ::fi_cq_err_entry err{};
            ::fi_cq_readerr(cq_, &err, 0);
            error_ = std::string("completion error: ") + ::fi_strerror(err.err) + " (" +
                     ::fi_cq_strerror(cq_, err.prov_errno, err.err_data, nullptr, 0) + ")";
            return false;
        }
        return fail("fi_cq_read", n);
    }
    auto fail(const char* what, long rc) -> bool {
        error_ = fi_err(what, rc);
        return false;
    }
    void close_all() {
        auto close = [](auto*& f) {
            if (f != nullptr) ::fi_close(&f->fid);
            f = nullptr;
        };
        close(ep_);
        close(tx_mr_);
        close(rx_mr_);
        close(av_);
        close(cq_);
        close(domain_h_);
        close(fabric_);
        if (list_ != nullptr) ::fi_freeinfo(list_);
        list_ = nullptr;
    }

    buffers buf_{};
    ::fi_info* list_{nullptr};
    ::fi_info* info_{nullptr};
    ::fid_fabric* fabric_{nullptr};
    ::fid_domain* domain_h_{nullptr};
    ::fid_cq* cq_{nullptr};
    ::fid_av* av_{nullptr};
    ::fid_ep* ep_{nullptr};
    ::fid_mr* tx_mr_{nullptr};
    ::fid_mr* rx_mr_{nullptr};
    void* tx_desc_{nullptr};
    void* rx_desc_{nullptr};
    ::fi_addr_t peer_{FI_ADDR_UNSPEC};
    remote_regions remote_{};
    std::string rma_note_, atomic_note_;
    slot_state<::fi_context2, ::fi_cq_tagged_entry> st_;
    std::string error_;
    std::string domain_;
};

}  // namespace

auto make_raw_path(std::size_t offset, std::size_t copy) -> path_ptr { return place_copy<raw_path>(copy, offset); }

}  // namespace loom::bench
