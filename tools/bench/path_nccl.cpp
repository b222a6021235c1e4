// The NCCL net plugin, driven as NCCL drives it: dlopen(RTLD_NOW | RTLD_LOCAL) of the built
// libnccl-net-loom.so, dlsym("ncclNetPlugin_v12"), init with a context, listen / connect /
// accept in both directions (a send comm and a receive comm per rank), regMr once per buffer,
// then isend / irecv / test. The plugin picks its provider from LOOM_PROVIDER / LOOM_IFACE,
// which loom-bench sets before loading it.
#include <dlfcn.h>

#include <array>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <loom/nccl/net_abi.hpp>

#include "path.hpp"

namespace loom::bench {
namespace {

using namespace loom::nccl_abi;

void plugin_logger(int level, unsigned long, const char* file, int line, const char* fmt, ...) {
    if (level > log_warn || level == log_none) return;
    std::va_list ap;
    va_start(ap, fmt);
    std::fprintf(stderr, "[loom-bench nccl plugin %s:%d] ", file, line);
    std::vfprintf(stderr, fmt, ap);
    std::fprintf(stderr, "\n");
    va_end(ap);
}

/// One code copy of the path (path.hpp: place_copy); every copy is the same code.
template <int Copy>
class nccl_path final : public path {
public:
    ~nccl_path() override {
        if (net_ == nullptr) return;
        if (send_comm_ != nullptr && tx_mh_ != nullptr) net_->deregMr(send_comm_, tx_mh_);
        if (recv_comm_ != nullptr && rx_mh_ != nullptr) net_->deregMr(recv_comm_, rx_mh_);
        if (send_comm_ != nullptr) net_->closeSend(send_comm_);
        if (recv_comm_ != nullptr) net_->closeRecv(recv_comm_);
        if (listen_comm_ != nullptr) net_->closeListen(listen_comm_);
        if (initialized_) net_->finalize(ctx_);
        // The library stays loaded: its runtime may still own threads or atexit handlers.
    }
    auto name() const -> std::string override { return name_; }
    auto unsupported(operation op) const -> std::string override {
        switch (op) {
            case operation::pingpong_untagged: return "the NCCL net ABI has no untagged messages";
            case operation::rma_write:
            case operation::rma_read: return "the NCCL net ABI has no RMA";
            case operation::atomic_fadd: return "the NCCL net ABI has no atomics";
            default: return {};
        }
    }
    auto domain_name() const -> std::string override { return domain_; }

