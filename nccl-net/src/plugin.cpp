// libnccl-net-loom.so — NCCL's network-plugin ABI (v6 … v12) over the loom plugin runtime.
// One implementation with size_t sizes (this file); the per-version tables are thin shims over
// it (versions.cpp).
// Nothing throws across the ABI: every entry point catches, validates and returns a code.
#include "plugin.hpp"
#include <loom/gpu/cuda.hpp>

#include <loom/nccl/net_abi.hpp>
#include <loom/plugins/config.hpp>
#include <loom/plugins/engine.hpp>
#include <loom/plugins/log.hpp>
#include <loom/plugins/runtime.hpp>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace loom::nccl_net {

namespace lp = loom::plugins;

namespace {

constexpr std::size_t max_bytes = std::size_t{1} << 30;  // maxP2pBytes / maxCollBytes (≤ v8: int sizes)
constexpr int max_comms = 65536;

/// What the adaptor keeps of its host: the profiler callback (the logger goes to the runtime's
/// log). Configuration, devices and the counts that decide when they are given back are the
/// runtime's.
struct plugin_state {
    std::atomic<profiler_callback_t> profiler{nullptr};  // v10+: the host's profiler callback
};

auto state() -> plugin_state& {
    static auto* s = new plugin_state();  // NOLINT: must outlive the host's atexit teardown
    return *s;
}

void forward_log(void* user, spdlog::level::level_enum lv, const char* file, int line, std::string_view msg) {
    auto fn = reinterpret_cast<logger_t>(user);
    int level = log_info;
    switch (lv) {
        case spdlog::level::trace:
        case spdlog::level::debug: level = log_trace; break;
        case spdlog::level::info: level = log_info; break;
        case spdlog::level::warn:
        case spdlog::level::err:
        case spdlog::level::critical: level = log_warn; break;
        default: break;
    }
    const std::string text(msg);
    fn(level, log_net, file, line, "NET/loom: %s", text.c_str());
}

// ---------------------------------------------------------------- profiler events
// One start event per isend and per sub-receive that comes with a profiler handle; the stop
// event when the host's view of the request ends (test reported it done, or close failed it).
void start_event(profiler_callback_t prof, lp::host_event& ev, void* phandle, const loom_net_event_v1& what) {
    static_assert(sizeof(loom_net_event_v1) <= sizeof(ev.info) && alignof(loom_net_event_v1) <= 8);
    auto* info = std::construct_at(reinterpret_cast<loom_net_event_v1*>(ev.info.data()), what);
    ev.handle = nullptr;
    if (prof(&ev.handle, profiler_net_start, phandle, loom_profiler_id_v1, info) != success) ev.handle = nullptr;
}

void stop_event(profiler_callback_t prof, lp::host_event& ev) noexcept {
    if (ev.handle == nullptr) return;
    (void)prof(&ev.handle, profiler_net_stop, nullptr, loom_profiler_id_v1, nullptr);
    ev.handle = nullptr;
}

/// The engine's release hook: closes the host events of a request.
void end_events(lp::request_base& r) noexcept {
    auto prof = state().profiler.load(std::memory_order_acquire);
    if (prof == nullptr) return;
    for (int i = 0; i < lp::view_of(r).parts; ++i) stop_event(prof, lp::host_event_of(r, i));
}

// ---------------------------------------------------------------- lifecycle
/// NCCL_DEBUG's verbosity as a log level: INFO and TRACE raise it, WARN and VERSION keep the
/// default; unset or other values say nothing.
auto level_of_nccl_debug(const char* v) -> std::optional<spdlog::level::level_enum> {
    if (v == nullptr) return std::nullopt;
    const std::string_view s(v);
    if (s == "INFO") return spdlog::level::info;
    if (s == "TRACE") return spdlog::level::trace;
    if (s == "WARN" || s == "VERSION") return spdlog::level::warn;
    return std::nullopt;
}

}  // namespace

auto init_common(logger_t log, profiler_callback_t prof) -> result_t {
    if (prof != nullptr) state().profiler.store(prof, std::memory_order_release);
    if (log != nullptr) lp::set_host_logger(&forward_log, reinterpret_cast<void*>(log));
    auto r = lp::runtime::instance().acquire(level_of_nccl_debug(std::getenv("NCCL_DEBUG")),
                                             [](lp::engine& e) noexcept { e.set_release_hook(&end_events); });
    if (!r) return r.error() == make_error_code(loom::errc::invalid_argument) ? invalid_usage : system_error;
    return success;
}

