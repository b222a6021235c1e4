// Our own declarations of the NIXL 1.4.x backend-plugin ABI, for libplugin_LOOM.so.
//
// Where the facts come from
//   * The published headers of ai-dynamo/nixl (src/api/cpp/nixl_types.h, nixl_descriptors.h,
//     backend/backend_aux.h, backend/backend_engine.h, backend/backend_plugin.h,
//     src/utils/common/nixl_time.h). The header index holds many undated versions of each file,
//     none of them pinned to the v1.4.0 tag, so every fact below that a layout or a call depends
//     on was checked against the shipped binaries of nixl-cu12 1.4.1 (PyPI wheel, built with
//     GCC 14.2, C++20, libstdc++ with the cxx11 string ABI):
//       - virtual order: the plugin-local copy of `vtable for nixlBackendEngine` and
//         `vtable for nixlPosixEngine` in plugins/libplugin_POSIX.so (and nixlUcxEngine in
//         libplugin_UCX.so);
//       - engine member offsets: nixlPosixEngine's constructor (the base constructor is inlined);
//       - init-parameter offsets: nixlAgent::createBackend in libnixl.so;
//       - descriptor-list layout and element sizes: descCount()/operator[] in libnixl_build.so;
//       - plugin table and API version: nixl_plugin_init in libplugin_POSIX.so (stores 1) and
//         the backend loader in libnixl.so (`cmpl $0x1, (%rax)` on the returned table);
//       - status range: nixlEnumStrings::statusStr (switch over -12..1).
//     The same checks on nixl-cu12 1.5.1 give identical results (see the end of this file).
//
// What crosses the boundary
//   Only two named symbols: the extern "C" nixl_plugin_init / nixl_plugin_fini. Everything else
//   is reached by layout (members the agent's inline code reads out of our objects) or by vtable
//   slot (virtual calls). C++ mangled names therefore never have to resolve against NIXL, but
//   every class below must have NIXL's exact member order and sizes, and nixlBackendEngine its
//   exact virtual order. NIXL does not dynamic_cast engines, metadata or request handles
//   (libnixl.so's only __dynamic_cast uses are on its own plugin-handle classes).
//
// Out-of-line NIXL code, and why this plugin needs none of it
//   NIXL defines a number of descriptor members out of line, in libnixl_build.so (NOT in
//   libnixl.so; the shipped plugins that use them, e.g. GUSLI and GPUNETIO, list libnixl_build.so
//   as NEEDED, while POSIX and INFINIA link neither library). In 1.4.1 those are:
//     nixlBasicDesc::nixlBasicDesc(const uintptr_t&, const size_t&, const uint64_t&)  _ZN13nixlBasicDescC1ERKmS1_S1_
//     nixlBasicDesc::nixlBasicDesc(const nixl_blob_t&)      (deserializer)
//     nixlBasicDesc::overlaps, ::serialize, ::print
//     operator==(const nixlBasicDesc&, const nixlBasicDesc&), operator!=(same)
//     nixlBlobDesc::nixlBlobDesc(addr, len, devId, meta) / (const nixlBasicDesc&, meta) / (blob)
//     nixlBlobDesc::serialize, ::print, operator==(const nixlBlobDesc&, const nixlBlobDesc&)
//     nixlRemoteDesc constructors, ::serialize, operator==
//     nixlDescList<T>: the (nixl_mem_t, int) and (nixlSerDes*) constructors, resize, addDesc,
//       remDesc, trim, getIndex, serialize, print, to_string, operator== — explicitly
//       instantiated there for T = nixlBasicDesc, nixlMetaDesc, nixlBlobDesc, nixlRemoteDesc,
//       nixlRemoteMetaDesc, nixlSectionDesc (e.g. _ZN12nixlDescListI12nixlMetaDescE7addDescERKS0_).
//   Header-inline in NIXL (no symbol needed): nixlDescList<T>::getType, descCount (returns int),
//   isEmpty, operator[] (const and non-const), begin/end, reserve, clear, emplace;
//   nixlBasicDesc::operator<, covers; nixlMetaDesc's constructors; the data members addr, len,
//   devId, metaInfo, metadataP, remoteAgent.
//   A backend only reads the lists and descriptors the agent hands it, so everything below is
//   defined inline here with bodies of our own; the plugin links no NIXL library. Build it with
//   hidden visibility (-fvisibility=hidden -fvisibility-inlines-hidden) so our inline copies of
//   these NIXL-named members stay private to the plugin; NIXL dlopens backends RTLD_LOCAL
//   (flags 0x1002, or 0x100a with RTLD_DEEPBIND), so they could not interpose on libnixl anyway.
//
// Toolchain requirements that follow from the above
//   libstdc++ with _GLIBCXX_USE_CXX11_ABI=1, LP64, and no _GLIBCXX_DEBUG (debug-mode containers
//   change the sizes of std::vector / std::unordered_map). Compiling as C++23 instead of NIXL's
//   C++20 does not change the layout of std::string, std::vector, std::unordered_map,
//   std::optional, std::pair or std::mutex. The static_asserts at the end pin all of it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#if defined(_GLIBCXX_DEBUG)
#error "nixl_abi.hpp: libstdc++ debug mode changes container layouts; NIXL is built without it"
#endif