    auto open(const path_config& cfg, const buffers& buf, channel& ch, int) -> std::string override {
        buf_ = buf;
        name_ = cfg.nccl_path_name;
        lib_ = ::dlopen(cfg.nccl_plugin.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (lib_ == nullptr) return std::string("dlopen: ") + ::dlerror();
        net_ = static_cast<const net_v12*>(::dlsym(lib_, "ncclNetPlugin_v12"));
        if (net_ == nullptr) return "dlsym ncclNetPlugin_v12: not exported by " + cfg.nccl_plugin;
        if (int rc = net_->init(&ctx_, 0x6c6f6f6dULL, nullptr, plugin_logger, nullptr); rc != success)
            return "init: " + std::to_string(rc);
        initialized_ = true;
        int ndev = 0;
        if (net_->devices(&ndev) != success || ndev < 1) return "devices: none";
        properties_v12 props{};
        if (net_->getProperties(0, &props) == success && props.name != nullptr) domain_ = props.name;
        max_bytes_ = props.maxP2pBytes;
        std::array<char, handle_maxsize> mine{}, theirs{};
        if (int rc = net_->listen(ctx_, 0, mine.data(), &listen_comm_); rc != success)
            return "listen: " + std::to_string(rc);
        if (!ch.send(mine.data(), mine.size()) || !ch.recv(theirs.data(), theirs.size()))
            return "handle exchange failed";
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (send_comm_ == nullptr || recv_comm_ == nullptr) {
            if (send_comm_ == nullptr) {
                device_handle_v12* dh = nullptr;
                if (int rc = net_->connect(ctx_, 0, theirs.data(), &send_comm_, &dh); rc != success)
                    return "connect: " + std::to_string(rc);
            }
            if (recv_comm_ == nullptr) {
                device_handle_v12* dh = nullptr;
                if (int rc = net_->accept(listen_comm_, &recv_comm_, &dh); rc != success)
                    return "accept: " + std::to_string(rc);
            }
            if (std::chrono::steady_clock::now() > deadline) return "connect/accept timed out";
        }
        if (int rc = net_->regMr(send_comm_, buf.tx, buf.registered_size(), ptr_host, &tx_mh_); rc != success)
            return "regMr tx: " + std::to_string(rc);
        if (int rc = net_->regMr(recv_comm_, buf.rx, buf.registered_size(), ptr_host, &rx_mh_); rc != success)
            return "regMr rx: " + std::to_string(rc);
        return {};
    }

    auto run(operation op, int rank, std::size_t n, int iterations, int window) -> std::string override {
        if (max_bytes_ != 0 && n > max_bytes_) return "size above the plugin's maxP2pBytes";
        error_.clear();
        bool ok = false;
        switch (op) {
            case operation::pingpong: ok = pingpong_loop(*this, rank == 0, n, iterations, true); break;
            case operation::stream:
            case operation::msgrate: ok = stream_loop(*this, rank == 0, n, iterations, window); break;
            default: error_ = unsupported(op); break;
        }
        return ok ? std::string{} : (error_.empty() ? std::string("failed") : error_);
    }

    // ------------------------------------------------------------ primitives (see path.hpp)

    auto post_send(int slot, std::size_t offset, std::size_t n, bool, bool control) -> bool {
        void* p = control ? buf_.tx + buf_.capacity : buf_.tx + offset;
        const int tag = static_cast<int>(control ? tag_ack : tag_data);
        req_[slot] = nullptr;
        unsigned spins = 0;
        while (req_[slot] == nullptr) {
            if (int rc = net_->isend(send_comm_, p, n, tag, tx_mh_, nullptr, &req_[slot]); rc != success)
                return fail("isend", rc);
            if (req_[slot] == nullptr && !spin_guard(spins)) return false;
        }
        return true;
    }
    auto post_recv(int slot, std::size_t offset, std::size_t n, bool, bool control) -> bool {
        void* p = control ? buf_.rx + buf_.capacity : buf_.rx + offset;
        int tag = static_cast<int>(control ? tag_ack : tag_data);
        std::size_t size = n;
        expect_[slot] = n;
        req_[slot] = nullptr;
        unsigned spins = 0;
        while (req_[slot] == nullptr) {
            if (int rc = net_->irecv(recv_comm_, 1, &p, &size, &tag, &rx_mh_, nullptr, &req_[slot]); rc != success)
                return fail("irecv", rc);
            if (req_[slot] == nullptr && !spin_guard(spins)) return false;
        }
        return true;
    }
    auto wait(int slot) -> bool {
        unsigned spins = 0;
        int done = 0, size = -1;
        for (;;) {
            if (int rc = net_->test(req_[slot], &done, &size); rc != success) return fail("test", rc);
            if (done != 0) break;
            if (!spin_guard(spins)) return false;
        }
        const bool is_recv = is_receive_slot(slot);
        if (is_recv && static_cast<std::size_t>(size) != expect_[slot]) {
            error_ = "receive of " + std::to_string(expect_[slot]) + " bytes completed with " + std::to_string(size);
            return false;
        }
        return true;
    }

private:
    auto spin_guard(unsigned& spins) -> bool {
        if ((++spins & 0xfffU) != 0) return true;
        const auto now = std::chrono::steady_clock::now();
        if (spins == 0x1000U) deadline_ = now + wait_limit;
        if (now > deadline_) {
            error_ = "request never completed (waited " + std::to_string(wait_limit.count()) + " s)";
            return false;
        }
        return true;
    }
    auto fail(const char* what, int rc) -> bool {
        error_ = std::string(what) + " returned " + std::to_string(rc);
        return false;
    }

    buffers buf_{};
    void* lib_{nullptr};
    const net_v12* net_{nullptr};
    void* ctx_{nullptr};
    bool initialized_{false};
    void* listen_comm_{nullptr};
    void* send_comm_{nullptr};
    void* recv_comm_{nullptr};
    void* tx_mh_{nullptr};
    void* rx_mh_{nullptr};
    std::size_t max_bytes_{0};
    std::array<void*, slot_count> req_{};
    std::array<std::size_t, slot_count> expect_{};
    std::chrono::steady_clock::time_point deadline_{};
    std::string error_;
    std::string domain_;
    std::string name_{"nccl"};
};

}  // namespace

auto make_nccl_path(std::size_t offset, std::size_t copy) -> path_ptr { return place_copy<nccl_path>(copy, offset); }

}  // namespace loom::bench