auto engine_for(int dev, lp::engine*& out) -> result_t {
    auto& rt = lp::runtime::instance();
    auto lock = rt.guard();
    if (!rt.acquired()) return internal_error;
    if (!rt.devices().contains(dev)) {
        LOOM_WARN("unknown device {}", dev);
        return invalid_usage;
    }
    auto e = rt.devices().engine_for(dev);
    if (!e) return system_error;
    out = *e;
    return success;
}

auto devices(int* ndev) -> result_t {
    if (ndev == nullptr) return internal_error;
    auto& rt = lp::runtime::instance();
    auto lock = rt.guard();
    if (!rt.acquired()) return internal_error;
    *ndev = rt.devices().nic_count();
    return success;
}

auto get_properties(int dev, properties_v12& p) -> result_t {
    auto& rt = lp::runtime::instance();
    auto lock = rt.guard();
    if (!rt.acquired()) return internal_error;
    const lp::nic* primary = rt.devices().primary_nic(dev);
    if (primary == nullptr) return invalid_usage;
    const auto& n = *primary;
    const auto members = rt.devices().members(dev);
    std::memset(&p, 0, sizeof(p));
    p.name = const_cast<char*>(rt.devices().name(dev).c_str());
    p.pciPath = n.topo.pci_path.empty() ? nullptr : const_cast<char*>(n.topo.pci_path.c_str());
    p.guid = n.guid;
    const auto dm = lp::device_memory_support_of(n);
    p.ptrSupport = ptr_host | (dm.cuda ? ptr_cuda : 0) | (dm.dmabuf ? ptr_dmabuf : 0);
    p.regIsGlobal = 1;
    p.forceFlush = 0;
    p.speed = n.speed_mbps * static_cast<int>(members.size());
    p.port = 1;
    p.latency = 0.0F;
    p.maxComms = max_comms;
    p.maxRecvs = lp::max_slots;
    p.netDeviceType = device_host;
    p.netDeviceVersion = 0;
    p.vProps.ndevs = static_cast<int>(members.size());
    for (std::size_t i = 0; i < members.size(); ++i) p.vProps.devs[i] = members[i];
    p.maxP2pBytes = max_bytes;
    p.maxCollBytes = max_bytes;
    p.maxMultiRequestSize = 1;
    p.railId = -1;
    p.planeId = -1;
    return success;
}

// ---------------------------------------------------------------- handle validation
template <class T>
auto as(void* p, std::uint32_t magic) -> T* {
    if (p == nullptr) return nullptr;
    auto* t = static_cast<T*>(p);
    return t->magic.load(std::memory_order_acquire) == magic ? t : nullptr;
}

/// Any comm (send or receive) → its engine, or nullptr.
auto engine_of_comm(void* comm) -> lp::engine* {
    auto* c = static_cast<lp::channel_base*>(comm);
    if (c == nullptr) return nullptr;
    const auto m = c->magic.load(std::memory_order_acquire);
    return (m == lp::magic_send || m == lp::magic_recv) ? c->eng : nullptr;
}

auto code_of(const std::error_code& ec) -> result_t {
    if (ec == make_error_code(loom::errc::invalid_argument)) return internal_error;
    return system_error;
}

/// How a finished request's outcome reads to NCCL: a full tag table is the user's doing
/// (more distinct tags than the runtime tracks), everything else a network or system failure.
auto request_code(loom::errc why) -> result_t {
    if (why == loom::errc::success) return success;
    return why == loom::errc::no_space ? invalid_usage : system_error;
}

// ---------------------------------------------------------------- connections
auto listen(int dev, void* handle, void** listen_comm) -> result_t {
    if (handle == nullptr || listen_comm == nullptr) return internal_error;
    *listen_comm = nullptr;
    lp::engine* e = nullptr;
    if (auto r = engine_for(dev, e); r != success) return r;
    std::lock_guard lock(e->mutex());
    lp::handle_bytes h{};
    auto l = e->listen(h);
    if (!l) {
        LOOM_WARN("listen on {}: {}", e->nic_info().name, l.error().message());
        return system_error;
    }
    std::memcpy(handle, h.data(), h.size());
    *listen_comm = *l;
    lp::runtime::instance().opened();
    return success;
}

