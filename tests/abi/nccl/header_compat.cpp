// tests/abi/nccl/header_compat.cpp — build-time check of our NCCL net-plugin ABI declarations
// (nccl-net/include/loom/nccl/net_abi.hpp) against NCCL's own plugin headers.
//
// Compiled only when CMake finds NCCL's plugin headers (plugins/net/example/nccl/ of the NCCL
// sources; scripts/setup unpacks them from Debian's nvidia-nccl 2.29.7 source package, which
// carries ABI v6 ... v11). The checks are static_asserts: a mismatch fails the build.
//   * every struct: sizeof, alignof and the number of fields;
//   * every member (data and function pointers): offsetof, sizeof, and an "ABI-equivalent"
//     type — the same type, or an enum/integer of the same size and signedness, or pointers /
//     arrays / function signatures whose parts are ABI-equivalent (so a parameter that is
//     `int` in NCCL and `size_t` here is caught even though the offsets agree);
//   * the constants NCCL defines for the plugin interface.
// v12 is newer than these headers: it is checked against v11 where the two are identical and
// against the layout it must have on LP64 (see the facts in shared/abi/nccl-net.md).
// The gtest cases only report what was compared: the real test is that this file compiles.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <type_traits>

#include <gtest/gtest.h>

#include "net.h"  // NCCL's (self-contained: err.h, common.h, net_device.h, net_v*.h)

#include "loom/nccl/net_abi.hpp"

namespace {

namespace ours = loom::nccl_abi;

// ---------------------------------------------------------------- ABI equivalence of types
// twin<Ours, Theirs>: a struct pair whose layouts are checked below (declared by LOOM_ABI_STRUCT).
template <class A, class B>
struct twin : std::false_type {};

template <class T>
inline constexpr bool int_like = std::is_integral_v<T> || std::is_enum_v<T>;

template <class A, class B>
struct equiv;
template <class A, class B>
inline constexpr bool equiv_v = equiv<A, B>::value;

// Enums: only size and alignment count (GCC gives NCCL's C enums an unsigned underlying type,
// our result_t is `enum : int`; both are passed and stored as 32-bit values). Two integers of
// the same size must also agree in signedness.
template <class A, class B>
inline constexpr bool same_int_rep = [] {
    if constexpr (!int_like<A> || !int_like<B>)
        return false;
    else if constexpr (sizeof(A) != sizeof(B) || alignof(A) != alignof(B))
        return false;
    else if constexpr (std::is_enum_v<A> || std::is_enum_v<B>)
        return true;
    else
        return std::is_signed_v<A> == std::is_signed_v<B>;
}();

template <class A, class B>
struct equiv : std::bool_constant<std::is_same_v<A, B> || twin<A, B>::value || same_int_rep<A, B>> {};

template <class A, class B>
struct equiv<A*, B*>
    : std::bool_constant<std::is_const_v<A> == std::is_const_v<B> && std::is_volatile_v<A> == std::is_volatile_v<B> &&
                         equiv_v<std::remove_cv_t<A>, std::remove_cv_t<B>>> {};

template <class A, class B, std::size_t N>
struct equiv<A[N], B[N]> : equiv<A, B> {};

template <class RA, class... As, class RB, class... Bs>
struct equiv<RA(As...), RB(Bs...)> {
    static constexpr bool value = [] {
        if constexpr (sizeof...(As) != sizeof...(Bs))
            return false;
        else
            return equiv_v<RA, RB> && (equiv_v<As, Bs> && ...);
    }();
};

template <class RA, class... As, class RB, class... Bs>
struct equiv<RA(As..., ...), RB(Bs..., ...)> : equiv<RA(As...), RB(Bs...)> {};

// ---------------------------------------------------------------- field count
// Number of initialisers an aggregate accepts (an array member counts its elements, by brace
// elision; that is the same on both sides, so counts of twins must agree).
struct any_field {
    template <class T>
    operator T() const;  // NOLINT: only used in unevaluated contexts
};

template <class T, class... Fs>
consteval std::size_t field_count() {
    if constexpr (requires { T{Fs{}..., any_field{}}; })
        return field_count<T, Fs..., any_field>();
    else
        return sizeof...(Fs);
}

}  // namespace