// Gives the layout checks at the end of this file access to private and protected members.
// A friend declaration changes neither the layout nor the vtable of a class.
struct nixl_abi_layout_probe;

// ---------------------------------------------------------------------------------------------
// Enums and typedefs (nixl_types.h). Unscoped enums have int as underlying type, as in NIXL.
// ---------------------------------------------------------------------------------------------

enum nixl_mem_t { DRAM_SEG = 0, VRAM_SEG = 1, BLK_SEG = 2, OBJ_SEG = 3, FILE_SEG = 4 };

enum nixl_xfer_op_t { NIXL_READ = 0, NIXL_WRITE = 1 };

// The full 1.4.1 set: statusStr covers exactly -12..1.
enum nixl_status_t {
    NIXL_IN_PROG = 1,
    NIXL_SUCCESS = 0,
    NIXL_ERR_NOT_POSTED = -1,
    NIXL_ERR_INVALID_PARAM = -2,
    NIXL_ERR_BACKEND = -3,
    NIXL_ERR_NOT_FOUND = -4,
    NIXL_ERR_MISMATCH = -5,
    NIXL_ERR_NOT_ALLOWED = -6,
    NIXL_ERR_REPOST_ACTIVE = -7,
    NIXL_ERR_UNKNOWN = -8,
    NIXL_ERR_NOT_SUPPORTED = -9,
    NIXL_ERR_REMOTE_DISCONNECT = -10,
    NIXL_ERR_CANCELED = -11,
    NIXL_ERR_NO_TELEMETRY = -12,
};

// Scoped, int underlying type (4 bytes in nixlBackendInitParams).
enum class nixl_thread_sync_t {
    NIXL_THREAD_SYNC_NONE = 0,
    NIXL_THREAD_SYNC_STRICT = 1,
    NIXL_THREAD_SYNC_RW = 2,
    NIXL_THREAD_SYNC_DEFAULT = NIXL_THREAD_SYNC_NONE,
};

// Output of estimateXferCost.
enum class nixl_cost_t { ANALYTICAL_BACKEND = 0 };

using nixl_backend_t = std::string;
using nixl_blob_t = std::string;  // binary-safe bytes, not text
using nixl_mem_list_t = std::vector<nixl_mem_t>;
using nixl_b_params_t = std::unordered_map<std::string, std::string>;
using nixl_query_resp_t = std::optional<nixl_b_params_t>;
using notif_list_t = std::vector<std::pair<std::string, std::string>>;  // (remote agent, message)

