// loom/nccl/net_abi.hpp — our declarations of NCCL's network-plugin ABI, versions 6 to 12.
//
// Written from the published interface (member order, types and constants are facts of the
// ABI; see shared/abi/nccl-net.md). Every struct is a plain C layout: tests/abi/nccl checks
// sizes and offsets against NCCL's own plugin headers when they are available.
#pragma once

#include <cstddef>
#include <cstdint>

namespace loom::nccl_abi {

// ---------------------------------------------------------------- constants
enum result_t : int {
    success = 0,
    unhandled_cuda_error = 1,
    system_error = 2,
    internal_error = 3,
    invalid_argument = 4,
    invalid_usage = 5,
    remote_error = 6,
    in_progress = 7,
};

inline constexpr std::size_t handle_maxsize = 128;
inline constexpr int max_requests = 32;  // per comm (v7+); v6 allowed 8
inline constexpr int ptr_host = 0x1;
inline constexpr int ptr_cuda = 0x2;
inline constexpr int ptr_dmabuf = 0x4;
inline constexpr int max_devs_per_nic_v9 = 4;
inline constexpr int max_devs_per_nic_v12 = 8;
inline constexpr int optional_recv_completion = 0x1;
inline constexpr int multi_request = 0x2;

// Device (net) types.
inline constexpr int device_host = 0;
inline constexpr int device_unpack = 1;
inline constexpr int device_gin_proxy = 2;
inline constexpr int device_gin_gdaki = 3;

// Logger levels and subsystem flags (ncclDebugLogLevel / ncclDebugLogSubSys).
enum log_level : int { log_none = 0, log_version = 1, log_warn = 2, log_info = 3, log_abort = 4, log_trace = 5 };
inline constexpr unsigned long log_init = 0x1;
inline constexpr unsigned long log_net = 0x10;

using logger_t = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);
using profiler_callback_t = result_t (*)(void** event_handle, int type, void* phandle, std::int64_t plugin_id,
                                         void* ext_data);
// What a profiler callback is asked to do (ncclProfilerNetEvent*).
enum profiler_event_type : int {
    profiler_net_start = 0,
    profiler_net_stop = 1,
    profiler_net_update = 2,
    profiler_net_update_and_stop = 3,
};

// ---------------------------------------------------------------- loom's profiler events
// A plugin names the layout of the extData it passes with a start event by its pluginId (a
// plugin type in bits 16 and up, the layout version in bits 0..15); profiler plugins decode
// extData only for ids they know. loom's type is 0x4c4d ("LM"); layout version 1 is below.
inline constexpr std::int64_t loom_profiler_type = std::int64_t{0x4c4d} << 16;
inline constexpr std::int64_t loom_profiler_id_v1 = loom_profiler_type | 1;

/// extData of a loom start event (one per isend, one per sub-receive of an irecv that came
/// with a profiler handle). Valid until the matching stop event.
struct loom_net_event_v1 {
    std::uint32_t kind;      ///< 1 send, 2 receive
    std::uint32_t slot;      ///< index of the sub-receive in a grouped irecv (0 for sends)
    std::int32_t tag;        ///< the host's tag
    std::uint32_t channel;   ///< the comm's channel id (unique per plugin instance and device)
    std::uint64_t size;      ///< bytes posted: the send size, the receive capacity
    std::uint32_t protocol;  ///< sends: 0 eager, 1 rendezvous (RMA write); receives: 0
    std::uint32_t rails;     ///< NICs the comm's device stripes over
    const char* device;      ///< device name (valid while the plugin is loaded)
};
inline constexpr std::uint32_t loom_event_send = 1;
inline constexpr std::uint32_t loom_event_recv = 2;

// ---------------------------------------------------------------- shared types
struct device_handle_v7 {
    int netDeviceType;
    int netDeviceVersion;
    void* handle;
    std::size_t size;
    int needsProxyProgress;
};
using device_handle_v8 = device_handle_v7;
using device_handle_v9 = device_handle_v7;
using device_handle_v10 = device_handle_v7;
using device_handle_v11 = device_handle_v7;
using device_handle_v12 = device_handle_v7;