auto connect(int dev, void* handle, void** send_comm, device_handle_v7** dev_comm) -> result_t {
    if (handle == nullptr || send_comm == nullptr) return internal_error;
    *send_comm = nullptr;
    if (dev_comm != nullptr) *dev_comm = nullptr;
    lp::engine* e = nullptr;
    if (auto r = engine_for(dev, e); r != success) return r;
    std::lock_guard lock(e->mutex());
    auto s = e->connect({static_cast<const std::byte*>(handle), lp::handle_size}, handle);
    if (!s) {
        LOOM_WARN("connect: {}", s.error().message());
        return s.error() == make_error_code(loom::errc::invalid_argument) ? invalid_usage : system_error;
    }
    if (*s != nullptr) {
        *send_comm = *s;
        lp::runtime::instance().opened();
    }
    return success;
}

auto accept(void* listen_comm, void** recv_comm, device_handle_v7** dev_comm) -> result_t {
    if (recv_comm == nullptr) return internal_error;
    *recv_comm = nullptr;
    if (dev_comm != nullptr) *dev_comm = nullptr;
    auto* l = as<lp::listener>(listen_comm, lp::magic_listen);
    if (l == nullptr) return internal_error;
    std::lock_guard lock(l->eng->mutex());
    auto r = l->eng->accept(*l);
    if (!r) {
        LOOM_WARN("accept: {}", r.error().message());
        return system_error;
    }
    if (*r != nullptr) {
        *recv_comm = *r;
        lp::runtime::instance().opened();
    }
    return success;
}

/// closeListen / closeSend / closeRecv: completes or cancels what is outstanding, then retires
/// the comm (a second close, or a comm of the wrong kind, is an error).
template <class C, std::uint32_t Magic>
auto close_comm(void* comm) -> result_t {
    auto* c = as<C>(comm, Magic);
    if (c == nullptr) return internal_error;
    {
        std::lock_guard lock(c->eng->mutex());
        c->eng->close(*c);
    }
    // After the engine lock is given back: a finalize that sees no open comms may destroy the
    // engine (and its lock) at once.
    lp::runtime::instance().closed();
    return success;
}
auto close_listen(void* c) -> result_t { return close_comm<lp::listener, lp::magic_listen>(c); }
auto close_send(void* c) -> result_t { return close_comm<lp::sender, lp::magic_send>(c); }
auto close_recv(void* c) -> result_t { return close_comm<lp::receiver, lp::magic_recv>(c); }

// ---------------------------------------------------------------- registration
auto reg_mr_dmabuf(void* comm, void* data, std::size_t size, int type, std::uint64_t offset, int fd, void** mhandle)
    -> result_t {
    if (mhandle == nullptr) return internal_error;
    *mhandle = nullptr;
    lp::engine* e = engine_of_comm(comm);
    if (e == nullptr || data == nullptr || size == 0 || size > (std::size_t{1} << 46)) return internal_error;
    lp::device_memory dev{};
    if (type == ptr_cuda) {
        auto where = lp::locate_cuda_memory(*e, data, size);
        if (!where) return internal_error;
        dev = *where;
    } else if (type != ptr_host) {
        LOOM_WARN("registration of unknown memory type {}", type);
        return internal_error;
    }
    dev.dmabuf_fd = fd;
    dev.dmabuf_offset = fd >= 0 ? offset : 0;
    std::lock_guard lock(e->mutex());
    auto m = type == ptr_host && fd < 0 ? e->register_memory(data, size) : e->register_memory(data, size, &dev);
    if (!m) {
        LOOM_WARN("registration of {} bytes failed: {}", size, m.error().message());
        return system_error;
    }
    *mhandle = *m;
    return success;
}

auto reg_mr(void* comm, void* data, std::size_t size, int type, void** mhandle) -> result_t {
    return reg_mr_dmabuf(comm, data, size, type, 0, -1, mhandle);
}

