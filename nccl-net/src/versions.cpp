// The ncclNetPlugin_v6 ... v12 tables: per-version shims over the one implementation in
// plugin.cpp. Every entry runs under guarded(): no exception crosses the ABI.
#include "plugin.hpp"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <new>

namespace loom::nccl_net {
namespace {

struct context {
    std::uint32_t magic{0x4c4f4358};
    std::uint64_t comm_id{0};
    int traffic_class{-1};
};

// Every entry point runs under this guard: no exception crosses the ABI.
template <class F>
auto guarded(F&& f) noexcept -> result_t {
    try {
        return f();
    } catch (const std::bad_alloc&) {
        return system_error;
    } catch (...) {
        return internal_error;
    }
}

// ---------------------------------------------------------------- per-version shims
template <class P>
auto props_from(int dev, P* out) -> result_t {
    if (out == nullptr) return internal_error;
    properties_v12 p{};
    if (auto r = get_properties(dev, p); r != success) return r;
    std::memset(out, 0, sizeof(P));
    out->name = p.name;
    out->pciPath = p.pciPath;
    out->guid = p.guid;
    out->ptrSupport = p.ptrSupport;
    out->speed = p.speed;
    out->port = p.port;
    out->latency = p.latency;
    out->maxComms = p.maxComms;
    out->maxRecvs = p.maxRecvs;
    if constexpr (requires { out->netDeviceType; }) {
        out->netDeviceType = p.netDeviceType;
        out->netDeviceVersion = p.netDeviceVersion;
    }
    if constexpr (requires { out->regIsGlobal; }) out->regIsGlobal = p.regIsGlobal;
    if constexpr (requires { out->forceFlush; }) {
        out->forceFlush = p.forceFlush;
        out->vProps.ndevs = std::min<int>(p.vProps.ndevs, static_cast<int>(std::size(out->vProps.devs)));
        for (int i = 0; i < out->vProps.ndevs; ++i) out->vProps.devs[i] = p.vProps.devs[i];
        out->maxP2pBytes = p.maxP2pBytes;
        out->maxCollBytes = p.maxCollBytes;
    }
    if constexpr (requires { out->maxMultiRequestSize; }) out->maxMultiRequestSize = p.maxMultiRequestSize;
    if constexpr (requires { out->railId; }) {
        out->railId = p.railId;
        out->planeId = p.planeId;
    }
    return success;
}

auto v_init(logger_t log) -> result_t {
    return guarded([&] { return init_common(log); });
}
auto v_init10(logger_t log, profiler_callback_t prof) -> result_t {
    return guarded([&] { return init_common(log, prof); });
}
auto v_init11(void** ctx, std::uint64_t comm_id, comm_config_v11* config, logger_t log, profiler_callback_t prof)
    -> result_t {
    return guarded([&] {
        if (ctx == nullptr) return internal_error;
        *ctx = nullptr;
        if (auto r = init_common(log, prof); r != success) return r;
        auto* c = new context();
        c->comm_id = comm_id;
        c->traffic_class = config != nullptr ? config->trafficClass : -1;
        *ctx = c;
        return success;
    });
}
auto valid_ctx(void* ctx) -> bool { return ctx != nullptr && static_cast<context*>(ctx)->magic == 0x4c4f4358; }
auto v_finalize(void* ctx) -> result_t {
    return guarded([&] {
        if (!valid_ctx(ctx)) return internal_error;
        static_cast<context*>(ctx)->magic = 0;
        delete static_cast<context*>(ctx);
        return finalize_common();
    });
}
auto v_set_net_attr(void* ctx, net_attr_v11* attr) -> result_t {
    return (valid_ctx(ctx) && attr != nullptr) ? success : internal_error;
}
auto v_devices(int* n) -> result_t {
    return guarded([&] { return devices(n); });
}
template <class P>
auto v_props(int dev, P* p) -> result_t {
    return guarded([&] { return props_from(dev, p); });
}
auto v_listen(int dev, void* h, void** l) -> result_t {
    return guarded([&] { return listen(dev, h, l); });
}
auto v_listen11(void* ctx, int dev, void* h, void** l) -> result_t {
    if (!valid_ctx(ctx)) return internal_error;
    return v_listen(dev, h, l);
}
auto v_connect6(int dev, void* h, void** s) -> result_t {
    return guarded([&] { return connect(dev, h, s, nullptr); });
}
auto v_connect7(int dev, void* h, void** s, device_handle_v7** d) -> result_t {
    return guarded([&] { return connect(dev, h, s, d); });
}
auto v_connect10(int dev, comm_config_v10*, void* h, void** s, device_handle_v10** d) -> result_t {
    return guarded([&] { return connect(dev, h, s, d); });
}
auto v_connect11(void* ctx, int dev, void* h, void** s, device_handle_v11** d) -> result_t {
    if (!valid_ctx(ctx)) return internal_error;
    return guarded([&] { return connect(dev, h, s, d); });
}
auto v_accept6(void* l, void** r) -> result_t {
    return guarded([&] { return accept(l, r, nullptr); });
}
auto v_accept7(void* l, void** r, device_handle_v7** d) -> result_t {
    return guarded([&] { return accept(l, r, d); });
}
auto v_regmr_int(void* c, void* d, int size, int type, void** m) -> result_t {
    if (size < 0) {
        if (m != nullptr) *m = nullptr;
        return internal_error;
    }
    return guarded([&] { return reg_mr(c, d, static_cast<std::size_t>(size), type, m); });
}
auto v_regmr(void* c, void* d, std::size_t size, int type, void** m) -> result_t {
    return guarded([&] { return reg_mr(c, d, size, type, m); });
}
auto v_regmr_dmabuf(void* c, void* d, std::size_t size, int type, std::uint64_t off, int fd, void** m) -> result_t {
    return guarded([&] { return reg_mr_dmabuf(c, d, size, type, off, fd, m); });
}
auto v_deregmr(void* c, void* m) -> result_t {
    return guarded([&] { return dereg_mr(c, m); });
}
auto v_isend_int(void* s, void* d, int size, int tag, void* m, void** r) -> result_t {
    return guarded([&] { return isend_int(s, d, size, tag, m, r); });
}
auto v_isend(void* s, void* d, std::size_t size, int tag, void* m, void** r) -> result_t {
    return guarded([&] { return isend(s, d, size, tag, m, nullptr, r); });
}
auto v_isend10(void* s, void* d, std::size_t size, int tag, void* m, void* ph, void** r) -> result_t {
    return guarded([&] { return isend(s, d, size, tag, m, ph, r); });
}
auto v_irecv_int(void* c, int n, void** d, int* sizes, int* tags, void** m, void** r) -> result_t {
    return guarded([&] { return irecv_int(c, n, d, sizes, tags, m, r); });
}
auto v_irecv(void* c, int n, void** d, std::size_t* sizes, int* tags, void** m, void** r) -> result_t {
    return guarded([&] { return irecv(c, n, d, sizes, tags, m, nullptr, r); });
}
auto v_irecv10(void* c, int n, void** d, std::size_t* sizes, int* tags, void** m, void** ph, void** r) -> result_t {
    return guarded([&] { return irecv(c, n, d, sizes, tags, m, ph, r); });
}
auto v_iflush(void* c, int n, void** d, int* sizes, void** m, void** r) -> result_t {
    return guarded([&] { return iflush(c, n, d, sizes, m, r); });
}
auto v_test(void* r, int* done, int* sizes) -> result_t {
    return guarded([&] { return test(r, done, sizes); });
}
auto v_close_send(void* c) -> result_t {
    return guarded([&] { return close_send(c); });
}
auto v_close_recv(void* c) -> result_t {
    return guarded([&] { return close_recv(c); });
}
auto v_close_listen(void* c) -> result_t {
    return guarded([&] { return close_listen(c); });
}
auto v_get_device_mr(void* c, void* m, void** d) -> result_t {
    return guarded([&] { return get_device_mr(c, m, d); });
}
auto v_irecv_consumed(void* c, int n, void* r) -> result_t {
    return guarded([&] { return irecv_consumed(c, n, r); });
}
auto v_make_vdevice9(int* d, vdevice_props_v9* p) -> result_t {
    if (p == nullptr) return internal_error;
    return guarded([&] { return make_vdevice(d, p->ndevs, p->devs, max_devs_per_nic_v9); });
}
auto v_make_vdevice12(int* d, vdevice_props_v12* p) -> result_t {
    if (p == nullptr) return internal_error;
    return guarded([&] { return make_vdevice(d, p->ndevs, p->devs, max_devs_per_nic_v12); });
}

}  // namespace
}  // namespace loom::nccl_net