struct vdevice_props_v9 {
    int ndevs;
    int devs[max_devs_per_nic_v9];
};
using vdevice_props_v10 = vdevice_props_v9;
using vdevice_props_v11 = vdevice_props_v9;
struct vdevice_props_v12 {
    int ndevs;
    int devs[max_devs_per_nic_v12];
};

struct comm_config_v10 {
    int trafficClass;
};
using comm_config_v11 = comm_config_v10;
using comm_config_v12 = comm_config_v10;

struct net_comm_attr {
    int maxConcurrentPeers;
    int minConcurrentPeers;
    int maxFlowsPerPeer;
    int minFlowsPerPeer;
};
struct net_attr_v11 {
    net_comm_attr sendCommAttr;
    net_comm_attr recvCommAttr;
    std::uint32_t op;
    std::uint32_t algo;
    std::uint32_t proto;
};
using net_attr_v12 = net_attr_v11;

// ---------------------------------------------------------------- properties
struct properties_v6 {
    char* name;
    char* pciPath;
    std::uint64_t guid;
    int ptrSupport;
    int speed;
    int port;
    float latency;
    int maxComms;
    int maxRecvs;
};

struct properties_v7 {
    char* name;
    char* pciPath;
    std::uint64_t guid;
    int ptrSupport;
    int speed;
    int port;
    float latency;
    int maxComms;
    int maxRecvs;
    int netDeviceType;
    int netDeviceVersion;
};

struct properties_v8 {
    char* name;
    char* pciPath;
    std::uint64_t guid;
    int ptrSupport;
    int regIsGlobal;
    int speed;
    int port;
    float latency;
    int maxComms;
    int maxRecvs;
    int netDeviceType;
    int netDeviceVersion;
};

struct properties_v9 {
    char* name;
    char* pciPath;
    std::uint64_t guid;
    int ptrSupport;
    int regIsGlobal;
    int forceFlush;
    int speed;
    int port;
    float latency;
    int maxComms;
    int maxRecvs;
    int netDeviceType;
    int netDeviceVersion;
    vdevice_props_v9 vProps;
    std::size_t maxP2pBytes;
    std::size_t maxCollBytes;
};
using properties_v10 = properties_v9;

struct properties_v11 {
    char* name;
    char* pciPath;
    std::uint64_t guid;
    int ptrSupport;
    int regIsGlobal;
    int forceFlush;
    int speed;
    int port;
    float latency;
    int maxComms;
    int maxRecvs;
    int netDeviceType;
    int netDeviceVersion;
    vdevice_props_v11 vProps;
    std::size_t maxP2pBytes;
    std::size_t maxCollBytes;
    int maxMultiRequestSize;
};

struct properties_v12 {
    char* name;
    char* pciPath;
    std::uint64_t guid;
    int ptrSupport;
    int regIsGlobal;
    int forceFlush;
    int speed;
    int port;
    float latency;
    int maxComms;
    int maxRecvs;
    int netDeviceType;
    int netDeviceVersion;
    vdevice_props_v12 vProps;
    std::size_t maxP2pBytes;
    std::size_t maxCollBytes;
    int maxMultiRequestSize;
    std::int16_t railId;
    std::int16_t planeId;
};

// ---------------------------------------------------------------- function tables
struct net_v6 {
    const char* name;
    result_t (*init)(logger_t logFunction);
    result_t (*devices)(int* ndev);
    result_t (*getProperties)(int dev, properties_v6* props);
    result_t (*listen)(int dev, void* handle, void** listenComm);
    result_t (*connect)(int dev, void* handle, void** sendComm);
    result_t (*accept)(void* listenComm, void** recvComm);
    result_t (*regMr)(void* comm, void* data, int size, int type, void** mhandle);
    result_t (*regMrDmaBuf)(void* comm, void* data, std::size_t size, int type, std::uint64_t offset, int fd,
                            void** mhandle);
    result_t (*deregMr)(void* comm, void* mhandle);
    result_t (*isend)(void* sendComm, void* data, int size, int tag, void* mhandle, void** request);
    result_t (*irecv)(void* recvComm, int n, void** data, int* sizes, int* tags, void** mhandles, void** request);
    result_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
    result_t (*test)(void* request, int* done, int* sizes);
    result_t (*closeSend)(void* sendComm);
    result_t (*closeRecv)(void* recvComm);
    result_t (*closeListen)(void* listenComm);
};

