// The NCCL net-plugin ABI harness's shared part (its scenario files include it): loads the
// built libnccl-net-loom.so exactly as NCCL does (dlopen RTLD_NOW|RTLD_LOCAL, dlsym
// "ncclNetPlugin_vN"), forks a receiver and a sender, hands the listen handle over a pipe and
// drives the whole call sequence with byte-exact checks.
#pragma once

#include <loom/nccl/net_abi.hpp>

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

namespace nccl_harness {

using namespace loom::nccl_abi;
using clk = std::chrono::steady_clock;

#define CHECK(cond, ...)                                                                                       \
    do {                                                                                                       \
        if (!(cond)) {                                                                                         \
            std::fprintf(stderr, "[pid %d] %s:%d: check failed: %s: ", ::getpid(), __FILE__, __LINE__, #cond); \
            std::fprintf(stderr, __VA_ARGS__);                                                                 \
            std::fprintf(stderr, "\n");                                                                        \
            std::fflush(stderr);                                                                               \
            ::_exit(1);                                                                                        \
        }                                                                                                      \
    } while (0)

inline void logger(int level, unsigned long, const char* file, int line, const char* fmt, ...) {
    if (level > log_warn && std::getenv("LOOM_TEST_VERBOSE") == nullptr) return;
    std::va_list ap;
    va_start(ap, fmt);
    std::fprintf(stderr, "[nccl log %d %s:%d] ", level, file, line);
    std::vfprintf(stderr, fmt, ap);
    std::fprintf(stderr, "\n");
    va_end(ap);
}

// ---------------------------------------------------------------- a profiler callback (v10+)
// Records what the plugin reports; a stop of an event that is not open fails the process.
struct prof_record {
    int type{0};
    void* phandle{nullptr};
    std::int64_t id{0};
    loom_net_event_v1 info{};
    std::string device{};
    void* handle{nullptr};
};
inline std::mutex g_prof_mu;
inline std::vector<prof_record> g_prof_log;
inline std::set<void*> g_prof_open;
inline std::uintptr_t g_prof_next = 0x10000;
inline profiler_callback_t g_init_prof = nullptr;  // what init() passes (v10+)

inline auto recorder(void** eh, int type, void* phandle, std::int64_t id, void* ext) -> result_t {
    std::lock_guard lock(g_prof_mu);
    CHECK(eh != nullptr, "profiler called without an event handle slot");
    prof_record r{type, phandle, id};
    if (type == profiler_net_start) {
        CHECK(ext != nullptr && phandle != nullptr, "start without extData or parent handle");
        r.info = *static_cast<const loom_net_event_v1*>(ext);
        r.device = r.info.device != nullptr ? r.info.device : "";
        r.handle = reinterpret_cast<void*>(g_prof_next += 16);
        *eh = r.handle;
        g_prof_open.insert(r.handle);
    } else {
        CHECK(type == profiler_net_stop, "unexpected event type %d", type);
        r.handle = *eh;
        CHECK(g_prof_open.erase(*eh) == 1, "stop of an event that is not open (%p)", *eh);
    }
    g_prof_log.push_back(r);
    return success;
}

// ---------------------------------------------------------------- one API over every version
struct props {
    std::string name;
    int ptr_support{0}, speed{0}, max_comms{0}, max_recvs{0}, reg_is_global{-1};
    std::size_t max_p2p{0};
};

struct api {
    int version{0};
    std::function<int()> init;
    std::function<int(int*)> devices;
    std::function<int(int, props&)> get_props;
    std::function<int(int, void*, void**)> listen;
    std::function<int(int, void*, void**)> connect;
    std::function<int(void*, void**)> accept;
    std::function<int(void*, void*, std::size_t, int, void**)> reg_mr;
    std::function<int(void*, void*, std::size_t, int, std::uint64_t, int, void**)> reg_mr_dmabuf;
    std::function<int(void*, void*)> dereg_mr;
    std::function<int(void*, void*, std::size_t, int, void*, void**)> isend;
    std::function<int(void*, int, void**, std::size_t*, int*, void**, void**)> irecv;
    // v10+: with profiler handles (per isend; per sub-receive).
    std::function<int(void*, void*, std::size_t, int, void*, void*, void**)> isend_p;
    std::function<int(void*, int, void**, std::size_t*, int*, void**, void**, void**)> irecv_p;
    std::function<int(void*, int, void**, int*, void**, void**)> iflush;
    std::function<int(void*, int*, int*)> test;
    std::function<int(void*)> close_send, close_recv, close_listen;
    std::function<int(int*, int, const int*)> make_vdevice;
    std::function<int()> finalize;
};

template <class T>
inline auto resolve(int version) -> const T* {
    const char* path = LOOM_NCCL_PLUGIN_PATH;
    void* lib = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK(lib != nullptr, "dlopen %s: %s", path, ::dlerror());
    const std::string sym = "ncclNetPlugin_v" + std::to_string(version);
    auto* t = static_cast<const T*>(::dlsym(lib, sym.c_str()));
    CHECK(t != nullptr, "dlsym %s", sym.c_str());
    CHECK(std::strcmp(t->name, "loom") == 0, "name %s", t->name);
    return t;
}

/// connect before v11: with a device handle from v7, and a communicator configuration in v10.
template <class T>
inline void bind_connect(const T* t, api& a) {
    if constexpr (requires { t->getDeviceMr; }) {
        if constexpr (std::is_invocable_v<decltype(t->connect), int, comm_config_v10*, void*, void**,
                                          device_handle_v7**>) {
            a.connect = [t](int d, void* h, void** s) {
                device_handle_v7* dh = nullptr;
                comm_config_v10 cfg{-1};
                return static_cast<int>(t->connect(d, &cfg, h, s, &dh));
            };
        } else {
            a.connect = [t](int d, void* h, void** s) {
                device_handle_v7* dh = nullptr;
                return static_cast<int>(t->connect(d, h, s, &dh));
            };
        }
    } else {
        a.connect = [t](int d, void* h, void** s) { return static_cast<int>(t->connect(d, h, s)); };
    }
}

/// init, listen, connect, accept and finalize as version `T` declares them (v11+: with the
/// per-communicator context `ctx`).
template <class T>
inline void bind_lifecycle(const T* t, api& a, const std::shared_ptr<void*>& ctx) {
    if constexpr (requires { t->finalize; }) {
        a.init = [t, ctx] { return static_cast<int>(t->init(ctx.get(), 42, nullptr, logger, g_init_prof)); };
        a.listen = [t, ctx](int d, void* h, void** l) { return static_cast<int>(t->listen(*ctx, d, h, l)); };
        a.connect = [t, ctx](int d, void* h, void** s) {
            device_handle_v7* dh = nullptr;
            return static_cast<int>(t->connect(*ctx, d, h, s, &dh));
        };
        a.finalize = [t, ctx] { return static_cast<int>(t->finalize(*ctx)); };
    } else {
        if constexpr (requires { t->makeVDevice; } &&
                      std::is_same_v<decltype(t->init), result_t (*)(logger_t, profiler_callback_t)>)
            a.init = [t] { return static_cast<int>(t->init(logger, g_init_prof)); };
        else
            a.init = [t] { return static_cast<int>(t->init(logger)); };
        a.listen = [t](int d, void* h, void** l) { return static_cast<int>(t->listen(d, h, l)); };
        bind_connect(t, a);
        a.finalize = [] { return 0; };
    }
    if constexpr (requires { t->getDeviceMr; }) {
        a.accept = [t](void* l, void** r) {
            device_handle_v7* dh = nullptr;
            return static_cast<int>(t->accept(l, r, &dh));
        };
    } else {
        a.accept = [t](void* l, void** r) { return static_cast<int>(t->accept(l, r)); };
    }
}

/// devices and getProperties, the properties of version `P` copied into the common form.
template <class T, class P>
inline void bind_properties(const T* t, api& a) {
    a.devices = [t](int* n) { return static_cast<int>(t->devices(n)); };
    a.get_props = [t](int dev, props& out) {
        P p{};
        const int rc = t->getProperties(dev, &p);
        if (rc == 0) {
            out.name = p.name != nullptr ? p.name : "";
            out.ptr_support = p.ptrSupport;
            out.speed = p.speed;
            out.max_comms = p.maxComms;
            out.max_recvs = p.maxRecvs;
            if constexpr (requires { p.regIsGlobal; }) out.reg_is_global = p.regIsGlobal;
            if constexpr (requires { p.maxP2pBytes; }) out.max_p2p = p.maxP2pBytes;
        }
        return rc;
    };
}

/// regMr (an int size before v8), regMrDmaBuf and deregMr.
template <class T>
inline void bind_registration(const T* t, api& a) {
    a.reg_mr = [t](void* c, void* d, std::size_t n, int type, void** m) {
        if constexpr (std::is_invocable_v<decltype(t->regMr), void*, void*, int, int, void**> &&
                      !std::is_invocable_v<decltype(t->regMr), void*, void*, std::size_t, int, void**>)
            return static_cast<int>(t->regMr(c, d, static_cast<int>(n), type, m));
        else
            return static_cast<int>(t->regMr(c, d, n, type, m));
    };
    a.reg_mr_dmabuf = [t](void* c, void* d, std::size_t n, int type, std::uint64_t off, int fd, void** m) {
        return static_cast<int>(t->regMrDmaBuf(c, d, n, type, off, fd, m));
    };
    a.dereg_mr = [t](void* c, void* m) { return static_cast<int>(t->deregMr(c, m)); };
}

/// isend and irecv in every version's form (int sizes before v9; profiler handles from v10,
/// passed as null by isend/irecv and given by isend_p/irecv_p).
template <class T>
inline void bind_messages(const T* t, api& a) {
    constexpr bool profiled = requires { t->init(nullptr, nullptr); } || requires { t->finalize; };
    a.isend = [t](void* s, void* d, std::size_t n, int tag, void* m, void** r) {
        if constexpr (profiled)
            return static_cast<int>(t->isend(s, d, n, tag, m, nullptr, r));
        else if constexpr (requires { t->makeVDevice; })
            return static_cast<int>(t->isend(s, d, n, tag, m, r));
        else
            return static_cast<int>(t->isend(s, d, static_cast<int>(n), tag, m, r));
    };
    a.irecv = [t](void* c, int n, void** d, std::size_t* sizes, int* tags, void** m, void** r) {
        if constexpr (profiled) {
            return static_cast<int>(t->irecv(c, n, d, sizes, tags, m, nullptr, r));
        } else if constexpr (requires { t->makeVDevice; }) {
            return static_cast<int>(t->irecv(c, n, d, sizes, tags, m, r));
        } else {
            std::array<int, 8> s{};
            for (int i = 0; sizes != nullptr && i < n && i < 8; ++i)
                s[static_cast<std::size_t>(i)] = static_cast<int>(sizes[i]);
            return static_cast<int>(t->irecv(c, n, d, sizes == nullptr ? nullptr : s.data(), tags, m, r));
        }
    };
    if constexpr (profiled) {
        a.isend_p = [t](void* s, void* d, std::size_t n, int tag, void* m, void* ph, void** r) {
            return static_cast<int>(t->isend(s, d, n, tag, m, ph, r));
        };
        a.irecv_p = [t](void* c, int n, void** d, std::size_t* sizes, int* tags, void** m, void** ph, void** r) {
            return static_cast<int>(t->irecv(c, n, d, sizes, tags, m, ph, r));
        };
    }
}

/// iflush, test and the three closes, the same in every version.
template <class T>
inline void bind_completion_and_close(const T* t, api& a) {
    a.iflush = [t](void* c, int n, void** d, int* s, void** m, void** r) {
        return static_cast<int>(t->iflush(c, n, d, s, m, r));
    };
    a.test = [t](void* r, int* done, int* sizes) { return static_cast<int>(t->test(r, done, sizes)); };
    a.close_send = [t](void* c) { return static_cast<int>(t->closeSend(c)); };
    a.close_recv = [t](void* c) { return static_cast<int>(t->closeRecv(c)); };
    a.close_listen = [t](void* c) { return static_cast<int>(t->closeListen(c)); };
}

/// makeVDevice where the version has it (v9: four devices; v12: eight).
template <class T>
inline void bind_vdevice(const T* t, api& a) {
    if constexpr (requires { t->makeVDevice; }) {
        a.make_vdevice = [t](int* d, int n, const int* devs) {
            if constexpr (std::is_invocable_v<decltype(t->makeVDevice), int*, vdevice_props_v12*>) {
                vdevice_props_v12 p{};
                p.ndevs = n;
                for (int i = 0; i < n && i < 8; ++i) p.devs[i] = devs[i];
                return static_cast<int>(t->makeVDevice(d, &p));
            } else {
                vdevice_props_v9 p{};
                p.ndevs = n;
                for (int i = 0; i < n && i < 4; ++i) p.devs[i] = devs[i];
                return static_cast<int>(t->makeVDevice(d, &p));
            }
        };
    }
}

/// The plugin's ncclNetPlugin_v<version> (of type T, properties P) as the common api.
template <class T, class P>
inline auto make_api(int version) -> api {
    const T* t = resolve<T>(version);
    api a;
    a.version = version;
    bind_lifecycle(t, a, std::make_shared<void*>(nullptr));
    bind_properties<T, P>(t, a);
    bind_registration(t, a);
    bind_messages(t, a);
    bind_completion_and_close(t, a);
    bind_vdevice(t, a);
    return a;
}

inline auto load(int version) -> api {
    switch (version) {
        case 6: return make_api<net_v6, properties_v6>(6);
        case 7: return make_api<net_v7, properties_v7>(7);
        case 8: return make_api<net_v8, properties_v8>(8);
        case 9: return make_api<net_v9, properties_v9>(9);
        case 10: return make_api<net_v10, properties_v10>(10);
        case 11: return make_api<net_v11, properties_v11>(11);
        default: return make_api<net_v12, properties_v12>(12);
    }
}

// ---------------------------------------------------------------- helpers run inside the children
inline auto pattern(std::uint64_t seed, std::size_t i) -> std::byte {
    return static_cast<std::byte>((i * 131U + seed * 7U + (i >> 8) + (i >> 16)) & 0xffU);
}
inline void fill(std::byte* p, std::size_t n, std::uint64_t seed) {
    for (std::size_t i = 0; i < n; ++i) p[i] = pattern(seed, i);
}
inline auto first_bad(const std::byte* p, std::size_t n, std::uint64_t seed) -> long {
    for (std::size_t i = 0; i < n; ++i)
        if (p[i] != pattern(seed, i)) return static_cast<long>(i);
    return -1;
}

inline void write_all(int fd, const void* p, std::size_t n) {
    const auto* b = static_cast<const char*>(p);
    while (n > 0) {
        const ssize_t w = ::write(fd, b, n);
        CHECK(w > 0, "pipe write");
        b += w;
        n -= static_cast<std::size_t>(w);
    }
}
inline void read_all(int fd, void* p, std::size_t n) {
    auto* b = static_cast<char*>(p);
    while (n > 0) {
        const ssize_t r = ::read(fd, b, n);
        CHECK(r > 0, "pipe read (peer gone?)");
        b += r;
        n -= static_cast<std::size_t>(r);
    }
}

struct pipes {
    int to_sender[2]{-1, -1};    // receiver → sender
    int to_receiver[2]{-1, -1};  // sender → receiver
};

/// Test until done; returns the test() code. Hang guard: 30 s.
#define wait(...) wait_at(__LINE__, __VA_ARGS__)
inline auto wait_at(int line, api& a, void* req, int* sizes) -> int {
    const auto deadline = clk::now() + std::chrono::seconds(30);
    for (;;) {
        int done = 0;
        const int rc = a.test(req, &done, sizes);
        if (rc != 0 || done != 0) return rc;
        CHECK(clk::now() < deadline, "request waited for at line %d never completed", line);
    }
}

/// isend, retried until the plugin accepts it; `ph`: a profiler handle (v10+, isend_p).
inline auto post_send(api& a, void* comm, void* data, std::size_t n, int tag, void* mh, void* ph = nullptr) -> void* {
    const auto deadline = clk::now() + std::chrono::seconds(30);
    for (;;) {
        void* req = nullptr;
        const int rc =
            ph != nullptr ? a.isend_p(comm, data, n, tag, mh, ph, &req) : a.isend(comm, data, n, tag, mh, &req);
        CHECK(rc == 0, "isend rc %d", rc);
        if (req != nullptr) return req;
        CHECK(clk::now() < deadline, "isend never accepted");
    }
}

inline auto post_recv(api& a, void* comm, int n, void** data, std::size_t* sizes, int* tags, void** mh) -> void* {
    const auto deadline = clk::now() + std::chrono::seconds(30);
    for (;;) {
        void* req = nullptr;
        const int rc = a.irecv(comm, n, data, sizes, tags, mh, &req);
        CHECK(rc == 0, "irecv rc %d", rc);
        if (req != nullptr) return req;
        CHECK(clk::now() < deadline, "irecv never accepted");
    }
}

inline void init_and_check(api& a) {
    CHECK(a.init() == 0, "init");
    int n = 0;
    CHECK(a.devices(&n) == 0 && n >= 1, "devices: %d", n);
    props p;
    CHECK(a.get_props(0, p) == 0, "getProperties");
    CHECK(!p.name.empty() && (p.ptr_support & ptr_host) != 0 && p.max_recvs == 8 && p.max_comms > 0 && p.speed > 0,
          "properties: name '%s' ptr %d recvs %d", p.name.c_str(), p.ptr_support, p.max_recvs);
    if (a.version >= 8) CHECK(p.reg_is_global == 1, "regIsGlobal");
    if (a.version >= 9) CHECK(p.max_p2p >= (std::size_t{16} << 20), "maxP2pBytes %zu", p.max_p2p);
}

/// Receiver side: listen, publish the handle, accept.
inline auto accept_side(api& a, const pipes& p, void** listen_comm) -> void* {
    init_and_check(a);
    std::array<char, handle_maxsize> handle{};
    CHECK(a.listen(0, handle.data(), listen_comm) == 0 && *listen_comm != nullptr, "listen");
    write_all(p.to_sender[1], handle.data(), handle.size());
    void* recv_comm = nullptr;
    const auto deadline = clk::now() + std::chrono::seconds(30);
    while (recv_comm == nullptr) {
        CHECK(a.accept(*listen_comm, &recv_comm) == 0, "accept");
        CHECK(clk::now() < deadline, "accept timed out");
    }
    return recv_comm;
}

inline auto connect_side(api& a, const pipes& p) -> void* {
    init_and_check(a);
    std::array<char, handle_maxsize> handle{};
    read_all(p.to_sender[0], handle.data(), handle.size());
    void* send_comm = nullptr;
    const auto deadline = clk::now() + std::chrono::seconds(30);
    while (send_comm == nullptr) {
        CHECK(a.connect(0, handle.data(), &send_comm) == 0, "connect");
        CHECK(clk::now() < deadline, "connect timed out");
    }
    return send_comm;
}

inline void signal_peer(int fd) {
    const char c = 'x';
    write_all(fd, &c, 1);
}
inline void await_peer(int fd) {
    char c = 0;
    read_all(fd, &c, 1);
}

/// Both directions between the two processes: `to` carries this process's sends, `from` its
/// receives (`init`: initialise the plugin first). The side with `listens_first` writes its handle before reading the
/// peer's (the other side the reverse), so the two handle exchanges over the pipes cannot deadlock.
struct two_way {
    void* listen{nullptr};
    void* from{nullptr};
    void* to{nullptr};
};
inline auto connect_both_ways(api& a, int handle_out, int handle_in, bool listens_first, bool init = true) -> two_way {
    if (init) init_and_check(a);
    two_way w;
    std::array<char, handle_maxsize> mine{}, theirs{};
    CHECK(a.listen(0, mine.data(), &w.listen) == 0 && w.listen != nullptr, "listen");
    if (listens_first) {
        write_all(handle_out, mine.data(), mine.size());
        read_all(handle_in, theirs.data(), theirs.size());
    } else {
        read_all(handle_in, theirs.data(), theirs.size());
        write_all(handle_out, mine.data(), mine.size());
    }
    const auto deadline = clk::now() + std::chrono::seconds(30);
    while (w.from == nullptr || w.to == nullptr) {
        if (w.to == nullptr) CHECK(a.connect(0, theirs.data(), &w.to) == 0, "connect");
        if (w.from == nullptr) CHECK(a.accept(w.listen, &w.from) == 0, "accept");
        CHECK(clk::now() < deadline, "connections both ways timed out");
    }
    return w;
}

/// Runs receiver and sender in two fresh processes; returns their exit codes.
inline auto run_pair(const std::string& provider, const std::string& extra_env,
                     const std::function<void(const pipes&)>& receiver,
                     const std::function<void(const pipes&, pid_t)>& sender, int* recv_status, int* send_status)
    -> void {
    pipes p;
    ASSERT_EQ(::pipe(p.to_sender), 0);
    ASSERT_EQ(::pipe(p.to_receiver), 0);
    auto child = [&](const std::function<void()>& body) -> pid_t {
        const pid_t pid = ::fork();
        if (pid == 0) {
            ::setenv("LOOM_PROVIDER", provider.c_str(), 1);
            if (provider != "shm") ::setenv("LOOM_IFACE", "lo", 1);
            ::setenv("LOOM_PEER_TIMEOUT_MS", "1500", 1);
            if (const auto eq = extra_env.find('='); eq != std::string::npos)
                ::setenv(extra_env.substr(0, eq).c_str(), extra_env.substr(eq + 1).c_str(), 1);
            body();
            std::fflush(nullptr);
            ::_exit(0);
        }
        return pid;
    };
    const pid_t r = child([&] { receiver(p); });
    const pid_t s = child([&] { sender(p, r); });
    for (int fd : {p.to_sender[0], p.to_sender[1], p.to_receiver[0], p.to_receiver[1]}) ::close(fd);
    // Hang guard: both children must finish within 120 s.
    const auto deadline = clk::now() + std::chrono::seconds(120);
    int rs = -1, ss = -1;
    bool r_done = false, s_done = false;
    while (!(r_done && s_done)) {
        int st = 0;
        if (!r_done && ::waitpid(r, &st, WNOHANG) == r) {
            r_done = true;
            rs = st;
        }
        if (!s_done && ::waitpid(s, &st, WNOHANG) == s) {
            s_done = true;
            ss = st;
        }
        if (clk::now() > deadline) {
            if (!r_done) ::kill(r, SIGKILL);
            if (!s_done) ::kill(s, SIGKILL);
            ADD_FAILURE() << "children hung";
            ::waitpid(r, nullptr, 0);
            ::waitpid(s, nullptr, 0);
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    *recv_status = rs;
    *send_status = ss;
}

inline auto exited_ok(int st) -> bool { return WIFEXITED(st) && WEXITSTATUS(st) == 0; }

struct param {
    std::string provider;
    int version;
    std::string env{};  ///< one extra NAME=VALUE for both processes
};
inline void PrintTo(const param& p, std::ostream* os) {
    *os << p.provider << " v" << p.version << (p.env.empty() ? "" : " ") << p.env;
}

class nccl_abi : public ::testing::TestWithParam<param> {
protected:
    void pair(const std::function<void(api&, const pipes&)>& receiver,
              const std::function<void(api&, const pipes&, pid_t)>& sender, bool sender_dies = false) {
        const int version = GetParam().version;
        int rs = 0, ss = 0;
        run_pair(
            GetParam().provider, GetParam().env,
            [&](const pipes& p) {
                api a = load(version);
                receiver(a, p);
            },
            [&](const pipes& p, pid_t rpid) {
                api a = load(version);
                sender(a, p, rpid);
            },
            &rs, &ss);
        EXPECT_TRUE(exited_ok(rs)) << "receiver status " << rs;
        if (!sender_dies) {
            EXPECT_TRUE(exited_ok(ss)) << "sender status " << ss;
        }
    }
};

inline constexpr std::size_t big = std::size_t{16} << 20;
inline const std::vector<std::size_t> sizes{
    0, 1, 8, 100, 4096, 16384, 16385, 65536, 65537, std::size_t{1} << 20, std::size_t{4} << 20, big};

/// A pointer that is no object of the plugin (stale or foreign handles).
inline auto fake(std::uintptr_t v) -> void* { return reinterpret_cast<void*>(v); }

inline auto name_of(const ::testing::TestParamInfo<param>& i) -> std::string {
    std::string p = i.param.provider;
    for (auto& c : p)
        if (c == ';') c = '_';
    p += "_v" + std::to_string(i.param.version);
    if (!i.param.env.empty()) p += "_" + i.param.env.substr(0, i.param.env.find('='));
    return p;
}

}  // namespace nccl_harness