// Memory-view handle: an opaque pointer (mangles as void*&; the 1.0 "MemView" naming).
using nixlMemViewH = void*;

// Only ever passed by pointer across the interface (estimateXferCost's last argument).
struct nixlAgentOptionalArgs;
using nixl_opt_args_t = nixlAgentOptionalArgs;
class nixlSerDes;  // only named by the out-of-line NIXL members we do not declare

namespace nixlTime {
using us_t = std::uint64_t;  // microseconds
}

// ---------------------------------------------------------------------------------------------
// Descriptors (nixl_descriptors.h, backend_aux.h)
// ---------------------------------------------------------------------------------------------

// One contiguous range: 24 bytes, no vptr.
class nixlBasicDesc {
public:
    std::uintptr_t addr;  // start address (or offset for file/block/object memory)
    std::size_t len;
    std::uint64_t devId;  // GPU index, block/file id, ...

    // NIXL's default constructor leaves the members uninitialised; so does ours.
    nixlBasicDesc() {}
    nixlBasicDesc(const std::uintptr_t& a, const std::size_t& l, const std::uint64_t& dev)
        : addr(a), len(l), devId(dev) {}
    nixlBasicDesc(const nixlBasicDesc&) = default;
    nixlBasicDesc& operator=(const nixlBasicDesc&) = default;
    ~nixlBasicDesc() = default;

    // NIXL's order: device first, then address, then length.
    bool operator<(const nixlBasicDesc& o) const noexcept {
        if (devId != o.devId) return devId < o.devId;
        if (addr != o.addr) return addr < o.addr;
        return len < o.len;
    }

    // True when [q.addr, q.addr + q.len) lies inside this range on the same device.
    bool covers(const nixlBasicDesc& q) const noexcept {
        if (devId != q.devId || q.addr < addr) return false;
        const std::uintptr_t off = q.addr - addr;
        return off <= len && q.len <= len - off;
    }

    friend bool operator==(const nixlBasicDesc& a, const nixlBasicDesc& b) noexcept {
        return a.addr == b.addr && a.len == b.len && a.devId == b.devId;
    }
    friend bool operator!=(const nixlBasicDesc& a, const nixlBasicDesc& b) noexcept { return !(a == b); }
};

// Registration descriptor: range + opaque per-descriptor metadata. 56 bytes.
class nixlBlobDesc : public nixlBasicDesc {
public:
    nixl_blob_t metaInfo;

    using nixlBasicDesc::nixlBasicDesc;
    nixlBlobDesc() = default;
    nixlBlobDesc(const std::uintptr_t& a, const std::size_t& l, const std::uint64_t& dev, const nixl_blob_t& meta)
        : nixlBasicDesc(a, l, dev), metaInfo(meta) {}
    nixlBlobDesc(const nixlBasicDesc& d, const nixl_blob_t& meta) : nixlBasicDesc(d), metaInfo(meta) {}

    friend bool operator==(const nixlBlobDesc& a, const nixlBlobDesc& b) {
        return static_cast<const nixlBasicDesc&>(a) == static_cast<const nixlBasicDesc&>(b) && a.metaInfo == b.metaInfo;
    }
};

// Base of every backend-private registration/remote metadata object: vptr + flag, 16 bytes.
// The agent stores these pointers and hands them back (metadataP, deregisterMem, unloadMD);
// it never deletes them itself.
class nixlBackendMD {
    friend struct nixl_abi_layout_probe;

protected:
    bool isPrivateMD;

public:
    explicit nixlBackendMD(bool is_private) : isPrivateMD(is_private) {}
    virtual ~nixlBackendMD() {}
};

// Base of a backend's transfer handle: just a vptr (virtual destructor), 8 bytes.
class nixlBackendReqH {
public:
    nixlBackendReqH() {}
    virtual ~nixlBackendReqH() {}
};