auto dereg_mr(void* comm, void* mhandle) -> result_t {
    lp::engine* e = engine_of_comm(comm);
    if (e == nullptr) return internal_error;
    std::lock_guard lock(e->mutex());
    auto* m = static_cast<lp::memory_handle*>(mhandle);
    if (!e->is_live(m)) return internal_error;
    e->deregister(*m);
    return success;
}

// ---------------------------------------------------------------- data path
auto isend(void* send_comm, void* data, std::size_t size, int tag, void* mhandle, void* phandle, void** request)
    -> result_t {
    if (request == nullptr) return internal_error;
    *request = nullptr;
    auto* s = as<lp::sender>(send_comm, lp::magic_send);
    if (s == nullptr || size > max_bytes) return internal_error;
    std::lock_guard lock(s->eng->mutex());
    // The engine checks the buffer and the registration (stale, foreign, too short).
    auto r = s->eng->isend(*s, data, size, static_cast<std::uint32_t>(tag), static_cast<lp::memory_handle*>(mhandle));
    if (!r) return code_of(r.error());
    if (*r != nullptr && phandle != nullptr) {
        if (auto prof = state().profiler.load(std::memory_order_acquire); prof != nullptr) {
            lp::request_base& q = **r;
            start_event(prof, lp::host_event_of(q, 0), phandle,
                        {loom_event_send, 0, tag, s->id, size, lp::view_of(q).rendezvous ? 1U : 0U,
                         static_cast<std::uint32_t>(s->eng->rail_count()), s->eng->nic_info().name.c_str()});
            lp::mark_profiled(q);
        }
    }
    *request = static_cast<lp::request_base*>(*r);
    return success;
}

auto irecv(void* recv_comm, int n, void** data, const std::size_t* sizes, int* tags, void** mhandles, void** phandles,
           void** request) -> result_t {
    if (request == nullptr) return internal_error;
    *request = nullptr;
    auto* rc = as<lp::receiver>(recv_comm, lp::magic_recv);
    if (rc == nullptr || n < 1 || n > lp::max_slots || data == nullptr || sizes == nullptr || tags == nullptr)
        return internal_error;
    for (int i = 0; i < n; ++i)
        if (sizes[i] > max_bytes) return internal_error;
    std::array<lp::memory_handle*, lp::max_slots> mh;  // checked by the engine; [0, n) set
    for (int i = 0; i < n; ++i)
        mh[static_cast<std::size_t>(i)] = mhandles != nullptr ? static_cast<lp::memory_handle*>(mhandles[i]) : nullptr;
    std::lock_guard lock(rc->eng->mutex());
    auto r = rc->eng->irecv(*rc, n, data, sizes, tags, mh.data());
    if (!r) return code_of(r.error());
    if (*r != nullptr && phandles != nullptr) {
        if (auto prof = state().profiler.load(std::memory_order_acquire); prof != nullptr) {
            lp::request_base& q = **r;
            for (int i = 0; i < n; ++i) {
                if (phandles[i] == nullptr) continue;
                start_event(prof, lp::host_event_of(q, i), phandles[i],
                            {loom_event_recv, static_cast<std::uint32_t>(i), tags[i], rc->id, sizes[i], 0,
                             static_cast<std::uint32_t>(rc->eng->rail_count()), rc->eng->nic_info().name.c_str()});
                lp::mark_profiled(q);
            }
        }
    }
    *request = static_cast<lp::request_base*>(*r);
    return success;
}

auto irecv_int(void* recv_comm, int n, void** data, int* sizes, int* tags, void** mhandles, void** request)
    -> result_t {
    if (request == nullptr) return internal_error;
    *request = nullptr;
    if (sizes == nullptr || n < 1 || n > lp::max_slots) return internal_error;
    std::array<std::size_t, lp::max_slots> s{};
    for (int i = 0; i < n; ++i) {
        if (sizes[i] < 0) return internal_error;
        s[static_cast<std::size_t>(i)] = static_cast<std::size_t>(sizes[i]);
    }
    return irecv(recv_comm, n, data, s.data(), tags, mhandles, nullptr, request);
}