// ---------------------------------------------------------------- the checks
// LOOM_ABI_STRUCT(ours, theirs, n): declares the pair as twins and checks size, alignment and
// that both have exactly n fields; LOOM_ABI_MEMBER must then be listed for each of them.
#define LOOM_ABI_STRUCT(ours, theirs, n)                                                                     \
    namespace {                                                                                              \
    template <>                                                                                              \
    struct twin<ours, theirs> : std::true_type {};                                                           \
    }                                                                                                        \
    static_assert(std::is_standard_layout_v<ours> && std::is_trivially_copyable_v<ours>, #ours ": not POD"); \
    static_assert(sizeof(ours) == sizeof(theirs), #ours ": sizeof differs from " #theirs);                   \
    static_assert(alignof(ours) == alignof(theirs), #ours ": alignof differs from " #theirs);                \
    static_assert(field_count<ours>() == (n) && field_count<theirs>() == (n),                                \
                  #ours " / " #theirs ": number of fields is not " #n)

#define LOOM_ABI_MEMBER(ours, theirs, m)                                                       \
    static_assert(offsetof(ours, m) == offsetof(theirs, m), #ours "::" #m ": offset differs"); \
    static_assert(sizeof(ours::m) == sizeof(theirs::m), #ours "::" #m ": size differs");       \
    static_assert(equiv_v<decltype(ours::m), decltype(theirs::m)>, #ours "::" #m ": type is not ABI-equivalent")

// Scalars and callbacks.
static_assert(equiv_v<ours::result_t, ncclResult_t>);
static_assert(sizeof(ours::result_t) == sizeof(ncclResult_t) && alignof(ours::result_t) == alignof(ncclResult_t));
static_assert(equiv_v<ours::logger_t, ncclDebugLogger_t>, "logger_t");
static_assert(equiv_v<ours::profiler_callback_t, ncclProfilerCallback_t>, "profiler_callback_t");

// Device handle (v7; v8 ... v11 are aliases of it in NCCL, and in ours up to v12).
LOOM_ABI_STRUCT(ours::device_handle_v7, ncclNetDeviceHandle_v7_t, 5);
LOOM_ABI_MEMBER(ours::device_handle_v7, ncclNetDeviceHandle_v7_t, netDeviceType);
LOOM_ABI_MEMBER(ours::device_handle_v7, ncclNetDeviceHandle_v7_t, netDeviceVersion);
LOOM_ABI_MEMBER(ours::device_handle_v7, ncclNetDeviceHandle_v7_t, handle);
LOOM_ABI_MEMBER(ours::device_handle_v7, ncclNetDeviceHandle_v7_t, size);
LOOM_ABI_MEMBER(ours::device_handle_v7, ncclNetDeviceHandle_v7_t, needsProxyProgress);
static_assert(equiv_v<ours::device_handle_v8, ncclNetDeviceHandle_v8_t>);
static_assert(equiv_v<ours::device_handle_v9, ncclNetDeviceHandle_v9_t>);
static_assert(equiv_v<ours::device_handle_v10, ncclNetDeviceHandle_v10_t>);
static_assert(equiv_v<ours::device_handle_v11, ncclNetDeviceHandle_v11_t>);

// Virtual-device properties (1 + NCCL_NET_MAX_DEVS_PER_NIC fields).
#define LOOM_ABI_VDEV(ours, theirs)       \
    LOOM_ABI_STRUCT(ours, theirs, 5);     \
    LOOM_ABI_MEMBER(ours, theirs, ndevs); \
    LOOM_ABI_MEMBER(ours, theirs, devs)
LOOM_ABI_VDEV(ours::vdevice_props_v9, ncclNetVDeviceProps_v9_t);
LOOM_ABI_VDEV(ours::vdevice_props_v10, ncclNetVDeviceProps_v10_t);
LOOM_ABI_VDEV(ours::vdevice_props_v11, ncclNetVDeviceProps_v11_t);

// Comm config (v10, v11).
LOOM_ABI_STRUCT(ours::comm_config_v10, ncclNetCommConfig_v10_t, 1);
LOOM_ABI_MEMBER(ours::comm_config_v10, ncclNetCommConfig_v10_t, trafficClass);
LOOM_ABI_STRUCT(ours::comm_config_v11, ncclNetCommConfig_v11_t, 1);
LOOM_ABI_MEMBER(ours::comm_config_v11, ncclNetCommConfig_v11_t, trafficClass);

// Net attributes (v11).
LOOM_ABI_STRUCT(ours::net_comm_attr, ncclNetCommAttr_v11_t, 4);
LOOM_ABI_MEMBER(ours::net_comm_attr, ncclNetCommAttr_v11_t, maxConcurrentPeers);
LOOM_ABI_MEMBER(ours::net_comm_attr, ncclNetCommAttr_v11_t, minConcurrentPeers);
LOOM_ABI_MEMBER(ours::net_comm_attr, ncclNetCommAttr_v11_t, maxFlowsPerPeer);
LOOM_ABI_MEMBER(ours::net_comm_attr, ncclNetCommAttr_v11_t, minFlowsPerPeer);
LOOM_ABI_STRUCT(ours::net_attr_v11, ncclNetAttr_v11_t, 5);
LOOM_ABI_MEMBER(ours::net_attr_v11, ncclNetAttr_v11_t, sendCommAttr);
LOOM_ABI_MEMBER(ours::net_attr_v11, ncclNetAttr_v11_t, recvCommAttr);
LOOM_ABI_MEMBER(ours::net_attr_v11, ncclNetAttr_v11_t, op);
LOOM_ABI_MEMBER(ours::net_attr_v11, ncclNetAttr_v11_t, algo);
LOOM_ABI_MEMBER(ours::net_attr_v11, ncclNetAttr_v11_t, proto);

// ---------------------------------------------------------------- properties
#define LOOM_ABI_PROPS_V6_COMMON(ours, theirs) \
    LOOM_ABI_MEMBER(ours, theirs, name);       \
    LOOM_ABI_MEMBER(ours, theirs, pciPath);    \
    LOOM_ABI_MEMBER(ours, theirs, guid);       \
    LOOM_ABI_MEMBER(ours, theirs, ptrSupport); \
    LOOM_ABI_MEMBER(ours, theirs, speed);      \
    LOOM_ABI_MEMBER(ours, theirs, port);       \
    LOOM_ABI_MEMBER(ours, theirs, latency);    \
    LOOM_ABI_MEMBER(ours, theirs, maxComms);   \
    LOOM_ABI_MEMBER(ours, theirs, maxRecvs)

LOOM_ABI_STRUCT(ours::properties_v6, ncclNetProperties_v6_t, 9);
LOOM_ABI_PROPS_V6_COMMON(ours::properties_v6, ncclNetProperties_v6_t);

LOOM_ABI_STRUCT(ours::properties_v7, ncclNetProperties_v7_t, 11);
LOOM_ABI_PROPS_V6_COMMON(ours::properties_v7, ncclNetProperties_v7_t);
LOOM_ABI_MEMBER(ours::properties_v7, ncclNetProperties_v7_t, netDeviceType);
LOOM_ABI_MEMBER(ours::properties_v7, ncclNetProperties_v7_t, netDeviceVersion);

LOOM_ABI_STRUCT(ours::properties_v8, ncclNetProperties_v8_t, 12);
LOOM_ABI_PROPS_V6_COMMON(ours::properties_v8, ncclNetProperties_v8_t);
LOOM_ABI_MEMBER(ours::properties_v8, ncclNetProperties_v8_t, regIsGlobal);
LOOM_ABI_MEMBER(ours::properties_v8, ncclNetProperties_v8_t, netDeviceType);
LOOM_ABI_MEMBER(ours::properties_v8, ncclNetProperties_v8_t, netDeviceVersion);

// v9/v10: 16 fields, v11: 17 (vProps counts as one: it is initialised as a whole).
#define LOOM_ABI_PROPS_V9(ours, theirs, n)           \
    LOOM_ABI_STRUCT(ours, theirs, n);                \
    LOOM_ABI_PROPS_V6_COMMON(ours, theirs);          \
    LOOM_ABI_MEMBER(ours, theirs, regIsGlobal);      \
    LOOM_ABI_MEMBER(ours, theirs, forceFlush);       \
    LOOM_ABI_MEMBER(ours, theirs, netDeviceType);    \
    LOOM_ABI_MEMBER(ours, theirs, netDeviceVersion); \
    LOOM_ABI_MEMBER(ours, theirs, vProps);           \
    LOOM_ABI_MEMBER(ours, theirs, maxP2pBytes);      \
    LOOM_ABI_MEMBER(ours, theirs, maxCollBytes)
LOOM_ABI_PROPS_V9(ours::properties_v9, ncclNetProperties_v9_t, 16);
LOOM_ABI_PROPS_V9(ours::properties_v10, ncclNetProperties_v10_t, 16);
LOOM_ABI_PROPS_V9(ours::properties_v11, ncclNetProperties_v11_t, 17);
LOOM_ABI_MEMBER(ours::properties_v11, ncclNetProperties_v11_t, maxMultiRequestSize);

// ---------------------------------------------------------------- function tables
#define LOOM_ABI_NET_V6_COMMON(ours, theirs)      \
    LOOM_ABI_MEMBER(ours, theirs, name);          \
    LOOM_ABI_MEMBER(ours, theirs, init);          \
    LOOM_ABI_MEMBER(ours, theirs, devices);       \
    LOOM_ABI_MEMBER(ours, theirs, getProperties); \
    LOOM_ABI_MEMBER(ours, theirs, listen);        \
    LOOM_ABI_MEMBER(ours, theirs, connect);       \
    LOOM_ABI_MEMBER(ours, theirs, accept);        \
    LOOM_ABI_MEMBER(ours, theirs, regMr);         \
    LOOM_ABI_MEMBER(ours, theirs, regMrDmaBuf);   \
    LOOM_ABI_MEMBER(ours, theirs, deregMr);       \
    LOOM_ABI_MEMBER(ours, theirs, isend);         \
    LOOM_ABI_MEMBER(ours, theirs, irecv);         \
    LOOM_ABI_MEMBER(ours, theirs, iflush);        \
    LOOM_ABI_MEMBER(ours, theirs, test);          \
    LOOM_ABI_MEMBER(ours, theirs, closeSend);     \
    LOOM_ABI_MEMBER(ours, theirs, closeRecv);     \
    LOOM_ABI_MEMBER(ours, theirs, closeListen)
#define LOOM_ABI_NET_V7_COMMON(ours, theirs)    \
    LOOM_ABI_NET_V6_COMMON(ours, theirs);       \
    LOOM_ABI_MEMBER(ours, theirs, getDeviceMr); \
    LOOM_ABI_MEMBER(ours, theirs, irecvConsumed)

LOOM_ABI_STRUCT(ours::net_v6, ncclNet_v6_t, 17);
LOOM_ABI_NET_V6_COMMON(ours::net_v6, ncclNet_v6_t);

LOOM_ABI_STRUCT(ours::net_v7, ncclNet_v7_t, 19);
LOOM_ABI_NET_V7_COMMON(ours::net_v7, ncclNet_v7_t);

LOOM_ABI_STRUCT(ours::net_v8, ncclNet_v8_t, 19);
LOOM_ABI_NET_V7_COMMON(ours::net_v8, ncclNet_v8_t);

LOOM_ABI_STRUCT(ours::net_v9, ncclNet_v9_t, 20);
LOOM_ABI_NET_V7_COMMON(ours::net_v9, ncclNet_v9_t);
LOOM_ABI_MEMBER(ours::net_v9, ncclNet_v9_t, makeVDevice);

LOOM_ABI_STRUCT(ours::net_v10, ncclNet_v10_t, 20);
LOOM_ABI_NET_V7_COMMON(ours::net_v10, ncclNet_v10_t);
LOOM_ABI_MEMBER(ours::net_v10, ncclNet_v10_t, makeVDevice);

LOOM_ABI_STRUCT(ours::net_v11, ncclNet_v11_t, 22);
LOOM_ABI_NET_V7_COMMON(ours::net_v11, ncclNet_v11_t);
LOOM_ABI_MEMBER(ours::net_v11, ncclNet_v11_t, makeVDevice);
LOOM_ABI_MEMBER(ours::net_v11, ncclNet_v11_t, finalize);
LOOM_ABI_MEMBER(ours::net_v11, ncclNet_v11_t, setNetAttr);

// ---------------------------------------------------------------- constants
namespace {
consteval long long I(auto v) { return static_cast<long long>(v); }
}  // namespace
// (compared as int: the enums are distinct types)
static_assert(I(ours::success) == I(ncclSuccess) && I(ours::unhandled_cuda_error) == I(ncclUnhandledCudaError) &&
              I(ours::system_error) == I(ncclSystemError) && I(ours::internal_error) == I(ncclInternalError) &&
              I(ours::invalid_argument) == I(ncclInvalidArgument) && I(ours::invalid_usage) == I(ncclInvalidUsage) &&
              I(ours::remote_error) == I(ncclRemoteError));  // ncclInProgress (7) is not in the plugin's err.h
static_assert(ours::handle_maxsize == NCCL_NET_HANDLE_MAXSIZE);
static_assert(ours::max_requests == NCCL_NET_MAX_REQUESTS);
static_assert(ours::ptr_host == NCCL_PTR_HOST && ours::ptr_cuda == NCCL_PTR_CUDA &&
              ours::ptr_dmabuf == NCCL_PTR_DMABUF);
static_assert(ours::max_devs_per_nic_v9 == NCCL_NET_MAX_DEVS_PER_NIC);
static_assert(ours::optional_recv_completion == NCCL_NET_OPTIONAL_RECV_COMPLETION);
static_assert(ours::device_host == NCCL_NET_DEVICE_HOST && ours::device_unpack == NCCL_NET_DEVICE_UNPACK);
static_assert(I(ours::log_none) == I(NCCL_LOG_NONE) && I(ours::log_version) == I(NCCL_LOG_VERSION) &&
              I(ours::log_warn) == I(NCCL_LOG_WARN) && I(ours::log_info) == I(NCCL_LOG_INFO) &&
              I(ours::log_abort) == I(NCCL_LOG_ABORT) && I(ours::log_trace) == I(NCCL_LOG_TRACE));
static_assert(ours::log_init == NCCL_INIT && ours::log_net == NCCL_NET);
static_assert(I(ours::profiler_net_start) == I(ncclProfilerNetEventStart) &&
              I(ours::profiler_net_stop) == I(ncclProfilerNetEventStop) &&
              I(ours::profiler_net_update) == I(ncclProfilerNetEventUpdate) &&
              I(ours::profiler_net_update_and_stop) == I(ncclProfilerNetEventUpdateAndStop));

// ---------------------------------------------------------------- v12 (not in these headers)
// Everything v12 shares with v11 is the very same type; what differs is checked against the
// layout the published v12 interface implies on LP64.
static_assert(std::is_same_v<ours::device_handle_v12, ours::device_handle_v11>);
static_assert(std::is_same_v<ours::comm_config_v12, ours::comm_config_v11>);
static_assert(std::is_same_v<ours::net_attr_v12, ours::net_attr_v11>);

// vdevice_props_v12: like v11 but up to 8 devices.
static_assert(field_count<ours::vdevice_props_v12>() == 1 + ours::max_devs_per_nic_v12);
static_assert(std::is_same_v<decltype(ours::vdevice_props_v12::devs), int[8]>);
static_assert(offsetof(ours::vdevice_props_v12, ndevs) == offsetof(ours::vdevice_props_v11, ndevs));
static_assert(offsetof(ours::vdevice_props_v12, devs) == offsetof(ours::vdevice_props_v11, devs));
static_assert(sizeof(ours::vdevice_props_v12) == 36 && alignof(ours::vdevice_props_v12) == 4);

// properties_v12: v11's members in v11's order, then int16_t railId, planeId.
#define LOOM_ABI_SAME_AS_V11(m)                                                                             \
    static_assert(offsetof(ours::properties_v12, m) == offsetof(ours::properties_v11, m) &&                 \
                      std::is_same_v<decltype(ours::properties_v12::m), decltype(ours::properties_v11::m)>, \
                  "properties_v12::" #m " differs from v11")
LOOM_ABI_SAME_AS_V11(name);
LOOM_ABI_SAME_AS_V11(pciPath);
LOOM_ABI_SAME_AS_V11(guid);
LOOM_ABI_SAME_AS_V11(ptrSupport);
LOOM_ABI_SAME_AS_V11(regIsGlobal);
LOOM_ABI_SAME_AS_V11(forceFlush);
LOOM_ABI_SAME_AS_V11(speed);
LOOM_ABI_SAME_AS_V11(port);
LOOM_ABI_SAME_AS_V11(latency);
LOOM_ABI_SAME_AS_V11(maxComms);
LOOM_ABI_SAME_AS_V11(maxRecvs);
LOOM_ABI_SAME_AS_V11(netDeviceType);
LOOM_ABI_SAME_AS_V11(netDeviceVersion);
static_assert(offsetof(ours::properties_v12, vProps) == offsetof(ours::properties_v11, vProps));
static_assert(std::is_same_v<decltype(ours::properties_v12::vProps), ours::vdevice_props_v12>);
static_assert(std::is_same_v<decltype(ours::properties_v12::maxP2pBytes), std::size_t> &&
              std::is_same_v<decltype(ours::properties_v12::maxCollBytes), std::size_t> &&
              std::is_same_v<decltype(ours::properties_v12::maxMultiRequestSize), int> &&
              std::is_same_v<decltype(ours::properties_v12::railId), std::int16_t> &&
              std::is_same_v<decltype(ours::properties_v12::planeId), std::int16_t>);
static_assert(field_count<ours::properties_v12>() == 19);
// LP64 layout: the 36-byte vProps at 64 ends at 100; the size_t members realign to 104.
static_assert(sizeof(void*) == 8 && sizeof(std::size_t) == 8, "the offsets below are for LP64");
static_assert(offsetof(ours::properties_v11, vProps) == 64 && offsetof(ours::properties_v11, maxP2pBytes) == 88 &&
              offsetof(ours::properties_v11, maxMultiRequestSize) == 104 && sizeof(ours::properties_v11) == 112);
static_assert(offsetof(ours::properties_v12, vProps) == 64);
static_assert(offsetof(ours::properties_v12, maxP2pBytes) == 104);
static_assert(offsetof(ours::properties_v12, maxCollBytes) == 112);
static_assert(offsetof(ours::properties_v12, maxMultiRequestSize) == 120);
static_assert(offsetof(ours::properties_v12, railId) == 124);
static_assert(offsetof(ours::properties_v12, planeId) == 126);
static_assert(sizeof(ours::properties_v12) == 128 && alignof(ours::properties_v12) == 8);

// net_v12: v11's table, member for member; only getProperties and makeVDevice take the v12 types.
static_assert(sizeof(ours::net_v12) == sizeof(ours::net_v11) && alignof(ours::net_v12) == alignof(ours::net_v11));
static_assert(field_count<ours::net_v12>() == 22);
#define LOOM_ABI_NET_SAME_AS_V11(m)                                                           \
    static_assert(offsetof(ours::net_v12, m) == offsetof(ours::net_v11, m) &&                 \
                      std::is_same_v<decltype(ours::net_v12::m), decltype(ours::net_v11::m)>, \
                  "net_v12::" #m " differs from v11")
LOOM_ABI_NET_SAME_AS_V11(name);
LOOM_ABI_NET_SAME_AS_V11(init);
LOOM_ABI_NET_SAME_AS_V11(devices);
LOOM_ABI_NET_SAME_AS_V11(listen);
LOOM_ABI_NET_SAME_AS_V11(connect);
LOOM_ABI_NET_SAME_AS_V11(accept);
LOOM_ABI_NET_SAME_AS_V11(regMr);
LOOM_ABI_NET_SAME_AS_V11(regMrDmaBuf);
LOOM_ABI_NET_SAME_AS_V11(deregMr);
LOOM_ABI_NET_SAME_AS_V11(isend);
LOOM_ABI_NET_SAME_AS_V11(irecv);
LOOM_ABI_NET_SAME_AS_V11(iflush);
LOOM_ABI_NET_SAME_AS_V11(test);
LOOM_ABI_NET_SAME_AS_V11(closeSend);
LOOM_ABI_NET_SAME_AS_V11(closeRecv);
LOOM_ABI_NET_SAME_AS_V11(closeListen);
LOOM_ABI_NET_SAME_AS_V11(getDeviceMr);
LOOM_ABI_NET_SAME_AS_V11(irecvConsumed);
LOOM_ABI_NET_SAME_AS_V11(finalize);
LOOM_ABI_NET_SAME_AS_V11(setNetAttr);
static_assert(offsetof(ours::net_v12, getProperties) == offsetof(ours::net_v11, getProperties) &&
              std::is_same_v<decltype(ours::net_v12::getProperties), ours::result_t (*)(int, ours::properties_v12*)>);
static_assert(offsetof(ours::net_v12, makeVDevice) == offsetof(ours::net_v11, makeVDevice) &&
              std::is_same_v<decltype(ours::net_v12::makeVDevice), ours::result_t (*)(int*, ours::vdevice_props_v12*)>);

// ---------------------------------------------------------------- runtime report
namespace {

TEST(NcclHeaderCompat, LayoutsMatchNcclHeaders) {
    // Reaching this point means every static_assert above held; print what was compared.
    std::printf("NCCL plugin headers: %s\n", LOOM_NCCL_HEADERS_PATH);
    std::printf("properties v6..v11: %zu %zu %zu %zu %zu %zu bytes\n", sizeof(ncclNetProperties_v6_t),
                sizeof(ncclNetProperties_v7_t), sizeof(ncclNetProperties_v8_t), sizeof(ncclNetProperties_v9_t),
                sizeof(ncclNetProperties_v10_t), sizeof(ncclNetProperties_v11_t));
    std::printf("net tables v6..v11:  %zu %zu %zu %zu %zu %zu bytes\n", sizeof(ncclNet_v6_t), sizeof(ncclNet_v7_t),
                sizeof(ncclNet_v8_t), sizeof(ncclNet_v9_t), sizeof(ncclNet_v10_t), sizeof(ncclNet_v11_t));
    std::printf("v12 (ours only): properties %zu bytes, net table %zu bytes\n", sizeof(ours::properties_v12),
                sizeof(ours::net_v12));
    EXPECT_EQ(sizeof(ours::net_v11), sizeof(ncclNet_v11_t));
    EXPECT_EQ(sizeof(ours::properties_v11), sizeof(ncclNetProperties_v11_t));
}

}  // namespace
