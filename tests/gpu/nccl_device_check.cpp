// scripts/gpu-check's NCCL plugin program: the built libnccl-net-loom.so (ncclNetPlugin_v6, as
// NCCL loads it) with CUDA device buffers in one process (a connection to itself): CUDA
// registration, a DMA-BUF registration of device memory where the driver exports one, eager and
// rendezvous sizes, and iflush of what was received; every byte checked through cudaMemcpy.
// Prints "PASS" and exits 0; exits 1 with the reason; 77 when the provider takes no CUDA pointers.
//   nccl_device_check PLUGIN.so
#include <loom/nccl/net_abi.hpp>

#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace nn = loom::nccl_abi;

namespace {

void logger(int level, unsigned long, const char* file, int line, const char* fmt, ...) {
    if (level > nn::log_warn) return;
    std::va_list ap;
    va_start(ap, fmt);
    std::fprintf(stderr, "[plugin %s:%d] ", file, line);
    std::vfprintf(stderr, fmt, ap);
    std::fprintf(stderr, "\n");
    va_end(ap);
}

#define FAIL(...)                                    \
    do {                                             \
        std::fprintf(stderr, "nccl_device_check: "); \
        std::fprintf(stderr, __VA_ARGS__);           \
        std::fprintf(stderr, "\n");                  \
        std::exit(1);                                \
    } while (0)

void wait(const nn::net_v6& n, void* req, int* size) {
    int done = 0;
    for (long spins = 0; !done; ++spins) {
        if (n.test(req, &done, size) != nn::success) FAIL("test failed");
        if (spins > 200000000L) FAIL("a request never completed");
    }
}

/// Sends `len` bytes of a device buffer to ourselves, checks them and flushes them.
void transfer(const nn::net_v6& n, void* sc, void* rc, std::byte* tx, std::byte* rx, void* smh, void* rmh, int len,
              int seed) {
    std::vector<unsigned char> pattern(static_cast<std::size_t>(len));
    for (int i = 0; i < len; ++i)
        pattern[static_cast<std::size_t>(i)] = static_cast<unsigned char>((i * 7 + seed) & 0xff);
    cudaMemcpy(tx, pattern.data(), pattern.size(), cudaMemcpyHostToDevice);
    cudaMemset(rx, 0, pattern.size());
    void* rreq = nullptr;
    void* sreq = nullptr;
    void* data = rx;
    int size = len, tag = 1;
    if (n.irecv(rc, 1, &data, &size, &tag, &rmh, &rreq) != nn::success || rreq == nullptr) FAIL("irecv");
    while (sreq == nullptr)
        if (n.isend(sc, tx, len, 1, smh, &sreq) != nn::success) FAIL("isend");
    int got = 0;
    wait(n, sreq, nullptr);
    wait(n, rreq, &got);
    if (got != len) FAIL("%d bytes arrived of %d", got, len);
    void* freq = nullptr;
    if (n.iflush(rc, 1, &data, &size, &rmh, &freq) != nn::success) FAIL("iflush");
    if (freq != nullptr) wait(n, freq, nullptr);
    std::vector<unsigned char> back(pattern.size());
    cudaMemcpy(back.data(), rx, back.size(), cudaMemcpyDeviceToHost);
    for (std::size_t i = 0; i < back.size(); ++i)
        if (back[i] != pattern[i]) FAIL("byte %zu of %d differs", i, len);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) return 2;
    void* lib = ::dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) FAIL("dlopen: %s", ::dlerror());
    auto* n = static_cast<const nn::net_v6*>(::dlsym(lib, "ncclNetPlugin_v6"));
    if (n == nullptr) FAIL("no ncclNetPlugin_v6");
    if (cudaSetDevice(0) != cudaSuccess || cudaFree(nullptr) != cudaSuccess) FAIL("no CUDA device");
    int ndev = 0;
    if (n->init(logger) != nn::success || n->devices(&ndev) != nn::success || ndev < 1) FAIL("init / devices");
    nn::properties_v6 props{};
    if (n->getProperties(0, &props) != nn::success) FAIL("getProperties");
    if ((props.ptrSupport & nn::ptr_cuda) == 0) {
        std::printf("nccl_device_check: device 0 (%s) takes no CUDA pointers on this provider: skipped\n", props.name);
        return 77;
    }
    char handle[nn::handle_maxsize] = {};
    void *lc = nullptr, *sc = nullptr, *rc = nullptr;
    if (n->listen(0, handle, &lc) != nn::success) FAIL("listen");
    while (sc == nullptr || rc == nullptr) {
        if (sc == nullptr && n->connect(0, handle, &sc) != nn::success) FAIL("connect");
        if (rc == nullptr && n->accept(lc, &rc) != nn::success) FAIL("accept");
    }
    constexpr std::size_t bytes = 8 << 20;
    std::byte *tx = nullptr, *rx = nullptr;
    if (cudaMalloc(&tx, bytes) != cudaSuccess || cudaMalloc(&rx, bytes) != cudaSuccess) FAIL("cudaMalloc");
    void *smh = nullptr, *rmh = nullptr;
    if (n->regMr(sc, tx, static_cast<int>(bytes), nn::ptr_cuda, &smh) != nn::success ||
        n->regMr(rc, rx, static_cast<int>(bytes), nn::ptr_cuda, &rmh) != nn::success)
        FAIL("regMr of CUDA memory");
    for (int len : {8, 4096, 1 << 20, 8 << 20}) transfer(*n, sc, rc, tx, rx, smh, rmh, len, len);
    if (n->deregMr(rc, rmh) != nn::success) FAIL("deregMr");
    // DMA-BUF: the receive buffer exported by the driver, registered through regMrDmaBuf.
    int dmabuf_fd = -1;
    const CUresult cr = cuMemGetHandleForAddressRange(&dmabuf_fd, reinterpret_cast<CUdeviceptr>(rx), bytes,
                                                      CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
    if ((props.ptrSupport & nn::ptr_dmabuf) != 0 && cr == CUDA_SUCCESS) {
        if (n->regMrDmaBuf(rc, rx, bytes, nn::ptr_cuda, 0, dmabuf_fd, &rmh) != nn::success) FAIL("regMrDmaBuf");
        for (int len : {4096, 4 << 20}) transfer(*n, sc, rc, tx, rx, smh, rmh, len, len + 1);
        if (n->deregMr(rc, rmh) != nn::success) FAIL("deregMr (DMA-BUF)");
        ::close(dmabuf_fd);
        std::printf("nccl_device_check: DMA-BUF registration checked\n");
    } else {
        std::printf("nccl_device_check: no DMA-BUF here (plugin %s, driver %d): that part skipped\n",
                    (props.ptrSupport & nn::ptr_dmabuf) != 0 ? "offers it" : "does not offer it", static_cast<int>(cr));
    }
    if (n->deregMr(sc, smh) != nn::success || n->closeSend(sc) != nn::success || n->closeRecv(rc) != nn::success ||
        n->closeListen(lc) != nn::success)
        FAIL("teardown");
    std::printf("nccl_device_check: PASS\n");
    return 0;
}
