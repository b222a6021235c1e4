// The NVSHMEM transport harness's shared part: it plays NVSHMEM's core. The test process
// forks the PEs and serves their bootstrap (allgather, alltoall, barrier) over one socket pair
// per PE; each PE loads the built nvshmem_transport_libfabric.so.<major> as NVSHMEM does
// (dlopen RTLD_NOW, dlsym "nvshmemt_init"), fills in what the core shares with a transport,
// connects, registers a host-memory symmetric heap, all-gathers the 512-byte handles and runs
// a proxy thread that calls progress.
#pragma once

#include "../../../nvshmem-transport/src/transport_abi.hpp"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace nvshmem_harness {

namespace abi = loom::nvshmem::abi;
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

// ---------------------------------------------------------------- the bootstrap (PE side)
inline int g_boot_fd = -1;

inline auto write_all(int fd, const void* p, std::size_t n) -> bool {
    auto* b = static_cast<const char*>(p);
    while (n > 0) {
        const auto k = ::write(fd, b, n);
        if (k <= 0) return false;
        b += k;
        n -= static_cast<std::size_t>(k);
    }
    return true;
}
inline auto read_all(int fd, void* p, std::size_t n) -> bool {
    auto* b = static_cast<char*>(p);
    while (n > 0) {
        const auto k = ::read(fd, b, n);
        if (k <= 0) return false;
        b += k;
        n -= static_cast<std::size_t>(k);
    }
    return true;
}

// Request: u32 kind (1 allgather, 2 alltoall), u32 bytes per PE, then the data (alltoall: n blocks).
inline int boot_exchange(std::uint32_t kind, const void* send, void* recv, int bytes, abi::bootstrap_handle* h) {
    if (h == nullptr || bytes < 0) return 1;
    const std::uint32_t head[2] = {kind, static_cast<std::uint32_t>(bytes)};
    const std::size_t out = kind == 2 ? static_cast<std::size_t>(bytes) * static_cast<std::size_t>(h->pg_size)
                                      : static_cast<std::size_t>(bytes);
    if (!write_all(g_boot_fd, head, sizeof head) || !write_all(g_boot_fd, send, out)) return 1;
    const std::size_t in = static_cast<std::size_t>(bytes) * static_cast<std::size_t>(h->pg_size);
    return read_all(g_boot_fd, recv, in) ? 0 : 1;
}
inline int boot_allgather(const void* s, void* r, int bytes, abi::bootstrap_handle* h) {
    return boot_exchange(1, s, r, bytes, h);
}
inline int boot_alltoall(const void* s, void* r, int bytes, abi::bootstrap_handle* h) {
    return boot_exchange(2, s, r, bytes, h);
}
inline int boot_barrier(abi::bootstrap_handle* h) {
    std::vector<char> all(static_cast<std::size_t>(h->pg_size));
    const char one = 1;
    return boot_exchange(1, &one, all.data(), 1, h);
}
inline void boot_exit(int status) { ::_exit(status); }

// ---------------------------------------------------------------- the bootstrap (hub side)
/// Serves the PEs' exchanges until every PE closed its socket or the deadline passed.
/// False on a protocol error or a timeout.
inline auto serve_bootstrap(const std::vector<int>& fds, std::chrono::seconds limit) -> bool {
    const auto n = fds.size();
    const auto deadline = clk::now() + limit;
    std::vector<bool> open(n, true);
    std::size_t alive = n;
    while (alive > 0) {
        // One collective at a time: read every live PE's request, then answer all.
        std::vector<std::uint32_t> kind(n), bytes(n);
        std::vector<std::vector<char>> data(n);
        std::size_t got = 0;
        std::vector<bool> have(n, false);
        while (got < alive) {
            std::vector<pollfd> p;
            std::vector<std::size_t> who;
            for (std::size_t i = 0; i < n; ++i)
                if (open[i] && !have[i]) {
                    p.push_back({fds[i], POLLIN, 0});
                    who.push_back(i);
                }
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clk::now()).count();
            if (left <= 0) return false;
            if (::poll(p.data(), p.size(), static_cast<int>(std::min<long long>(left, 1000))) < 0) return false;
            for (std::size_t k = 0; k < p.size(); ++k) {
                if (p[k].revents == 0) continue;
                const auto i = who[k];
                std::uint32_t head[2];
                if (!read_all(fds[i], head, sizeof head)) {  // the PE is gone (exited or killed)
                    open[i] = false;
                    --alive;
                    continue;
                }
                kind[i] = head[0];
                bytes[i] = head[1];
                const std::size_t size = head[0] == 2 ? std::size_t{head[1]} * n : head[1];
                data[i].resize(size);
                if ((head[0] != 1 && head[0] != 2) || !read_all(fds[i], data[i].data(), size)) return false;
                have[i] = true;
                ++got;
            }
        }
        if (alive == 0) break;
        for (std::size_t i = 0; i < n; ++i) {
            if (!open[i]) continue;
            std::vector<char> answer(std::size_t{bytes[i]} * n);
            for (std::size_t j = 0; j < n; ++j) {
                if (!open[j] || bytes[j] != bytes[i]) continue;  // a dead PE's part stays zero
                const char* src = kind[i] == 2 ? data[j].data() + i * bytes[i] : data[j].data();
                std::memcpy(answer.data() + j * bytes[i], src, bytes[i]);
            }
            (void)write_all(fds[i], answer.data(), answer.size());
        }
    }
    return true;
}