// Transfer descriptor as a backend sees it: range + the backend's metadata for the
// registration the range falls in (local) or the loaded remote metadata (remote). 32 bytes.
class nixlMetaDesc : public nixlBasicDesc {
public:
    nixlBackendMD* metadataP;

    using nixlBasicDesc::nixlBasicDesc;
    nixlMetaDesc() : nixlBasicDesc(), metadataP(nullptr) {}
    nixlMetaDesc(std::uintptr_t a, std::size_t l, std::uint64_t dev, nixlBackendMD* md)
        : nixlBasicDesc(a, l, dev), metadataP(md) {}

    friend bool operator==(const nixlMetaDesc& a, const nixlMetaDesc& b) {
        return static_cast<const nixlBasicDesc&>(a) == static_cast<const nixlBasicDesc&>(b) &&
               a.metadataP == b.metadataP;
    }
};

// Remote memory-view descriptor: meta descriptor + owning agent name. 64 bytes.
struct nixlRemoteMetaDesc : public nixlMetaDesc {
    std::string remoteAgent;

    using nixlMetaDesc::nixlMetaDesc;
    nixlRemoteMetaDesc() = default;
    explicit nixlRemoteMetaDesc(const std::string& agent) : nixlMetaDesc(), remoteAgent(agent) {}
};

// A typed list of descriptors: vptr, memory type, vector. 40 bytes.
// Virtual slots (after the two destructor entries): resize, addDesc, getIndex — NIXL defines
// all three out of line; the bodies here are our own and only ever run on lists the plugin
// builds itself (the agent's lists carry libnixl's vtable).
template <class T>
class nixlDescList {
    friend struct nixl_abi_layout_probe;

protected:
    nixl_mem_t type;
    std::vector<T> descs;

public:
    nixlDescList(const nixl_mem_t& mem, const int& init_size = 0)
        : type(mem), descs(init_size > 0 ? static_cast<std::size_t>(init_size) : 0) {}
    nixlDescList(const nixlDescList&) = default;
    nixlDescList& operator=(const nixlDescList&) = default;
    virtual ~nixlDescList() = default;

    nixl_mem_t getType() const { return type; }
    int descCount() const { return static_cast<int>(descs.size()); }
    bool isEmpty() const noexcept { return descs.empty(); }

    const T& operator[](std::size_t i) const { return descs[i]; }
    T& operator[](std::size_t i) { return descs[i]; }

    typename std::vector<T>::const_iterator begin() const { return descs.begin(); }
    typename std::vector<T>::const_iterator end() const { return descs.end(); }
    typename std::vector<T>::iterator begin() { return descs.begin(); }
    typename std::vector<T>::iterator end() { return descs.end(); }

    void reserve(std::size_t n) { descs.reserve(n); }
    void clear() { descs.clear(); }

    template <class... Args>
    T& emplace(Args&&... args) {
        return descs.emplace_back(std::forward<Args>(args)...);
    }

    virtual void resize(const std::size_t& n) { descs.resize(n); }
    virtual void addDesc(const T& d) { descs.push_back(d); }
    // Index of the first element whose range equals `query` exactly, else NIXL_ERR_NOT_FOUND.
    virtual int getIndex(const nixlBasicDesc& query) const {
        for (std::size_t i = 0; i < descs.size(); ++i)
            if (static_cast<const nixlBasicDesc&>(descs[i]) == query) return static_cast<int>(i);
        return NIXL_ERR_NOT_FOUND;
    }
};

using nixl_xfer_dlist_t = nixlDescList<nixlBasicDesc>;
using nixl_reg_dlist_t = nixlDescList<nixlBlobDesc>;
using nixl_meta_dlist_t = nixlDescList<nixlMetaDesc>;
using nixl_remote_meta_dlist_t = nixlDescList<nixlRemoteMetaDesc>;

// ---------------------------------------------------------------------------------------------
// Backend auxiliaries (backend_aux.h)
// ---------------------------------------------------------------------------------------------