/// v7 and v8 differ only in regMr's size type (int, then size_t).
template <class Props, class RegSize>
struct net_v7_layout {
    const char* name;
    result_t (*init)(logger_t logFunction);
    result_t (*devices)(int* ndev);
    result_t (*getProperties)(int dev, Props* props);
    result_t (*listen)(int dev, void* handle, void** listenComm);
    result_t (*connect)(int dev, void* handle, void** sendComm, device_handle_v7** sendDevComm);
    result_t (*accept)(void* listenComm, void** recvComm, device_handle_v7** recvDevComm);
    result_t (*regMr)(void* comm, void* data, RegSize size, int type, void** mhandle);
    result_t (*regMrDmaBuf)(void* comm, void* data, std::size_t size, int type, std::uint64_t offset, int fd,
                            void** mhandle);
    result_t (*deregMr)(void* comm, void* mhandle);
    result_t (*isend)(void* sendComm, void* data, int size, int tag, void* mhandle, void** request);
    result_t (*irecv)(void* recvComm, int n, void** data, int* sizes, int* tags, void** mhandles, void** request);
    result_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
    result_t (*test)(void* request, int* done, int* sizes);
    result_t (*closeSend)(void* sendComm);
    result_t (*closeRecv)(void* recvComm);
    result_t (*closeListen)(void* listenComm);
    result_t (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle);
    result_t (*irecvConsumed)(void* recvComm, int n, void* request);
};
using net_v7 = net_v7_layout<properties_v7, int>;
using net_v8 = net_v7_layout<properties_v8, std::size_t>;

struct net_v9 {
    const char* name;
    result_t (*init)(logger_t logFunction);
    result_t (*devices)(int* ndev);
    result_t (*getProperties)(int dev, properties_v9* props);
    result_t (*listen)(int dev, void* handle, void** listenComm);
    result_t (*connect)(int dev, void* handle, void** sendComm, device_handle_v9** sendDevComm);
    result_t (*accept)(void* listenComm, void** recvComm, device_handle_v9** recvDevComm);
    result_t (*regMr)(void* comm, void* data, std::size_t size, int type, void** mhandle);
    result_t (*regMrDmaBuf)(void* comm, void* data, std::size_t size, int type, std::uint64_t offset, int fd,
                            void** mhandle);
    result_t (*deregMr)(void* comm, void* mhandle);
    result_t (*isend)(void* sendComm, void* data, std::size_t size, int tag, void* mhandle, void** request);
    result_t (*irecv)(void* recvComm, int n, void** data, std::size_t* sizes, int* tags, void** mhandles,
                      void** request);
    result_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
    result_t (*test)(void* request, int* done, int* sizes);
    result_t (*closeSend)(void* sendComm);
    result_t (*closeRecv)(void* recvComm);
    result_t (*closeListen)(void* listenComm);
    result_t (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle);
    result_t (*irecvConsumed)(void* recvComm, int n, void* request);
    result_t (*makeVDevice)(int* d, vdevice_props_v9* props);
};