auto isend_int(void* send_comm, void* data, int size, int tag, void* mhandle, void** request) -> result_t {
    if (size < 0) {
        if (request != nullptr) *request = nullptr;
        return internal_error;
    }
    return isend(send_comm, data, static_cast<std::size_t>(size), tag, mhandle, nullptr, request);
}

auto iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles, void** request) -> result_t {
    if (request == nullptr) return internal_error;
    *request = nullptr;
    auto* rc = as<lp::receiver>(recv_comm, lp::magic_recv);
    if (rc == nullptr || n < 1 || n > lp::max_slots || sizes == nullptr || data == nullptr) return internal_error;
    std::array<std::size_t, lp::max_slots> s{};
    for (int i = 0; i < n; ++i) {
        if (sizes[i] < 0) return internal_error;
        s[static_cast<std::size_t>(i)] = static_cast<std::size_t>(sizes[i]);
    }
    const auto mode = lp::runtime::instance().settings().flush;
    // Host memory is visible once the receive completed: nothing to flush (a NULL request
    // counts as done). Device memory written by the NIC is made visible by an RMA read of
    // the received buffer (it orders the NIC's earlier writes before the read's completion).
    if (mode == lp::tristate::off) return success;
    std::array<lp::memory_handle*, lp::max_slots> mh{};
    for (int i = 0; mhandles != nullptr && i < n; ++i)
        mh[static_cast<std::size_t>(i)] = static_cast<lp::memory_handle*>(mhandles[i]);
    std::lock_guard lock(rc->eng->mutex());
    auto r =
        rc->eng->iflush(*rc, n, data, s.data(), mhandles != nullptr ? mh.data() : nullptr, mode == lp::tristate::on);
    if (!r) {
        LOOM_WARN("iflush: {}", r.error().message());
        return code_of(r.error());
    }
    *request = *r != nullptr ? static_cast<lp::request_base*>(*r) : nullptr;
    return success;
}

auto test(void* request, int* done, int* sizes) -> result_t {
    if (request == nullptr || done == nullptr) return internal_error;
    auto* r = static_cast<lp::request_base*>(request);
    const auto m = r->magic.load(std::memory_order_acquire);
    if (m != lp::magic_sreq && m != lp::magic_rreq) return internal_error;
    lp::engine* e = r->chan->eng;
    std::lock_guard lock(e->mutex());
    if (r->magic.load(std::memory_order_relaxed) != m) return internal_error;
    std::array<std::size_t, lp::max_slots> s;  // [0, n) set by a finished test
    bool finished = false;
    const int n = lp::view_of(*r).parts;
    const auto st = e->test(*r, finished, sizes != nullptr ? s.data() : nullptr, n);
    *done = finished ? 1 : 0;
    if (finished && sizes != nullptr)
        for (int i = 0; i < n; ++i)
            sizes[i] = static_cast<int>(std::min<std::size_t>(s[static_cast<std::size_t>(i)], INT_MAX));
    return request_code(st);
}

auto get_device_mr(void* comm, void* mhandle, void** dptr) -> result_t {
    if (dptr == nullptr) return internal_error;
    *dptr = nullptr;
    lp::engine* e = engine_of_comm(comm);
    if (e == nullptr) return internal_error;
    std::lock_guard lock(e->mutex());
    return e->is_live(static_cast<lp::memory_handle*>(mhandle)) ? success : internal_error;
}

auto irecv_consumed(void* recv_comm, int n, void* request) -> result_t {
    (void)request;
    auto* rc = as<lp::receiver>(recv_comm, lp::magic_recv);
    return (rc == nullptr || n < 1 || n > lp::max_slots) ? internal_error : success;
}

auto make_vdevice(int* d, int ndevs, const int* devs, int max_devs) -> result_t {
    if (d == nullptr || devs == nullptr || ndevs < 1 || ndevs > max_devs) return internal_error;
    auto& rt = lp::runtime::instance();
    auto lock = rt.guard();
    if (!rt.acquired()) return internal_error;
    auto v = rt.devices().make_virtual(std::span{devs, static_cast<std::size_t>(ndevs)}, max_devs);
    if (!v) return invalid_usage;
    *d = *v;
    return success;
}

auto finalize_common() -> result_t { return lp::runtime::instance().release() ? success : internal_error; }

}  // namespace loom::nccl_net