// Per-call options for prepXfer/postXfer/prepMemView. 72 bytes: notifMsg 0, hasNotif 32,
// customParam 40. On a repost the agent passes the current notification here (postXfer must
// read it, not reuse what prepXfer saw).
struct nixlBackendOptionalArgs {
    nixl_blob_t notifMsg;
    bool hasNotif = false;
    nixl_blob_t customParam;
};
using nixl_opt_b_args_t = nixlBackendOptionalArgs;

// What the agent passes to create_engine (it owns the object). 96 bytes in 1.4.1 and 1.5.1;
// the `enableLoopback` flag seen in later main-branch headers is NOT written by these agents.
// customParams is always set by the agent (null only in hand-made test set-ups).
class nixlBackendInitParams {
    friend struct nixl_abi_layout_probe;

public:
    std::string localAgent;                   // 0x00
    nixl_backend_t type;                      // 0x20  backend name as requested, e.g. "LOOM"
    nixl_b_params_t* customParams = nullptr;  // 0x40  user parameters merged over the defaults
    bool enableProgTh = false;                // 0x48  agent asks for a progress thread
    nixlTime::us_t pthrDelay = 0;             // 0x50  progress-thread delay, microseconds
    nixl_thread_sync_t syncMode{};            // 0x58
    bool enableTelemetry_ = false;            // 0x5c
};

// Element type of the engine's telemetry queue. The backend never queues anything (none of the
// 1.4.1 backends do), so the vector stays empty and only its 24-byte header is part of the
// layout; the element is declared with the 16-byte shape the 1.4.1 exporters read (a 4-byte
// tag at 0, a 64-bit value at 8) for completeness only.
struct nixlTelemetryEvent {
    std::uint32_t eventType_;
    std::uint64_t value_;
};

// ---------------------------------------------------------------------------------------------
// The engine base class (backend_engine.h). 208 bytes of base members.
// ---------------------------------------------------------------------------------------------
//
// Data members, in order (offsets checked on 1.4.1 and 1.5.1):
//   0x00 vptr
//   0x08 backendType            std::string      private
//   0x28 customParams           unordered_map    private (a copy of *init->customParams)
//   0x60 telemetryEvents_       std::vector      private
//   0x78 telemetryEventsMutex_  std::mutex       private
//   0xa0 initErr                bool             protected (set true to make the agent reject us)
//   0xa8 localAgent             const std::string protected
//   0xc8 enableTelemetry_       const bool       protected
// The agent's own inline code reads getInitErr/getType/getCustomParams out of our object, so
// these offsets are load-bearing.
//
// Virtual order (slot = index after the complete- and deleting-destructor entries 0 and 1):
//    2 supportsRemote      pure       11 prepXfer            pure
//    3 supportsLocal       pure       12 postXfer            pure
//    4 supportsNotif       pure       13 checkXfer           pure
//    5 getSupportedMems    pure       14 releaseReqH         pure
//    6 registerMem         pure       15 prepMemView(remote) default NIXL_ERR_NOT_SUPPORTED
//    7 deregisterMem       pure       16 prepMemView(local)  default NIXL_ERR_NOT_SUPPORTED
//    8 connect             pure       17 releaseMemView      default no-op
//    9 disconnect          pure       18 getPublicData       default NIXL_ERR_BACKEND
//   10 unloadMD            pure       19 getConnInfo         default NIXL_ERR_BACKEND
//                                     20 loadRemoteConnInfo  default NIXL_ERR_BACKEND
//                                     21 loadRemoteMD        default NIXL_ERR_BACKEND
//                                     22 loadLocalMD         default NIXL_ERR_BACKEND
//                                     23 getNotifs           default NIXL_ERR_BACKEND
//                                     24 genNotif            default NIXL_ERR_BACKEND
//                                     25 queryMem            default NIXL_ERR_NOT_SUPPORTED
//                                     26 estimateXferCost    default NIXL_ERR_NOT_SUPPORTED
// 29 vtable words in all (offset-to-top, typeinfo, 2 destructors, 25 functions). The GPU
// request methods of 0.x (createGpuXferReq, releaseGpuXferReq, getGpuSignalSize,
// prepGpuSignal) and the older prepareMemoryView/releaseMemoryView names are gone since 1.0;
// declaring them would shift every later slot. Do not add virtuals to this class.
class nixlBackendEngine {
    friend struct nixl_abi_layout_probe;

private:
    nixl_backend_t backendType;
    nixl_b_params_t customParams;
    std::vector<nixlTelemetryEvent> telemetryEvents_;
    std::mutex telemetryEventsMutex_;

protected:
    bool initErr = false;
    const std::string localAgent;
    const bool enableTelemetry_;