// ---------------------------------------------------------------- a PE
inline constexpr std::size_t heap_size = std::size_t{4} << 20;

struct pe_env {
    int me{0};
    int n{0};
    abi::transport* t{nullptr};
    abi::bootstrap_handle boot{};
    std::byte* heap{nullptr};
    abi::mem_handle mine{};
    std::vector<abi::mem_handle> handles;  ///< every PE's heap handle, by PE
    std::atomic<bool> stop{false};
    std::thread proxy;

    /// Where `offset` of PE `pe`'s heap is (its address in that PE, which the handle covers).
    [[nodiscard]] auto remote(int pe, std::size_t offset) -> abi::rma_memdesc {
        return {reinterpret_cast<void*>(heap_base_of(pe) + offset), offset, &handles[static_cast<std::size_t>(pe)]};
    }
    [[nodiscard]] auto heap_base_of(int pe) const -> std::uintptr_t { return bases[static_cast<std::size_t>(pe)]; }
    std::vector<std::uintptr_t> bases;

    auto barrier() -> void { CHECK(boot.barrier(&boot) == 0, "barrier"); }
};

inline auto load_init() -> abi::init_fn {
    void* lib = ::dlopen(LOOM_NVSHMEM_TRANSPORT_PATH, RTLD_NOW | RTLD_LOCAL);
    CHECK(lib != nullptr, "dlopen %s: %s", LOOM_NVSHMEM_TRANSPORT_PATH, ::dlerror());
    auto init = reinterpret_cast<abi::init_fn>(::dlsym(lib, "nvshmemt_init"));
    CHECK(init != nullptr, "dlsym nvshmemt_init");
    return init;
}

/// The host's interface version: this major, minor 1 (a newer minor must be accepted).
inline constexpr int host_version = abi::interface_version + 100;

inline auto connect(abi::transport* t, int nics = 1) -> int {
    int dev[2] = {0, 1};
#if LOOM_NVSHMEM_MAJOR >= 4
    int qps[2] = {-1, -1};
    const int rc = t->ops.connect_endpoints(t, dev, nics, qps, 2);
    if (rc == 0) CHECK(qps[0] == 0 && qps[1] == 1, "queue indices %d %d", qps[0], qps[1]);
    return rc;
#else
    return t->ops.connect_endpoints(t, dev, nics);
#endif
}

/// What the core shares with a transport after init: the bootstrap, this PE, the PE count.
inline void share_with_transport(pe_env& e) {
    e.boot = {.version = 1,
              .pg_rank = e.me,
              .pg_size = e.n,
              .mype_node = e.me,
              .npes_node = e.n,
              .allgather = boot_allgather,
              .alltoall = boot_alltoall,
              .barrier = boot_barrier,
              .global_exit = boot_exit,
              .finalize = nullptr,
              .show_info = nullptr,
              .pre_init_ops = nullptr,
              .comm_state = nullptr};
    e.t->boot_handle = &e.boot;
    e.t->my_pe = e.me;
    e.t->n_pes = e.n;
}

/// Init, connect, heap, handles, proxy thread: a PE ready for traffic.
inline void bring_up(pe_env& e, int nics = 1) {
    auto init = load_init();
    CHECK(init(&e.t, nullptr, host_version) == 0 && e.t != nullptr, "nvshmemt_init");
    CHECK(e.t->api_version == abi::interface_version, "api_version %d", e.t->api_version);
    CHECK(e.t->is_successfully_initialized && e.t->n_devices >= 1 && e.t->device_pci_paths != nullptr, "devices");
    share_with_transport(e);
    e.heap = static_cast<std::byte*>(std::aligned_alloc(4096, heap_size));
    std::memset(e.heap, 0, heap_size);
    e.t->heap_base = e.heap;
    for (int pe = 0; pe < e.n; ++pe) {
        abi::pe_info info{};
        info.pe = pe;
        int access = 0;
        CHECK(e.t->ops.can_reach_peer(&access, &info, e.t) == 0 && (access & abi::cap_cpu_write) != 0, "reach");
    }
    CHECK(connect(e.t, nics) == 0, "connect_endpoints");
    CHECK(e.t->ops.get_mem_handle(&e.mine, e.heap, heap_size, e.t, false) == 0, "get_mem_handle");
    e.handles.resize(static_cast<std::size_t>(e.n));
    CHECK(e.boot.allgather(&e.mine, e.handles.data(), sizeof e.mine, &e.boot) == 0, "handle allgather");
    e.bases.resize(static_cast<std::size_t>(e.n));
    const auto base = reinterpret_cast<std::uintptr_t>(e.heap);
    CHECK(e.boot.allgather(&base, e.bases.data(), sizeof base, &e.boot) == 0, "base allgather");
    e.proxy = std::thread([&e] {
        while (!e.stop.load(std::memory_order_relaxed)) (void)e.t->ops.progress(e.t);
    });
}