struct net_v10 {
    const char* name;
    result_t (*init)(logger_t logFunction, profiler_callback_t profFunction);
    result_t (*devices)(int* ndev);
    result_t (*getProperties)(int dev, properties_v10* props);
    result_t (*listen)(int dev, void* handle, void** listenComm);
    result_t (*connect)(int dev, comm_config_v10* config, void* handle, void** sendComm,
                        device_handle_v10** sendDevComm);
    result_t (*accept)(void* listenComm, void** recvComm, device_handle_v10** recvDevComm);
    result_t (*regMr)(void* comm, void* data, std::size_t size, int type, void** mhandle);
    result_t (*regMrDmaBuf)(void* comm, void* data, std::size_t size, int type, std::uint64_t offset, int fd,
                            void** mhandle);
    result_t (*deregMr)(void* comm, void* mhandle);
    result_t (*isend)(void* sendComm, void* data, std::size_t size, int tag, void* mhandle, void* phandle,
                      void** request);
    result_t (*irecv)(void* recvComm, int n, void** data, std::size_t* sizes, int* tags, void** mhandles,
                      void** phandles, void** request);
    result_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
    result_t (*test)(void* request, int* done, int* sizes);
    result_t (*closeSend)(void* sendComm);
    result_t (*closeRecv)(void* recvComm);
    result_t (*closeListen)(void* listenComm);
    result_t (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle);
    result_t (*irecvConsumed)(void* recvComm, int n, void* request);
    result_t (*makeVDevice)(int* d, vdevice_props_v10* props);
};

/// v11 and v12 differ only in their property and virtual-device structs.
template <class Props, class VProps, class Config, class Attr>
struct net_v11_layout {
    const char* name;
    result_t (*init)(void** ctx, std::uint64_t commId, Config* config, logger_t logFunction,
                     profiler_callback_t profFunction);
    result_t (*devices)(int* ndev);
    result_t (*getProperties)(int dev, Props* props);
    result_t (*listen)(void* ctx, int dev, void* handle, void** listenComm);
    result_t (*connect)(void* ctx, int dev, void* handle, void** sendComm, device_handle_v11** sendDevComm);
    result_t (*accept)(void* listenComm, void** recvComm, device_handle_v11** recvDevComm);
    result_t (*regMr)(void* comm, void* data, std::size_t size, int type, void** mhandle);
    result_t (*regMrDmaBuf)(void* comm, void* data, std::size_t size, int type, std::uint64_t offset, int fd,
                            void** mhandle);
    result_t (*deregMr)(void* comm, void* mhandle);
    result_t (*isend)(void* sendComm, void* data, std::size_t size, int tag, void* mhandle, void* phandle,
                      void** request);
    result_t (*irecv)(void* recvComm, int n, void** data, std::size_t* sizes, int* tags, void** mhandles,
                      void** phandles, void** request);
    result_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
    result_t (*test)(void* request, int* done, int* sizes);
    result_t (*closeSend)(void* sendComm);
    result_t (*closeRecv)(void* recvComm);
    result_t (*closeListen)(void* listenComm);
    result_t (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle);
    result_t (*irecvConsumed)(void* recvComm, int n, void* request);
    result_t (*makeVDevice)(int* d, VProps* props);
    result_t (*finalize)(void* ctx);
    result_t (*setNetAttr)(void* ctx, Attr* netAttr);
};
using net_v11 = net_v11_layout<properties_v11, vdevice_props_v11, comm_config_v11, net_attr_v11>;
using net_v12 = net_v11_layout<properties_v12, vdevice_props_v12, comm_config_v12, net_attr_v12>;

}  // namespace loom::nccl_abi

// The exported symbols, with C linkage, exactly as NCCL looks them up.
extern "C" {
__attribute__((visibility("default"))) extern const loom::nccl_abi::net_v6 ncclNetPlugin_v6;
__attribute__((visibility("default"))) extern const loom::nccl_abi::net_v7 ncclNetPlugin_v7;
__attribute__((visibility("default"))) extern const loom::nccl_abi::net_v8 ncclNetPlugin_v8;
__attribute__((visibility("default"))) extern const loom::nccl_abi::net_v9 ncclNetPlugin_v9;
__attribute__((visibility("default"))) extern const loom::nccl_abi::net_v10 ncclNetPlugin_v10;
__attribute__((visibility("default"))) extern const loom::nccl_abi::net_v11 ncclNetPlugin_v11;
__attribute__((visibility("default"))) extern const loom::nccl_abi::net_v12 ncclNetPlugin_v12;
}