    // Adds a parameter the user did not set (so the agent can report effective values).
    [[nodiscard]] nixl_status_t setInitParam(const std::string& key, const std::string& value) {
        return customParams.emplace(key, value).second ? NIXL_SUCCESS : NIXL_ERR_NOT_ALLOWED;
    }
    [[nodiscard]] nixl_status_t getInitParam(const std::string& key, std::string& value) const {
        const auto it = customParams.find(key);
        if (it == customParams.end()) return NIXL_ERR_INVALID_PARAM;
        value = it->second;
        return NIXL_SUCCESS;
    }

public:
    explicit nixlBackendEngine(const nixlBackendInitParams* init)
        : backendType(init->type),
          customParams(init->customParams != nullptr ? *init->customParams : nixl_b_params_t{}),
          localAgent(init->localAgent),
          enableTelemetry_(init->enableTelemetry_) {}

    nixlBackendEngine(nixlBackendEngine&&) = delete;
    nixlBackendEngine(const nixlBackendEngine&) = delete;
    void operator=(nixlBackendEngine&&) = delete;
    void operator=(const nixlBackendEngine&) = delete;

    virtual ~nixlBackendEngine() = default;

    // Non-virtual, inline in NIXL too: the agent runs its own copy on our object.
    std::vector<nixlTelemetryEvent> getTelemetryEvents() {
        std::lock_guard<std::mutex> lock(telemetryEventsMutex_);
        return std::move(telemetryEvents_);
    }
    bool getInitErr() const noexcept { return initErr; }
    const nixl_backend_t& getType() const noexcept { return backendType; }
    const nixl_b_params_t& getCustomParams() const noexcept { return customParams; }

    // --- capabilities ---
    virtual bool supportsRemote() const = 0;
    virtual bool supportsLocal() const = 0;
    virtual bool supportsNotif() const = 0;
    virtual nixl_mem_list_t getSupportedMems() const = 0;

    // --- required of every backend ---
    virtual nixl_status_t registerMem(const nixlBlobDesc& mem, const nixl_mem_t& nixl_mem, nixlBackendMD*& out) = 0;
    virtual nixl_status_t deregisterMem(nixlBackendMD* meta) = 0;
    virtual nixl_status_t connect(const std::string& remote_agent) = 0;
    virtual nixl_status_t disconnect(const std::string& remote_agent) = 0;
    virtual nixl_status_t unloadMD(nixlBackendMD* input) = 0;
    virtual nixl_status_t prepXfer(const nixl_xfer_op_t& operation, const nixl_meta_dlist_t& local,
                                   const nixl_meta_dlist_t& remote, const std::string& remote_agent,
                                   nixlBackendReqH*& handle, const nixl_opt_b_args_t* opt_args = nullptr) const = 0;
    virtual nixl_status_t postXfer(const nixl_xfer_op_t& operation, const nixl_meta_dlist_t& local,
                                   const nixl_meta_dlist_t& remote, const std::string& remote_agent,
                                   nixlBackendReqH*& handle, const nixl_opt_b_args_t* opt_args = nullptr) const = 0;
    virtual nixl_status_t checkXfer(nixlBackendReqH* handle) const = 0;
    virtual nixl_status_t releaseReqH(nixlBackendReqH* handle) const = 0;

