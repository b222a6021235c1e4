// NCCL net-plugin ABI harness: loads the built libnccl-net-loom.so exactly as NCCL does
// (dlopen RTLD_NOW|RTLD_LOCAL, dlsym "ncclNetPlugin_vN"), forks a receiver and a sender, hands
// the listen handle over a pipe and drives the whole call sequence with byte-exact checks.
#include <loom/nccl/net_abi.hpp>

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <array>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <ostream>
#include <set>
#include <memory>
#include <tuple>
#include <type_traits>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace loom::nccl_abi;
using clk = std::chrono::steady_clock;

#define CHECK(cond, ...)                                                                     \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            std::fprintf(stderr, "[pid %d] %s:%d: check failed: %s: ", ::getpid(), __FILE__, \
                         __LINE__, #cond);                                                   \
            std::fprintf(stderr, __VA_ARGS__);                                               \
            std::fprintf(stderr, "\n");                                                      \
            std::fflush(stderr);                                                             \
            ::_exit(1);                                                                      \
        }                                                                                    \
    } while (0)

void logger(int level, unsigned long, const char* file, int line, const char* fmt, ...) {
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
std::mutex g_prof_mu;
std::vector<prof_record> g_prof_log;
std::set<void*> g_prof_open;
std::uintptr_t g_prof_next = 0x10000;
profiler_callback_t g_init_prof = nullptr;  // what init() passes (v10+)

auto recorder(void** eh, int type, void* phandle, std::int64_t id, void* ext) -> result_t {
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
auto resolve(int version) -> const T* {
    const char* path = LOOM_NCCL_PLUGIN_PATH;
    void* lib = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK(lib != nullptr, "dlopen %s: %s", path, ::dlerror());
    const std::string sym = "ncclNetPlugin_v" + std::to_string(version);
    auto* t = static_cast<const T*>(::dlsym(lib, sym.c_str()));
    CHECK(t != nullptr, "dlsym %s", sym.c_str());
    CHECK(std::strcmp(t->name, "loom") == 0, "name %s", t->name);
    return t;
}

template <class T, class P>
auto make_api(int version) -> api {
    const T* t = resolve<T>(version);
    api a;
    a.version = version;
    auto ctx = std::make_shared<void*>(nullptr);  // v11+: the per-communicator context
    if constexpr (requires { t->finalize; }) {
        a.init = [t, ctx] { return static_cast<int>(t->init(ctx.get(), 42, nullptr, logger, g_init_prof)); };
    } else if constexpr (requires { t->makeVDevice; } && std::is_same_v<decltype(t->init), result_t (*)(logger_t, profiler_callback_t)>) {
        a.init = [t] { return static_cast<int>(t->init(logger, g_init_prof)); };
    } else {
        a.init = [t] { return static_cast<int>(t->init(logger)); };
    }
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
    if constexpr (requires { t->finalize; }) {
        a.listen = [t, ctx](int d, void* h, void** l) { return static_cast<int>(t->listen(*ctx, d, h, l)); };
        a.connect = [t, ctx](int d, void* h, void** s) {
            device_handle_v7* dh = nullptr;
            return static_cast<int>(t->connect(*ctx, d, h, s, &dh));
        };
        a.finalize = [t, ctx] { return static_cast<int>(t->finalize(*ctx)); };
    } else {
        a.listen = [t](int d, void* h, void** l) { return static_cast<int>(t->listen(d, h, l)); };
        if constexpr (requires { t->getDeviceMr; }) {
            if constexpr (std::is_invocable_v<decltype(t->connect), int, comm_config_v10*, void*, void**, device_handle_v7**>) {
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
    a.isend = [t](void* s, void* d, std::size_t n, int tag, void* m, void** r) {
        if constexpr (requires { t->init(nullptr, nullptr); } || requires { t->finalize; })
            return static_cast<int>(t->isend(s, d, n, tag, m, nullptr, r));
        else if constexpr (requires { t->makeVDevice; })
            return static_cast<int>(t->isend(s, d, n, tag, m, r));
        else
            return static_cast<int>(t->isend(s, d, static_cast<int>(n), tag, m, r));
    };
    a.irecv = [t](void* c, int n, void** d, std::size_t* sizes, int* tags, void** m, void** r) {
        if constexpr (requires { t->init(nullptr, nullptr); } || requires { t->finalize; }) {
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
    if constexpr (requires { t->init(nullptr, nullptr); } || requires { t->finalize; }) {
        a.isend_p = [t](void* s, void* d, std::size_t n, int tag, void* m, void* ph, void** r) {
            return static_cast<int>(t->isend(s, d, n, tag, m, ph, r));
        };
        a.irecv_p = [t](void* c, int n, void** d, std::size_t* sizes, int* tags, void** m, void** ph, void** r) {
            return static_cast<int>(t->irecv(c, n, d, sizes, tags, m, ph, r));
        };
    }
    a.iflush = [t](void* c, int n, void** d, int* s, void** m, void** r) { return static_cast<int>(t->iflush(c, n, d, s, m, r)); };
    a.test = [t](void* r, int* done, int* sizes) { return static_cast<int>(t->test(r, done, sizes)); };
    a.close_send = [t](void* c) { return static_cast<int>(t->closeSend(c)); };
    a.close_recv = [t](void* c) { return static_cast<int>(t->closeRecv(c)); };
    a.close_listen = [t](void* c) { return static_cast<int>(t->closeListen(c)); };
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
    return a;
}

auto load(int version) -> api {
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
auto pattern(std::uint64_t seed, std::size_t i) -> std::byte {
    return static_cast<std::byte>((i * 131U + seed * 7U + (i >> 8) + (i >> 16)) & 0xffU);
}
void fill(std::byte* p, std::size_t n, std::uint64_t seed) {
    for (std::size_t i = 0; i < n; ++i) p[i] = pattern(seed, i);
}
auto first_bad(const std::byte* p, std::size_t n, std::uint64_t seed) -> long {
    for (std::size_t i = 0; i < n; ++i)
        if (p[i] != pattern(seed, i)) return static_cast<long>(i);
    return -1;
}

void write_all(int fd, const void* p, std::size_t n) {
    const auto* b = static_cast<const char*>(p);
    while (n > 0) {
        const ssize_t w = ::write(fd, b, n);
        CHECK(w > 0, "pipe write");
        b += w;
        n -= static_cast<std::size_t>(w);
    }
}
void read_all(int fd, void* p, std::size_t n) {
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
auto wait_at(int line, api& a, void* req, int* sizes) -> int {
    const auto deadline = clk::now() + std::chrono::seconds(30);
    for (;;) {
        int done = 0;
        const int rc = a.test(req, &done, sizes);
        if (rc != 0 || done != 0) return rc;
        CHECK(clk::now() < deadline, "request waited for at line %d never completed", line);
    }
}

auto post_send(api& a, void* comm, void* data, std::size_t n, int tag, void* mh) -> void* {
    const auto deadline = clk::now() + std::chrono::seconds(30);
    for (;;) {
        void* req = nullptr;
        const int rc = a.isend(comm, data, n, tag, mh, &req);
        CHECK(rc == 0, "isend rc %d", rc);
        if (req != nullptr) return req;
        CHECK(clk::now() < deadline, "isend never accepted");
    }
}

auto post_recv(api& a, void* comm, int n, void** data, std::size_t* sizes, int* tags, void** mh) -> void* {
    const auto deadline = clk::now() + std::chrono::seconds(30);
    for (;;) {
        void* req = nullptr;
        const int rc = a.irecv(comm, n, data, sizes, tags, mh, &req);
        CHECK(rc == 0, "irecv rc %d", rc);
        if (req != nullptr) return req;
        CHECK(clk::now() < deadline, "irecv never accepted");
    }
}

void init_and_check(api& a) {
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
auto accept_side(api& a, const pipes& p, void** listen_comm) -> void* {
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

auto connect_side(api& a, const pipes& p) -> void* {
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

void signal_peer(int fd) {
    const char c = 'x';
    write_all(fd, &c, 1);
}
void await_peer(int fd) {
    char c = 0;
    read_all(fd, &c, 1);
}

/// Runs receiver and sender in two fresh processes; returns their exit codes.
auto run_pair(const std::string& provider, const std::string& extra_env,
              const std::function<void(const pipes&)>& receiver,
              const std::function<void(const pipes&, pid_t)>& sender, int* recv_status, int* send_status) -> void {
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

auto exited_ok(int st) -> bool { return WIFEXITED(st) && WEXITSTATUS(st) == 0; }

struct param {
    std::string provider;
    int version;
    std::string env{};  ///< one extra NAME=VALUE for both processes
};
void PrintTo(const param& p, std::ostream* os) {
    *os << p.provider << " v" << p.version << (p.env.empty() ? "" : " ") << p.env;
}

class nccl_abi : public ::testing::TestWithParam<param> {
protected:
    void pair(const std::function<void(api&, const pipes&)>& receiver,
              const std::function<void(api&, const pipes&, pid_t)>& sender, bool sender_dies = false) {
        const int version = GetParam().version;
        int rs = 0, ss = 0;
        run_pair(
            GetParam().provider, GetParam().env, [&](const pipes& p) { api a = load(version); receiver(a, p); },
            [&](const pipes& p, pid_t rpid) { api a = load(version); sender(a, p, rpid); }, &rs, &ss);
        EXPECT_TRUE(exited_ok(rs)) << "receiver status " << rs;
        if (!sender_dies) {
            EXPECT_TRUE(exited_ok(ss)) << "sender status " << ss;
        }
    }
};

constexpr std::size_t big = std::size_t{16} << 20;
const std::vector<std::size_t> sizes{0, 1, 8, 100, 4096, 16384, 16385, 65536, 65537, std::size_t{1} << 20,
                                     std::size_t{4} << 20, big};

// ---------------------------------------------------------------- scenarios
TEST_P(nccl_abi, transfers_every_size_byte_exact) {
    pair(
        [](api& a, const pipes& p) {
            void* l = nullptr;
            void* rc = accept_side(a, p, &l);
            std::vector<std::byte> buf(big + 64);
            void* mh = nullptr;
            CHECK(a.reg_mr(rc, buf.data(), buf.size(), ptr_host, &mh) == 0 && mh != nullptr, "regMr");
            for (std::size_t n : sizes) {
                std::memset(buf.data(), 0, n + 64);
                void* d = buf.data();
                std::size_t s = n;
                int tag = 7;
                void* mhs[1] = {mh};
                void* req = post_recv(a, rc, 1, &d, &s, &tag, mhs);
                int got = -1;
                CHECK(wait(a, req, &got) == 0, "recv of %zu failed", n);
                CHECK(static_cast<std::size_t>(got) == n, "size %zu reported %d", n, got);
                const long bad = first_bad(buf.data(), n, n);
                CHECK(bad < 0, "size %zu: byte %ld wrong", n, bad);
                CHECK(buf[n] == std::byte{0}, "size %zu: wrote past the message", n);
            }
            signal_peer(p.to_sender[1]);
            CHECK(a.dereg_mr(rc, mh) == 0, "deregMr");
            CHECK(a.close_recv(rc) == 0 && a.close_listen(l) == 0, "close");
            CHECK(a.finalize() == 0, "finalize");
        },
        [](api& a, const pipes& p, pid_t) {
            void* sc = connect_side(a, p);
            std::vector<std::byte> buf(big);
            void* mh = nullptr;
            CHECK(a.reg_mr(sc, buf.data(), buf.size(), ptr_host, &mh) == 0, "regMr");
            for (std::size_t n : sizes) {
                fill(buf.data(), n, n);
                void* req = post_send(a, sc, buf.data(), n, 7, mh);
                int got = -1;
                CHECK(wait(a, req, &got) == 0, "send of %zu failed", n);
                CHECK(static_cast<std::size_t>(got) == n, "send size %zu reported %d", n, got);
            }
            await_peer(p.to_sender[0]);
            CHECK(a.dereg_mr(sc, mh) == 0 && a.close_send(sc) == 0, "close");
            CHECK(a.finalize() == 0, "finalize");
        });
}

TEST_P(nccl_abi, grouped_receive_matches_by_tag_in_posting_order) {
    constexpr int n = 4;
    static constexpr std::array<std::size_t, n> cap{1000, 2000, 70000, 3000};
    pair(
        [](api& a, const pipes& p) {
            void* l = nullptr;
            void* rc = accept_side(a, p, &l);
            std::vector<std::vector<std::byte>> bufs;
            for (auto c : cap) bufs.emplace_back(c);
            for (int round = 0; round < 3; ++round) {
                void* d[n];
                std::size_t s[n];
                int tags[n] = {10, 11, 12, 13};
                for (int i = 0; i < n; ++i) {
                    d[i] = bufs[static_cast<std::size_t>(i)].data();
                    s[i] = cap[static_cast<std::size_t>(i)];
                }
                void* req = post_recv(a, rc, n, d, s, tags, nullptr);
                int got[n] = {-1, -1, -1, -1};
                CHECK(wait(a, req, got) == 0, "grouped receive failed");
                for (int i = 0; i < n; ++i) {
                    const std::size_t want = cap[static_cast<std::size_t>(i)] - static_cast<std::size_t>(round);
                    CHECK(static_cast<std::size_t>(got[i]) == want, "slot %d size %d want %zu", i, got[i], want);
                    const long bad = first_bad(bufs[static_cast<std::size_t>(i)].data(), want,
                                               static_cast<std::uint64_t>(tags[i] * 100 + round));
                    CHECK(bad < 0, "round %d slot %d byte %ld", round, i, bad);
                }
            }
            signal_peer(p.to_sender[1]);
            CHECK(a.close_recv(rc) == 0 && a.close_listen(l) == 0, "close");
        },
        [](api& a, const pipes& p, pid_t) {
            void* sc = connect_side(a, p);
            for (int round = 0; round < 3; ++round) {
                const int order[n] = {12, 10, 13, 11};
                std::vector<std::vector<std::byte>> bufs;
                std::vector<void*> reqs;
                for (int tag : order) {
                    const std::size_t len = cap[static_cast<std::size_t>(tag - 10)] - static_cast<std::size_t>(round);
                    bufs.emplace_back(len);
                    fill(bufs.back().data(), len, static_cast<std::uint64_t>(tag * 100 + round));
                    reqs.push_back(post_send(a, sc, bufs.back().data(), len, tag, nullptr));
                }
                for (void* r : reqs) CHECK(wait(a, r, nullptr) == 0, "send failed");
            }
            await_peer(p.to_sender[0]);
            CHECK(a.close_send(sc) == 0, "close");
        });
}

TEST_P(nccl_abi, larger_send_is_truncated_to_the_receive) {
    // (send, receive) sizes: scratch path, eager, rendezvous.
    static constexpr std::array<std::pair<std::size_t, std::size_t>, 5> cases{
        {{50, 10}, {4000, 100}, {8192, 4096}, {65536, 1000}, {std::size_t{1} << 20, std::size_t{256} << 10}}};
    pair(
        [](api& a, const pipes& p) {
            void* l = nullptr;
            void* rc = accept_side(a, p, &l);
            std::vector<std::byte> buf(std::size_t{1} << 20);
            void* mh = nullptr;
            CHECK(a.reg_mr(rc, buf.data(), buf.size(), ptr_host, &mh) == 0, "regMr");
            for (auto [send, recv] : cases) {
                std::memset(buf.data(), 0, buf.size());
                void* d = buf.data();
                std::size_t s = recv;
                int tag = 1;
                void* req = post_recv(a, rc, 1, &d, &s, &tag, &mh);
                int got = -1;
                CHECK(wait(a, req, &got) == 0, "truncated receive (%zu into %zu) reported an error", send, recv);
                CHECK(static_cast<std::size_t>(got) == recv, "reported %d, receive holds %zu", got, recv);
                CHECK(first_bad(buf.data(), recv, send) < 0, "truncated payload wrong");
                CHECK(buf[recv] == std::byte{0}, "wrote past the receive buffer");
            }
            signal_peer(p.to_sender[1]);
            CHECK(a.dereg_mr(rc, mh) == 0 && a.close_recv(rc) == 0 && a.close_listen(l) == 0, "close");
        },
        [](api& a, const pipes& p, pid_t) {
            void* sc = connect_side(a, p);
            std::vector<std::byte> buf(std::size_t{1} << 20);
            for (auto [send, recv] : cases) {
                fill(buf.data(), send, send);
                void* req = post_send(a, sc, buf.data(), send, 1, nullptr);
                std::fprintf(stderr, "truncation: sending %zu\n", send);
                CHECK(wait(a, req, nullptr) == 0, "send failed");
            }
            await_peer(p.to_sender[0]);
            CHECK(a.close_send(sc) == 0, "close");
        });
}

TEST_P(nccl_abi, thirty_two_requests_in_flight) {
    constexpr int count = max_requests;
    auto len = [](int i) -> std::size_t { return (i % 2 == 0) ? 4096 + static_cast<std::size_t>(i) : (std::size_t{128} << 10) + static_cast<std::size_t>(i); };
    pair(
        [&](api& a, const pipes& p) {
            void* l = nullptr;
            void* rc = accept_side(a, p, &l);
            std::vector<std::vector<std::byte>> bufs;
            std::vector<void*> reqs;
            for (int i = 0; i < count; ++i) {
                bufs.emplace_back(len(i));
                void* d = bufs.back().data();
                std::size_t s = len(i);
                int tag = 5;
                void* req = nullptr;
                CHECK(a.irecv(rc, 1, &d, &s, &tag, nullptr, &req) == 0 && req != nullptr, "irecv %d not accepted", i);
                reqs.push_back(req);
            }
            signal_peer(p.to_sender[1]);
            for (int i = count - 1; i >= 0; --i) {  // completion order is ours to choose
                int got = -1;
                CHECK(wait(a, reqs[static_cast<std::size_t>(i)], &got) == 0, "recv %d failed", i);
                CHECK(static_cast<std::size_t>(got) == len(i), "recv %d size %d", i, got);
                CHECK(first_bad(bufs[static_cast<std::size_t>(i)].data(), len(i), static_cast<std::uint64_t>(i)) < 0,
                      "recv %d payload", i);
            }
            signal_peer(p.to_sender[1]);
            CHECK(a.close_recv(rc) == 0 && a.close_listen(l) == 0, "close");
        },
        [&](api& a, const pipes& p, pid_t) {
            void* sc = connect_side(a, p);
            await_peer(p.to_sender[0]);
            std::vector<std::vector<std::byte>> bufs;
            std::vector<void*> reqs;
            for (int i = 0; i < count; ++i) {
                bufs.emplace_back(len(i));
                fill(bufs.back().data(), len(i), static_cast<std::uint64_t>(i));
                void* req = nullptr;
                CHECK(a.isend(sc, bufs.back().data(), len(i), 5, nullptr, &req) == 0 && req != nullptr,
                      "isend %d not accepted", i);
                reqs.push_back(req);
            }
            for (void* r : reqs) CHECK(wait(a, r, nullptr) == 0, "send failed");
            await_peer(p.to_sender[0]);
            CHECK(a.close_send(sc) == 0, "close");
        });
}

TEST_P(nccl_abi, iflush_and_close_with_requests_outstanding) {
    pair(
        [](api& a, const pipes& p) {
            void* l = nullptr;
            void* rc = accept_side(a, p, &l);
            std::vector<std::byte> buf(4096);
            void* mh = nullptr;
            CHECK(a.reg_mr(rc, buf.data(), buf.size(), ptr_host, &mh) == 0, "regMr");
            void* d = buf.data();
            std::size_t s = buf.size();
            int tag = 3;
            void* req = post_recv(a, rc, 1, &d, &s, &tag, &mh);
            CHECK(wait(a, req, nullptr) == 0, "recv");
            int isz = 4096;
            void* freq = reinterpret_cast<void*>(0x1);
            CHECK(a.iflush(rc, 1, &d, &isz, &mh, &freq) == 0, "iflush");
            if (freq != nullptr) CHECK(wait(a, freq, nullptr) == 0, "flush request");
            // Receives nobody will satisfy, then close: must return, not hang.
            std::vector<void*> pending;
            for (int i = 0; i < 4; ++i) {
                int t = 100 + i;
                pending.push_back(post_recv(a, rc, 1, &d, &s, &t, &mh));
            }
            signal_peer(p.to_sender[1]);
            await_peer(p.to_receiver[0]);
            CHECK(a.dereg_mr(rc, mh) == 0, "deregMr");
            CHECK(a.close_recv(rc) == 0, "closeRecv with requests outstanding");
            // The closed comm is stale now.
            void* r2 = nullptr;
            CHECK(a.irecv(rc, 1, &d, &s, &tag, nullptr, &r2) != 0, "irecv on a closed comm accepted");
            CHECK(a.close_recv(rc) != 0, "double close accepted");
            CHECK(a.close_listen(l) == 0, "closeListen");
        },
        [](api& a, const pipes& p, pid_t) {
            void* sc = connect_side(a, p);
            std::vector<std::byte> buf(std::size_t{1} << 20);
            fill(buf.data(), 4096, 4096);
            CHECK(wait(a, post_send(a, sc, buf.data(), 4096, 3, nullptr), nullptr) == 0, "send");
            await_peer(p.to_sender[0]);
            // A rendezvous send whose receive never comes, then close.
            (void)post_send(a, sc, buf.data(), buf.size(), 999, nullptr);
            CHECK(a.close_send(sc) == 0, "closeSend with a request outstanding");
            void* r2 = nullptr;
            CHECK(a.isend(sc, buf.data(), 8, 1, nullptr, &r2) != 0, "isend on a closed comm accepted");
            signal_peer(p.to_receiver[1]);
        });
}

TEST_P(nccl_abi, killed_peer_fails_requests_instead_of_hanging) {
    pair(
        [](api& a, const pipes& p) {
            void* l = nullptr;
            void* rc = accept_side(a, p, &l);
            std::vector<std::byte> buf(4096);
            void* d = buf.data();
            std::size_t s = buf.size();
            int tag = 9;
            void* req = post_recv(a, rc, 1, &d, &s, &tag, nullptr);
            signal_peer(p.to_sender[1]);
            const auto t0 = clk::now();
            const int rc_test = wait(a, req, nullptr);
            CHECK(rc_test == system_error, "expected ncclSystemError, got %d", rc_test);
            std::fprintf(stderr, "dead peer detected after %lld ms\n",
                         static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(clk::now() - t0).count()));
            CHECK(a.close_recv(rc) == 0 && a.close_listen(l) == 0, "close after peer death");
        },
        [](api& a, const pipes& p, pid_t) {
            (void)connect_side(a, p);
            await_peer(p.to_sender[0]);
            ::raise(SIGKILL);
        },
        true);
}

// ---------------------------------------------------------------- peers on other hosts
// The peer process gets a UTS namespace of its own (another hostname), so the plugin cannot
// tell by pid whether it is alive: only the liveness exchange can.
void become_another_host() {
    CHECK(::unshare(CLONE_NEWUTS) == 0, "unshare(CLONE_NEWUTS): %s", std::strerror(errno));
    CHECK(::sethostname("loom-other-host", 15) == 0, "sethostname: %s", std::strerror(errno));
}

auto can_make_uts_namespaces() -> bool {
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(::unshare(CLONE_NEWUTS) == 0 ? 0 : 1);
    int st = 0;
    ::waitpid(pid, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/// Both directions between the two processes: `to` carries this process's sends, `from` its
/// receives. The side that accepted first (`listens_first`) connects second.
struct two_way {
    void* listen{nullptr};
    void* from{nullptr};
    void* to{nullptr};
};
auto connect_both_ways(api& a, int handle_out, int handle_in, bool listens_first) -> two_way {
    init_and_check(a);
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

constexpr long peer_timeout_ms = 1500;  // what run_pair sets LOOM_PEER_TIMEOUT_MS to

TEST_P(nccl_abi, peer_on_another_host_killed_fails_every_request_within_the_peer_timeout) {
    if (!can_make_uts_namespaces()) GTEST_SKIP() << "no UTS namespaces here (needs CAP_SYS_ADMIN)";
    pair(
        [](api& a, const pipes& p) {
            auto w = connect_both_ways(a, p.to_sender[1], p.to_receiver[0], true);
            // Eight receives the peer will never fill, eight rendezvous sends it will never take.
            constexpr int n = 8;
            std::vector<std::vector<std::byte>> rbuf(n, std::vector<std::byte>(4096));
            std::vector<std::byte> sbuf(std::size_t{1} << 20, std::byte{7});
            std::vector<void*> reqs;
            for (int i = 0; i < n; ++i) {
                void* d = rbuf[static_cast<std::size_t>(i)].data();
                std::size_t sz = 4096;
                int tag = i;
                reqs.push_back(post_recv(a, w.from, 1, &d, &sz, &tag, nullptr));
                reqs.push_back(post_send(a, w.to, sbuf.data(), sbuf.size(), i, nullptr));
            }
            signal_peer(p.to_sender[1]);
            await_peer(p.to_receiver[0]);  // the peer's last word before SIGKILL
            const auto t0 = clk::now();
            for (void* r : reqs) {
                const int rc = wait(a, r, nullptr);
                CHECK(rc == system_error, "expected ncclSystemError, got %d", rc);
            }
            const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(clk::now() - t0).count();
            std::fprintf(stderr, "16 requests to a dead peer on another host failed %lld ms after its death\n",
                         static_cast<long long>(ms));
            // The timeout, one 100 ms check, and scheduling on a loaded 2-core machine.
            CHECK(ms <= peer_timeout_ms + 1000, "requests failed %lld ms after the death (timeout %ld ms)",
                  static_cast<long long>(ms), peer_timeout_ms);
            CHECK(a.close_send(w.to) == 0 && a.close_recv(w.from) == 0 && a.close_listen(w.listen) == 0,
                  "close after peer death");
        },
        [](api& a, const pipes& p, pid_t) {
            become_another_host();
            (void)connect_both_ways(a, p.to_receiver[1], p.to_sender[0], false);
            await_peer(p.to_sender[0]);
            // Let the survivor's requests wait on us for a while (pings answered), then die.
            std::this_thread::sleep_for(std::chrono::milliseconds(2 * peer_timeout_ms));
            signal_peer(p.to_receiver[1]);
            ::raise(SIGKILL);
        },
        true);
}

TEST_P(nccl_abi, peer_on_another_host_busy_elsewhere_is_not_declared_dead) {
    if (!can_make_uts_namespaces()) GTEST_SKIP() << "no UTS namespaces here (needs CAP_SYS_ADMIN)";
    pair(
        [](api& a, const pipes& p) {
            void* l = nullptr;
            void* rc = accept_side(a, p, &l);
            std::vector<std::byte> buf(65536);
            void* d = buf.data();
            std::size_t s = buf.size();
            int tag = 4;
            void* req = post_recv(a, rc, 1, &d, &s, &tag, nullptr);
            signal_peer(p.to_sender[1]);
            int got = 0;
            const int code = wait(a, req, &got);
            CHECK(code == 0, "a receive from a live but busy peer failed (%d)", code);
            CHECK(got == 65536 && buf[65535] == std::byte{0x5a}, "received %d bytes", got);
            CHECK(a.close_recv(rc) == 0 && a.close_listen(l) == 0, "close");
        },
        [](api& a, const pipes& p, pid_t) {
            become_another_host();
            void* sc = connect_side(a, p);
            await_peer(p.to_sender[0]);
            // Busy elsewhere: no call into the plugin for three peer timeouts while the
            // receiver waits on us.
            std::this_thread::sleep_for(std::chrono::milliseconds(3 * peer_timeout_ms));
            std::vector<std::byte> buf(65536, std::byte{0x5a});
            void* req = post_send(a, sc, buf.data(), buf.size(), 4, nullptr);
            CHECK(wait(a, req, nullptr) == 0, "send");
            CHECK(a.close_send(sc) == 0, "close");
        });
}

// v10+: one start event per isend and per sub-receive given a profiler handle, each stopped
// exactly once when test() reports the request done or close() fails it; none without a handle.
class nccl_profiler : public nccl_abi {};

auto prof_starts() -> std::vector<prof_record> {
    std::lock_guard lock(g_prof_mu);
    std::vector<prof_record> out;
    for (const auto& r : g_prof_log)
        if (r.type == profiler_net_start) out.push_back(r);
    return out;
}
auto prof_stopped(void* handle) -> bool {
    std::lock_guard lock(g_prof_mu);
    return std::ranges::any_of(g_prof_log, [&](const prof_record& r) { return r.type == profiler_net_stop && r.handle == handle; });
}
auto prof_open() -> std::size_t {
    std::lock_guard lock(g_prof_mu);
    return g_prof_open.size();
}
auto fake(std::uintptr_t v) -> void* { return reinterpret_cast<void*>(v); }

TEST_P(nccl_profiler, events_start_per_operation_and_stop_once) {
    pair(
        [](api& a, const pipes& p) {
            g_init_prof = recorder;
            void* l = nullptr;
            void* rc = accept_side(a, p, &l);
            CHECK(a.irecv_p != nullptr, "no profiler entry points");
            std::vector<std::byte> b0(64), b1(100000), b2(4096), b3(32);
            std::array<void*, 3> d{b0.data(), b1.data(), b2.data()};
            std::array<std::size_t, 3> s{b0.size(), b1.size(), b2.size()};
            std::array<int, 3> tags{1, 2, 3};
            std::array<void*, 3> ph{fake(0xA1), nullptr, fake(0xA3)};
            void* grouped = nullptr;
            CHECK(a.irecv_p(rc, 3, d.data(), s.data(), tags.data(), nullptr, ph.data(), &grouped) == 0 && grouped != nullptr,
                  "grouped irecv");
            void* d3 = b3.data();
            std::size_t s3 = b3.size();
            int t3 = 4;
            void* single = nullptr;
            CHECK(a.irecv_p(rc, 1, &d3, &s3, &t3, nullptr, nullptr, &single) == 0 && single != nullptr, "irecv");
            auto starts = prof_starts();
            CHECK(starts.size() == 2 && prof_open() == 2, "expected 2 open receive events, got %zu", starts.size());
            signal_peer(p.to_sender[1]);
            std::array<int, 3> got{};
            CHECK(wait(a, grouped, got.data()) == 0 && got[0] == 64 && got[1] == 100000 && got[2] == 4096, "grouped");
            CHECK(first_bad(b1.data(), b1.size(), 2) < 0 && first_bad(b2.data(), b2.size(), 3) < 0, "payload");
            CHECK(wait(a, single, nullptr) == 0, "single");
            CHECK(prof_open() == 0, "%zu receive events left open after completion", prof_open());
            for (const auto& r : starts) {
                const bool first = r.phandle == fake(0xA1);
                CHECK(first || r.phandle == fake(0xA3), "unexpected parent %p", r.phandle);
                CHECK(r.id == loom_profiler_id_v1 && r.info.kind == loom_event_recv, "id/kind");
                CHECK(r.info.slot == (first ? 0U : 2U) && r.info.tag == (first ? 1 : 3) &&
                          r.info.size == (first ? 64U : 4096U) && r.info.rails >= 1 && !r.device.empty(),
                      "receive event: slot %u tag %d size %llu", r.info.slot, r.info.tag,
                      static_cast<unsigned long long>(r.info.size));
                CHECK(prof_stopped(r.handle), "receive event not stopped");
            }
            // Receives nobody satisfies: close must stop their events too.
            std::array<void*, 2> ph2{fake(0xB1), fake(0xB2)};
            std::array<int, 2> t2{50, 51};
            std::array<void*, 2> d2{b2.data(), b3.data()};
            std::array<std::size_t, 2> s2{b2.size(), b3.size()};
            void* never = nullptr;
            CHECK(a.irecv_p(rc, 2, d2.data(), s2.data(), t2.data(), nullptr, ph2.data(), &never) == 0 && never != nullptr,
                  "irecv never satisfied");
            CHECK(prof_open() == 2, "open events %zu", prof_open());
            await_peer(p.to_receiver[0]);
            CHECK(a.close_recv(rc) == 0 && a.close_listen(l) == 0, "close");
            CHECK(prof_open() == 0, "close left %zu events open", prof_open());
            CHECK(prof_starts().size() == 4, "starts %zu", prof_starts().size());
        },
        [](api& a, const pipes& p, pid_t) {
            g_init_prof = recorder;
            void* sc = connect_side(a, p);
            std::vector<std::byte> b1(100000), b2(4096), big_buf(std::size_t{1} << 20);
            fill(b1.data(), b1.size(), 2);
            fill(b2.data(), b2.size(), 3);
            std::vector<std::byte> b0(64), b3(32);
            await_peer(p.to_sender[0]);
            auto post = [&](void* data, std::size_t n, int tag, void* ph) {
                void* req = nullptr;
                const auto deadline = clk::now() + std::chrono::seconds(30);
                while (req == nullptr) {
                    CHECK(a.isend_p(sc, data, n, tag, nullptr, ph, &req) == 0, "isend");
                    CHECK(clk::now() < deadline, "isend never accepted");
                }
                return req;
            };
            std::vector<void*> reqs{post(b0.data(), 64, 1, fake(0xC1)), post(b1.data(), b1.size(), 2, fake(0xC2)),
                                    post(b2.data(), b2.size(), 3, nullptr), post(b3.data(), 32, 4, fake(0xC4))};
            CHECK(prof_starts().size() == 3, "expected 3 send events, got %zu", prof_starts().size());
            for (void* r : reqs) CHECK(wait(a, r, nullptr) == 0, "send");
            CHECK(prof_open() == 0, "%zu send events left open after completion", prof_open());
            for (const auto& r : prof_starts()) {
                CHECK(r.id == loom_profiler_id_v1 && r.info.kind == loom_event_send && r.info.slot == 0, "id/kind");
                const std::size_t want = r.phandle == fake(0xC1) ? 64 : r.phandle == fake(0xC2) ? 100000 : 32;
                CHECK(r.info.size == want && r.info.protocol <= 1 && !r.device.empty(), "send event size %llu",
                      static_cast<unsigned long long>(r.info.size));
                if (want < 1000) CHECK(r.info.protocol == 0, "small send reported as rendezvous");
                CHECK(prof_stopped(r.handle), "send event not stopped");
            }
            // A rendezvous send whose receive never comes, then close: its event must stop.
            (void)post(big_buf.data(), big_buf.size(), 999, fake(0xC9));
            CHECK(prof_open() == 1, "open %zu", prof_open());
            CHECK(a.close_send(sc) == 0, "closeSend");
            CHECK(prof_open() == 0, "closeSend left %zu events open", prof_open());
            signal_peer(p.to_receiver[1]);
        });
}

// Registrations through regMrDmaBuf (a memfd standing in for the DMA-BUF: libfabric's utility
// providers register its mapped range) and iflush by RMA read (LOOM_FLUSH=1 reads back every
// registered buffer, as it does for device memory on GPU machines).
class nccl_memory : public nccl_abi {};

struct memfd_map {
    explicit memfd_map(std::size_t n) : size(n) {
        fd = ::memfd_create("loom-harness", 0);
        CHECK(fd >= 0 && ::ftruncate(fd, static_cast<off_t>(n)) == 0, "memfd");
        map = static_cast<std::byte*>(::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
        CHECK(map != MAP_FAILED, "mmap");
    }
    std::size_t size;
    int fd{-1};
    std::byte* map{nullptr};
};

TEST_P(nccl_memory, dmabuf_registrations_carry_eager_and_rendezvous_byte_exact) {
    static const std::vector<std::size_t> lens{100, 16384, 65537, std::size_t{1} << 20};
    pair(
        [](api& a, const pipes& p) {
            void* l = nullptr;
            void* rc = accept_side(a, p, &l);
            memfd_map m(std::size_t{4} << 20);
            const std::size_t off = 3 * 4096;  // the buffer starts 3 pages into the DMA-BUF
            void* mh = nullptr;
            CHECK(a.reg_mr_dmabuf(rc, m.map + off, m.size - off, ptr_host, off, m.fd, &mh) == 0 && mh != nullptr,
                  "regMrDmaBuf");
            for (std::size_t i = 0; i < lens.size(); ++i) {
                std::memset(m.map + off, 0, lens[i] + 16);
                void* d = m.map + off + 8;
                std::size_t s = lens[i];
                int tag = static_cast<int>(i);
                int got = -1;
                CHECK(wait(a, post_recv(a, rc, 1, &d, &s, &tag, &mh), &got) == 0 && got == static_cast<int>(lens[i]),
                      "receive %zu: size %d", lens[i], got);
                const long bad = first_bad(m.map + off + 8, lens[i], 50 + i);
                CHECK(bad < 0, "size %zu: byte %ld differs", lens[i], bad);
                // iflush by RMA read of the buffer just received (LOOM_FLUSH=1): a request that
                // completes, and the data stays intact.
                int isz = static_cast<int>(lens[i]);
                void* freq = nullptr;
                const char* mode = std::getenv("LOOM_FLUSH");
                if (mode != nullptr && std::string_view{mode} == "1") {
                    CHECK(a.iflush(rc, 1, &d, &isz, &mh, &freq) == 0 && freq != nullptr, "iflush gave no request");
                    CHECK(wait(a, freq, nullptr) == 0, "flush read failed");
                } else {
                    CHECK(a.iflush(rc, 1, &d, &isz, &mh, &freq) == 0 && freq == nullptr, "host flush not NULL");
                }
                CHECK(first_bad(m.map + off + 8, lens[i], 50 + i) < 0, "data changed by the flush");
            }
            signal_peer(p.to_sender[1]);
            // Nothing to read: no handle, or empty buffers → NULL request (done).
            void* d = m.map + off;
            int zero = 0, some = 64;
            void* freq = fake(1);
            CHECK(a.iflush(rc, 1, &d, &some, nullptr, &freq) == 0 && freq == nullptr, "iflush without a handle");
            freq = fake(1);
            CHECK(a.iflush(rc, 1, &d, &zero, &mh, &freq) == 0 && freq == nullptr, "iflush of 0 bytes");
            int negative = -1;
            CHECK(a.iflush(rc, 1, &d, &negative, &mh, &freq) != 0, "negative flush size accepted");
            std::array<std::byte, 64> other{};
            void* od = other.data();
            CHECK(a.iflush(rc, 1, &od, &some, &mh, &freq) != 0, "flush of a buffer outside its registration accepted");
            CHECK(a.dereg_mr(rc, mh) == 0, "deregMr");
            CHECK(a.iflush(rc, 1, &d, &some, &mh, &freq) != 0, "flush with a stale handle accepted");
            CHECK(a.close_recv(rc) == 0 && a.close_listen(l) == 0, "close");
        },
        [](api& a, const pipes& p, pid_t) {
            void* sc = connect_side(a, p);
            memfd_map m(std::size_t{2} << 20);
            void* mh = nullptr;
            CHECK(a.reg_mr_dmabuf(sc, m.map, m.size, ptr_host, 0, m.fd, &mh) == 0 && mh != nullptr, "regMrDmaBuf");
            for (std::size_t i = 0; i < lens.size(); ++i) {
                fill(m.map, lens[i], 50 + i);
                CHECK(wait(a, post_send(a, sc, m.map, lens[i], static_cast<int>(i), mh), nullptr) == 0, "send %zu", lens[i]);
            }
            await_peer(p.to_sender[0]);
            CHECK(a.dereg_mr(sc, mh) == 0, "deregMr");
            CHECK(a.close_send(sc) == 0, "close");
        });
}

TEST_P(nccl_abi, bad_input_gives_error_codes) {
    const int version = GetParam().version;
    int rs = 0, ss = 0;
    run_pair(
        GetParam().provider, GetParam().env,
        [&](const pipes&) {
            api a = load(version);
            CHECK(a.test(nullptr, nullptr, nullptr) != 0, "test before init");
            CHECK(a.init() == 0, "init");
            int n = 0;
            CHECK(a.devices(nullptr) != 0, "devices(NULL)");
            CHECK(a.devices(&n) == 0 && n >= 1, "devices");
            props pr;
            CHECK(a.get_props(-1, pr) != 0 && a.get_props(n + 5, pr) != 0, "getProperties of unknown devices");
            std::array<char, handle_maxsize> h{};
            void* l = nullptr;
            CHECK(a.listen(n + 5, h.data(), &l) != 0 && l == nullptr, "listen on unknown device");
            CHECK(a.listen(0, nullptr, &l) != 0, "listen with NULL handle");
            CHECK(a.listen(0, h.data(), nullptr) != 0, "listen with NULL comm");
            CHECK(a.listen(0, h.data(), &l) == 0 && l != nullptr, "listen");
            // Foreign, corrupted and truncated handles.
            std::array<char, handle_maxsize> bad{};
            void* sc = nullptr;
            CHECK(a.connect(0, bad.data(), &sc) != 0 && sc == nullptr, "connect with a zero handle");
            for (int bit : {0, 77, 8 * 22 + 3, 8 * 127}) {
                bad = h;
                bad[static_cast<std::size_t>(bit / 8)] ^= static_cast<char>(1 << (bit % 8));
                CHECK(a.connect(0, bad.data(), &sc) != 0 && sc == nullptr, "connect with bit %d flipped", bit);
            }
            CHECK(a.connect(0, nullptr, &sc) != 0, "connect(NULL handle)");
            void* rc = nullptr;
            CHECK(a.accept(nullptr, &rc) != 0, "accept(NULL)");
            CHECK(a.accept(l, nullptr) != 0, "accept(.., NULL)");
            // Connect to ourselves to get live comms.
            const auto deadline = clk::now() + std::chrono::seconds(20);
            while (sc == nullptr || rc == nullptr) {
                if (sc == nullptr) CHECK(a.connect(0, h.data(), &sc) == 0, "connect");
                if (rc == nullptr) CHECK(a.accept(l, &rc) == 0, "accept");
                CHECK(clk::now() < deadline, "self-connect timed out");
            }
            void* other = nullptr;
            CHECK(a.accept(sc, &other) != 0 && other == nullptr, "accept on a send comm");
            std::vector<std::byte> buf(4096);
            void* mh = nullptr;
            CHECK(a.reg_mr(nullptr, buf.data(), buf.size(), ptr_host, &mh) != 0, "regMr(NULL comm)");
            CHECK(a.reg_mr(sc, nullptr, buf.size(), ptr_host, &mh) != 0, "regMr(NULL data)");
            CHECK(a.reg_mr(sc, buf.data(), 0, ptr_host, &mh) != 0, "regMr(size 0)");
            CHECK(a.reg_mr(sc, buf.data(), buf.size(), ptr_host, nullptr) != 0, "regMr(NULL out)");
            CHECK(a.reg_mr(sc, buf.data(), buf.size(), ptr_cuda, &mh) != 0, "regMr(CUDA) on a host-only device");
            CHECK(a.reg_mr_dmabuf(sc, buf.data(), buf.size(), ptr_host, 0, 1000, &mh) != 0,
                  "regMrDmaBuf with a descriptor that is not open");
            CHECK(a.reg_mr_dmabuf(sc, buf.data(), buf.size(), ptr_cuda, 0, 1000, &mh) != 0,
                  "regMrDmaBuf of CUDA memory on a host-only device");
            CHECK(a.reg_mr_dmabuf(sc, buf.data(), buf.size(), 7, 0, -1, &mh) != 0, "regMrDmaBuf of an unknown type");
            CHECK(a.reg_mr(sc, buf.data(), buf.size(), ptr_host, &mh) == 0 && mh != nullptr, "regMr");
            void* req = nullptr;
            CHECK(a.isend(nullptr, buf.data(), 8, 1, mh, &req) != 0, "isend(NULL comm)");
            CHECK(a.isend(rc, buf.data(), 8, 1, mh, &req) != 0, "isend on a receive comm");
            CHECK(a.isend(sc, nullptr, 8, 1, nullptr, &req) != 0, "isend(NULL data)");
            CHECK(a.isend(sc, buf.data(), 8, 1, mh, nullptr) != 0, "isend(NULL request)");
            if (version >= 9) CHECK(a.isend(sc, buf.data(), std::size_t{3} << 30, 1, nullptr, &req) != 0, "isend above maxP2pBytes");
            CHECK(a.isend(sc, buf.data(), 8192, 1, mh, &req) != 0, "isend beyond the registration");
            void* d[9];
            std::size_t s[9];
            int t[9];
            void* m[9];
            for (int i = 0; i < 9; ++i) {
                d[i] = buf.data();
                s[i] = 16;
                t[i] = i;
                m[i] = mh;
            }
            CHECK(a.irecv(rc, 0, d, s, t, m, &req) != 0, "irecv n=0");
            CHECK(a.irecv(rc, 9, d, s, t, m, &req) != 0, "irecv n=9 > maxRecvs");
            CHECK(a.irecv(rc, 1, nullptr, s, t, m, &req) != 0, "irecv(NULL data)");
            CHECK(a.irecv(rc, 1, d, nullptr, t, m, &req) != 0, "irecv(NULL sizes)");
            CHECK(a.irecv(rc, 1, d, s, nullptr, m, &req) != 0, "irecv(NULL tags)");
            CHECK(a.irecv(sc, 1, d, s, t, m, &req) != 0, "irecv on a send comm");
            int done = 0;
            CHECK(a.test(nullptr, &done, nullptr) != 0, "test(NULL)");
            CHECK(a.test(buf.data(), &done, nullptr) != 0, "test(foreign pointer)");
            // A completed request is stale.
            std::vector<std::byte> src(64);
            void* sreq = post_send(a, sc, src.data(), src.size(), 4, nullptr);
            std::size_t s1 = 64;
            int t1 = 4;
            void* d1 = buf.data();
            void* rreq = post_recv(a, rc, 1, &d1, &s1, &t1, &mh);
            CHECK(wait(a, sreq, nullptr) == 0 && wait(a, rreq, nullptr) == 0, "self transfer");
            CHECK(a.test(rreq, &done, nullptr) != 0, "test of a completed request");
            CHECK(a.dereg_mr(sc, nullptr) != 0, "deregMr(NULL)");
            CHECK(a.dereg_mr(sc, mh) == 0, "deregMr");
            CHECK(a.dereg_mr(sc, mh) != 0, "deregMr of a stale handle");
            CHECK(a.isend(sc, buf.data(), 8, 1, mh, &req) != 0, "isend with a stale mhandle");
            if (a.make_vdevice) {
                int vd = -1;
                const int devs[2] = {0, 0};
                const int unknown[1] = {n + 3};
                CHECK(a.make_vdevice(nullptr, 1, devs) != 0, "makeVDevice(NULL)");
                CHECK(a.make_vdevice(&vd, 0, devs) != 0, "makeVDevice(0 devices)");
                CHECK(a.make_vdevice(&vd, 2, devs) != 0, "makeVDevice(duplicate devices)");
                CHECK(a.make_vdevice(&vd, 1, unknown) != 0, "makeVDevice(unknown device)");
            }
            CHECK(a.close_send(rc) != 0, "closeSend on a receive comm");
            CHECK(a.close_send(sc) == 0 && a.close_recv(rc) == 0 && a.close_listen(l) == 0, "close");
            CHECK(a.close_send(sc) != 0 && a.close_listen(l) != 0, "double close");
            CHECK(a.close_send(nullptr) != 0 && a.close_recv(nullptr) != 0 && a.close_listen(nullptr) != 0,
                  "close(NULL)");
            CHECK(a.finalize() == 0, "finalize");
        },
        [](const pipes&, pid_t) {}, &rs, &ss);
    EXPECT_TRUE(exited_ok(rs)) << "status " << rs;
}

// makeVDevice: two NICs (lo and eth0) fused into one virtual device; transfers must arrive
// byte-exact while rendezvous writes stripe over both (tests/integration/plugins checks the
// per-rail counts at the runtime level).
class nccl_rails : public nccl_abi {};
TEST_P(nccl_rails, virtual_device_carries_every_size_byte_exact) {
    static const std::vector<std::size_t> rail_sizes{8, 65537, std::size_t{1} << 20, big};
    auto open_vdev = [](api& a) -> int {
        CHECK(a.init() == 0, "init");
        int n = 0;
        CHECK(a.devices(&n) == 0 && n == 2, "expected the two NICs named in LOOM_IFACE, found %d", n);
        int vd = -1;
        const int devs[2] = {0, 1};
        CHECK(a.make_vdevice && a.make_vdevice(&vd, 2, devs) == 0 && vd == 2, "makeVDevice -> %d", vd);
        props p;
        CHECK(a.get_props(vd, p) == 0 && p.name.find('+') != std::string::npos, "vdevice properties '%s'", p.name.c_str());
        return vd;
    };
    pair(
        [&](api& a, const pipes& p) {
            const int vd = open_vdev(a);
            std::array<char, handle_maxsize> handle{};
            void* l = nullptr;
            CHECK(a.listen(vd, handle.data(), &l) == 0, "listen on the virtual device");
            write_all(p.to_sender[1], handle.data(), handle.size());
            void* rc = nullptr;
            const auto deadline = clk::now() + std::chrono::seconds(30);
            while (rc == nullptr) {
                CHECK(a.accept(l, &rc) == 0 && clk::now() < deadline, "accept");
            }
            std::vector<std::byte> buf(big);
            void* mh = nullptr;
            CHECK(a.reg_mr(rc, buf.data(), buf.size(), ptr_host, &mh) == 0, "regMr");
            for (std::size_t n : rail_sizes) {
                std::memset(buf.data(), 0, n);
                void* d = buf.data();
                std::size_t s = n;
                int tag = 2;
                int got = -1;
                CHECK(wait(a, post_recv(a, rc, 1, &d, &s, &tag, &mh), &got) == 0 && static_cast<std::size_t>(got) == n,
                      "recv %zu", n);
                CHECK(first_bad(buf.data(), n, n + 1) < 0, "size %zu payload", n);
            }
            signal_peer(p.to_sender[1]);
            CHECK(a.dereg_mr(rc, mh) == 0 && a.close_recv(rc) == 0 && a.close_listen(l) == 0, "close");
        },
        [&](api& a, const pipes& p, pid_t) {
            const int vd = open_vdev(a);
            std::array<char, handle_maxsize> handle{};
            read_all(p.to_sender[0], handle.data(), handle.size());
            void* sc = nullptr;
            const auto deadline = clk::now() + std::chrono::seconds(30);
            while (sc == nullptr) {
                CHECK(a.connect(vd, handle.data(), &sc) == 0 && clk::now() < deadline, "connect");
            }
            std::vector<std::byte> buf(big);
            for (std::size_t n : rail_sizes) {
                fill(buf.data(), n, n + 1);
                CHECK(wait(a, post_send(a, sc, buf.data(), n, 2, nullptr), nullptr) == 0, "send %zu", n);
            }
            await_peer(p.to_sender[0]);
            CHECK(a.close_send(sc) == 0, "close");
        });
}
INSTANTIATE_TEST_SUITE_P(rails, nccl_rails,
                         ::testing::Values(param{"tcp", 12, "LOOM_IFACE=lo,eth0"},
                                           param{"tcp;ofi_rxm", 12, "LOOM_IFACE=lo,eth0"},
                                           param{"tcp", 9, "LOOM_IFACE=lo,eth0"}),
                         [](const ::testing::TestParamInfo<param>& i) {
                             std::string p = i.param.provider;
                             for (auto& c : p)
                                 if (c == ';') c = '_';
                             return p + "_v" + std::to_string(i.param.version);
                         });

auto name_of(const ::testing::TestParamInfo<param>& i) -> std::string {
    std::string p = i.param.provider;
    for (auto& c : p)
        if (c == ';') c = '_';
    p += "_v" + std::to_string(i.param.version);
    if (!i.param.env.empty()) p += "_" + i.param.env.substr(0, i.param.env.find('='));
    return p;
}

INSTANTIATE_TEST_SUITE_P(providers, nccl_abi,
                         ::testing::Values(param{"shm", 12}, param{"tcp;ofi_rxm", 12}, param{"tcp", 12}), name_of);

// Every older exported version, on one provider: the shims must reach the same implementation.
INSTANTIATE_TEST_SUITE_P(versions, nccl_abi,
                         ::testing::Values(param{"tcp", 6}, param{"tcp", 7}, param{"tcp", 8}, param{"tcp", 9},
                                           param{"tcp", 10}, param{"tcp", 11}),
                         name_of);

INSTANTIATE_TEST_SUITE_P(profiler, nccl_profiler,
                         ::testing::Values(param{"shm", 12}, param{"tcp;ofi_rxm", 11}, param{"tcp", 10},
                                           param{"tcp;ofi_rxm", 12, "LOOM_PROGRESS_THREAD=1"}),
                         name_of);

INSTANTIATE_TEST_SUITE_P(memory, nccl_memory,
                         ::testing::Values(param{"shm", 12, "LOOM_FLUSH=1"}, param{"tcp", 11, "LOOM_FLUSH=1"},
                                           param{"tcp;ofi_rxm", 12, "LOOM_FLUSH=auto"}),
                         name_of);

// The same with the runtime's background progress thread driving the engine.
INSTANTIATE_TEST_SUITE_P(progress_thread, nccl_abi,
                         ::testing::Values(param{"shm", 12, "LOOM_PROGRESS_THREAD=1"},
                                           param{"tcp;ofi_rxm", 12, "LOOM_PROGRESS_THREAD=1"}),
                         name_of);

}  // namespace