using namespace loom::nccl_net;

extern "C" {
// NOLINTBEGIN
const net_v6 ncclNetPlugin_v6 = {"loom",         v_init,     v_devices,    v_props<properties_v6>,
                                 v_listen,       v_connect6, v_accept6,    v_regmr_int,
                                 v_regmr_dmabuf, v_deregmr,  v_isend_int,  v_irecv_int,
                                 v_iflush,       v_test,     v_close_send, v_close_recv,
                                 v_close_listen};
const net_v7 ncclNetPlugin_v7 = {"loom",         v_init,          v_devices,       v_props<properties_v7>,
                                 v_listen,       v_connect7,      v_accept7,       v_regmr_int,
                                 v_regmr_dmabuf, v_deregmr,       v_isend_int,     v_irecv_int,
                                 v_iflush,       v_test,          v_close_send,    v_close_recv,
                                 v_close_listen, v_get_device_mr, v_irecv_consumed};
const net_v8 ncclNetPlugin_v8 = {"loom",         v_init,          v_devices,       v_props<properties_v8>,
                                 v_listen,       v_connect7,      v_accept7,       v_regmr,
                                 v_regmr_dmabuf, v_deregmr,       v_isend_int,     v_irecv_int,
                                 v_iflush,       v_test,          v_close_send,    v_close_recv,
                                 v_close_listen, v_get_device_mr, v_irecv_consumed};
const net_v9 ncclNetPlugin_v9 = {"loom",         v_init,          v_devices,        v_props<properties_v9>,
                                 v_listen,       v_connect7,      v_accept7,        v_regmr,
                                 v_regmr_dmabuf, v_deregmr,       v_isend,          v_irecv,
                                 v_iflush,       v_test,          v_close_send,     v_close_recv,
                                 v_close_listen, v_get_device_mr, v_irecv_consumed, v_make_vdevice9};
const net_v10 ncclNetPlugin_v10 = {"loom",         v_init10,        v_devices,        v_props<properties_v10>,
                                   v_listen,       v_connect10,     v_accept7,        v_regmr,
                                   v_regmr_dmabuf, v_deregmr,       v_isend10,        v_irecv10,
                                   v_iflush,       v_test,          v_close_send,     v_close_recv,
                                   v_close_listen, v_get_device_mr, v_irecv_consumed, v_make_vdevice9};
const net_v11 ncclNetPlugin_v11 = {"loom",         v_init11,        v_devices,        v_props<properties_v11>,
                                   v_listen11,     v_connect11,     v_accept7,        v_regmr,
                                   v_regmr_dmabuf, v_deregmr,       v_isend10,        v_irecv10,
                                   v_iflush,       v_test,          v_close_send,     v_close_recv,
                                   v_close_listen, v_get_device_mr, v_irecv_consumed, v_make_vdevice9,
                                   v_finalize,     v_set_net_attr};
const net_v12 ncclNetPlugin_v12 = {"loom",         v_init11,        v_devices,        v_props<properties_v12>,
                                   v_listen11,     v_connect11,     v_accept7,        v_regmr,
                                   v_regmr_dmabuf, v_deregmr,       v_isend10,        v_irecv10,
                                   v_iflush,       v_test,          v_close_send,     v_close_recv,
                                   v_close_listen, v_get_device_mr, v_irecv_consumed, v_make_vdevice12,
                                   v_finalize,     v_set_net_attr};
// NOLINTEND
}