    // --- device memory views (GPU-initiated API); remote overload first ---
    virtual nixl_status_t prepMemView(const nixl_remote_meta_dlist_t&, nixlMemViewH&,
                                      const nixl_opt_b_args_t* = nullptr) const {
        return NIXL_ERR_NOT_SUPPORTED;
    }
    virtual nixl_status_t prepMemView(const nixl_meta_dlist_t&, nixlMemViewH&,
                                      const nixl_opt_b_args_t* = nullptr) const {
        return NIXL_ERR_NOT_SUPPORTED;
    }
    virtual void releaseMemView(nixlMemViewH) const {}

    // --- needed when supportsRemote() ---
    virtual nixl_status_t getPublicData(const nixlBackendMD*, std::string&) const { return NIXL_ERR_BACKEND; }
    virtual nixl_status_t getConnInfo(std::string&) const { return NIXL_ERR_BACKEND; }
    virtual nixl_status_t loadRemoteConnInfo(const std::string&, const std::string&) { return NIXL_ERR_BACKEND; }
    virtual nixl_status_t loadRemoteMD(const nixlBlobDesc&, const nixl_mem_t&, const std::string&, nixlBackendMD*&) {
        return NIXL_ERR_BACKEND;
    }

    // --- needed when supportsLocal() ---
    virtual nixl_status_t loadLocalMD(nixlBackendMD*, nixlBackendMD*&) { return NIXL_ERR_BACKEND; }

    // --- needed when supportsNotif() ---
    virtual nixl_status_t getNotifs(notif_list_t&) { return NIXL_ERR_BACKEND; }
    virtual nixl_status_t genNotif(const std::string&, const std::string&) const { return NIXL_ERR_BACKEND; }

    // --- optional ---
    virtual nixl_status_t queryMem(const nixl_reg_dlist_t&, std::vector<nixl_query_resp_t>&) const {
        return NIXL_ERR_NOT_SUPPORTED;
    }
    virtual nixl_status_t estimateXferCost(const nixl_xfer_op_t&, const nixl_meta_dlist_t&, const nixl_meta_dlist_t&,
                                           const std::string&, nixlBackendReqH* const&, std::chrono::microseconds&,
                                           std::chrono::microseconds&, nixl_cost_t&,
                                           const nixl_opt_args_t* = nullptr) const {
        return NIXL_ERR_NOT_SUPPORTED;
    }
};

// ---------------------------------------------------------------------------------------------
// Plugin table and entry points (backend_plugin.h)
// ---------------------------------------------------------------------------------------------

// The 1.4.1 and 1.5.1 agents refuse a backend table whose api_version is not 1 ("Plugin API
// version mismatch"); 2 is what they require of *telemetry* plugins. Headers on later main
// define 2 for backends too, so this must follow the agent, not whichever header is newest.
inline constexpr int NIXL_BACKEND_PLUGIN_API_VERSION = 1;

// 56 bytes: int (padded to 8), then six function pointers. The name and version strings must
// outlive the plugin (return pointers to static storage).
class nixlBackendPlugin {
public:
    int api_version;
    nixlBackendEngine* (*create_engine)(const nixlBackendInitParams* init_params);
    void (*destroy_engine)(nixlBackendEngine* engine);
    const char* (*get_plugin_name)();
    const char* (*get_plugin_version)();
    nixl_b_params_t (*get_backend_options)();
    nixl_mem_list_t (*get_backend_mems)();
};

// The agent dlopens plugins/libplugin_<NAME>.so and resolves exactly these two names; the
// plugin defines them extern "C" with default visibility:
//   extern "C" nixlBackendPlugin* nixl_plugin_init();
//   extern "C" void nixl_plugin_fini();