/// Everything before finalize: quiet, a barrier, the proxy stopped, the heap released.
inline void release_heap(pe_env& e) {
    CHECK(e.t->ops.quiet(e.t, 0, 0) == 0 && e.t->ops.quiet(e.t, 0, 1) == 0, "quiet before teardown");
    e.barrier();  // nobody targets a heap that is going away
    e.stop = true;
    e.proxy.join();
    CHECK(e.t->ops.release_mem_handle(&e.mine, e.t) == 0, "release_mem_handle");
}

inline void tear_down(pe_env& e) {
    release_heap(e);
    CHECK(e.t->ops.finalize(e.t) == 0, "finalize");
    std::free(e.heap);
}

// ---------------------------------------------------------------- the verbs, as the core calls them
inline auto rma(pe_env& e, int op, int pe, std::size_t off, void* local, std::size_t nelems, int elembytes, bool nbi,
                int qp = 0, std::ptrdiff_t src_stride = 1, std::ptrdiff_t dst_stride = 1) -> int {
    abi::rma_verb v{op, nbi ? 1 : 0, 0, nullptr};
    auto r = e.remote(pe, off);
    abi::rma_memdesc l{local, 0, nullptr};
    abi::rma_bytesdesc b{nelems, elembytes, src_stride, dst_stride};
    return e.t->ops.rma(e.t, pe, v, &r, &l, b, qp);
}
inline auto put(pe_env& e, int pe, std::size_t off, const void* src, std::size_t n, bool nbi, int qp = 0) -> int {
    return rma(e, abi::op_put, pe, off, const_cast<void*>(src), n, 1, nbi, qp);
}
inline auto get(pe_env& e, int pe, std::size_t off, void* dst, std::size_t n, bool nbi, int qp = 0) -> int {
    return rma(e, abi::op_get, pe, off, dst, n, 1, nbi, qp);
}
inline auto amo(pe_env& e, int pe, std::size_t off, int code, int elembytes, std::uint64_t val, std::uint64_t cmp = 0,
                void* ret = nullptr, int qp = 0) -> int {
    abi::amo_verb v{code, code >= abi::amo_fetch ? 1 : 0, 1, code == abi::amo_compare_swap ? 1 : 0};
    abi::amo_memdesc m{};
    m.remote_memdesc = e.remote(pe, off);
    m.val = val;
    m.cmp = cmp;
    m.retptr = ret;
    return e.t->ops.amo(e.t, pe, ret, v, &m, abi::amo_bytesdesc{0, elembytes}, qp);
}
inline auto quiet_all(pe_env& e) -> int { return e.t->ops.quiet(e.t, 0, 0) | e.t->ops.quiet(e.t, 0, 1); }

/// Forks `n` PEs running `body(env)` with LOOM_PROVIDER=provider and `env` set; serves their
/// bootstrap; expects each to exit 0 (or, for PEs in `may_die`, anything).
inline void run_pes(int n, const std::string& provider, std::vector<std::pair<std::string, std::string>> env,
                    const std::function<void(pe_env&)>& body, std::vector<int> may_die = {},
                    std::chrono::seconds limit = std::chrono::seconds(120)) {
    std::vector<int> hub;
    std::vector<pid_t> pids;
    for (int pe = 0; pe < n; ++pe) {
        int sv[2];
        ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
        const pid_t pid = ::fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            for (int fd : hub) ::close(fd);
            ::close(sv[0]);
            g_boot_fd = sv[1];
            ::setenv("LOOM_PROVIDER", provider.c_str(), 1);
            for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
            pe_env e;
            e.me = pe;
            e.n = n;
            body(e);
            std::fflush(nullptr);
            ::_exit(0);
        }
        ::close(sv[1]);
        hub.push_back(sv[0]);
        pids.push_back(pid);
    }
    const bool served = serve_bootstrap(hub, limit);
    if (!served)
        for (pid_t p : pids) ::kill(p, SIGKILL);
    for (int fd : hub) ::close(fd);
    for (int pe = 0; pe < n; ++pe) {
        int status = 0;
        ASSERT_EQ(::waitpid(pids[static_cast<std::size_t>(pe)], &status, 0), pids[static_cast<std::size_t>(pe)]);
        if (std::find(may_die.begin(), may_die.end(), pe) != may_die.end()) continue;
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "PE " << pe << " status " << status;
    }
    EXPECT_TRUE(served) << "the bootstrap timed out or saw a malformed request";
}

}  // namespace nvshmem_harness