// ---------------------------------------------------------------------------------------------
// Layout pins (LP64 libstdc++, cxx11 ABI: the only configuration NIXL ships).
// ---------------------------------------------------------------------------------------------
#if defined(__GLIBCXX__) && defined(_GLIBCXX_USE_CXX11_ABI) && _GLIBCXX_USE_CXX11_ABI && __SIZEOF_POINTER__ == 8
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
struct nixl_abi_layout_probe {
    static_assert(sizeof(std::string) == 32 && sizeof(nixl_b_params_t) == 56 && sizeof(std::mutex) == 40);

    static_assert(sizeof(nixlBasicDesc) == 24 && offsetof(nixlBasicDesc, len) == 8 &&
                  offsetof(nixlBasicDesc, devId) == 16);
    static_assert(sizeof(nixlBlobDesc) == 56 && offsetof(nixlBlobDesc, metaInfo) == 24);
    static_assert(sizeof(nixlMetaDesc) == 32 && offsetof(nixlMetaDesc, metadataP) == 24);
    static_assert(sizeof(nixlRemoteMetaDesc) == 64 && offsetof(nixlRemoteMetaDesc, remoteAgent) == 32);
    static_assert(sizeof(nixlBackendMD) == 16 && offsetof(nixlBackendMD, isPrivateMD) == 8);
    static_assert(sizeof(nixlBackendReqH) == 8);

    static_assert(sizeof(nixl_meta_dlist_t) == 40 && offsetof(nixl_meta_dlist_t, type) == 8 &&
                  offsetof(nixl_meta_dlist_t, descs) == 16);
    static_assert(sizeof(nixl_reg_dlist_t) == 40 && offsetof(nixl_reg_dlist_t, descs) == 16);
    static_assert(sizeof(nixl_remote_meta_dlist_t) == 40);

    static_assert(sizeof(nixlBackendOptionalArgs) == 72 && offsetof(nixlBackendOptionalArgs, hasNotif) == 32 &&
                  offsetof(nixlBackendOptionalArgs, customParam) == 40);

    static_assert(sizeof(nixlBackendInitParams) == 96);
    static_assert(offsetof(nixlBackendInitParams, type) == 0x20 &&
                  offsetof(nixlBackendInitParams, customParams) == 0x40 &&
                  offsetof(nixlBackendInitParams, enableProgTh) == 0x48 &&
                  offsetof(nixlBackendInitParams, pthrDelay) == 0x50 &&
                  offsetof(nixlBackendInitParams, syncMode) == 0x58 &&
                  offsetof(nixlBackendInitParams, enableTelemetry_) == 0x5c);

    static_assert(sizeof(nixlBackendEngine) == 0xd0);
    static_assert(offsetof(nixlBackendEngine, backendType) == 0x08 &&
                  offsetof(nixlBackendEngine, customParams) == 0x28 &&
                  offsetof(nixlBackendEngine, telemetryEvents_) == 0x60 &&
                  offsetof(nixlBackendEngine, telemetryEventsMutex_) == 0x78 &&
                  offsetof(nixlBackendEngine, initErr) == 0xa0 && offsetof(nixlBackendEngine, localAgent) == 0xa8 &&
                  offsetof(nixlBackendEngine, enableTelemetry_) == 0xc8);

    static_assert(sizeof(nixlBackendPlugin) == 56 && offsetof(nixlBackendPlugin, create_engine) == 8 &&
                  offsetof(nixlBackendPlugin, get_backend_mems) == 48);
};
#pragma GCC diagnostic pop
#else
#error "nixl_abi.hpp: NIXL's binary interface is pinned only for 64-bit libstdc++ with the cxx11 ABI"
#endif

// 1.5.x (checked on nixl-cu12 1.5.1): the engine vtable (same 25 functions, same order and
// signatures), the engine's members and offsets, nixlBackendInitParams (still 96 bytes, no
// loopback flag), the descriptor-list vtable and element sizes, the status range and the
// backend API version 1 are all unchanged, so this header serves both.
