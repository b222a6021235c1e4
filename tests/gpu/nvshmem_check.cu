// scripts/gpu-check's NVSHMEM program: two PEs (one process each, started by the script with
// their rank) through NVSHMEM's remote transport — ours, with peer-to-peer disabled — doing
// device-initiated put-with-signal and fetch-adds (through NVSHMEM's proxy thread), host-
// initiated put and get, quiet and barriers; every result checked. Prints "PASS" and exits 0,
// or says what was wrong and exits 1.
//   nvshmem_check RANK UID_FILE
#include <nvshmem.h>
#include <nvshmemx.h>

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

constexpr std::size_t words = 64 * 1024;  // 512 KiB of data
constexpr int adds = 100;

#define FAIL(...)                                                        \
    do {                                                                 \
        std::fprintf(stderr, "nvshmem_check: PE %d: ", nvshmem_my_pe()); \
        std::fprintf(stderr, __VA_ARGS__);                               \
        std::fprintf(stderr, "\n");                                      \
        std::exit(1);                                                    \
    } while (0)

__device__ std::uint64_t value(std::size_t i, int round) {
    return i * 2654435761ULL + static_cast<std::uint64_t>(round);
}

__global__ void fill(std::uint64_t* p, int round) {
    for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < words; i += gridDim.x * blockDim.x)
        p[i] = value(i, round);
}

// PE 0: the data, then its signal, then fetch-adds on PE 1's counter; PE 1: waits for the
// signal and checks the data (the signal must not overtake it).
__global__ void device_traffic(std::uint64_t* data, std::uint64_t* src, std::uint64_t* sig, std::uint64_t* counter,
                               std::uint64_t* fetched, int* bad) {
    const int me = nvshmem_my_pe();
    if (me == 0) {
        nvshmem_putmem_signal(data, src, words * sizeof(std::uint64_t), sig, 1, NVSHMEM_SIGNAL_SET, 1);
        for (int i = 0; i < adds; ++i) fetched[i] = nvshmem_uint64_atomic_fetch_add(counter, 1, 1);
        nvshmem_quiet();
    } else {
        nvshmem_signal_wait_until(sig, NVSHMEM_CMP_EQ, 1);
        for (std::size_t i = 0; i < words; ++i)
            if (data[i] != value(i, 1)) {
                *bad = static_cast<int>(i) + 1;
                return;
            }
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: nvshmem_check RANK UID_FILE\n");
        return 2;
    }
    const int rank = std::atoi(argv[1]);
    const char* uid_file = argv[2];
    if (cudaSetDevice(0) != cudaSuccess) {
        std::fprintf(stderr, "nvshmem_check: no CUDA device\n");
        return 1;
    }
    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    if (rank == 0) {
        nvshmemx_get_uniqueid(&id);
        FILE* f = std::fopen(uid_file, "wb");
        if (f == nullptr || std::fwrite(&id, sizeof id, 1, f) != 1 || std::fclose(f) != 0) return 1;
    } else {
        for (int tries = 0;; ++tries) {
            FILE* f = std::fopen(uid_file, "rb");
            if (f != nullptr && std::fread(&id, sizeof id, 1, f) == 1) {
                std::fclose(f);
                break;
            }
            if (f != nullptr) std::fclose(f);
            if (tries > 600) return 1;
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    }
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    nvshmemx_set_attr_uniqueid_args(rank, 2, &id, &attr);
    if (nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr) != 0) {
        std::fprintf(stderr, "nvshmem_check: nvshmemx_init_attr failed\n");
        return 1;
    }
    const int me = nvshmem_my_pe(), peer = 1 - me;
    auto* data = static_cast<std::uint64_t*>(nvshmem_malloc(words * sizeof(std::uint64_t)));
    auto* src = static_cast<std::uint64_t*>(nvshmem_malloc(words * sizeof(std::uint64_t)));
    auto* host_dst = static_cast<std::uint64_t*>(nvshmem_malloc(words * sizeof(std::uint64_t)));
    auto* sig = static_cast<std::uint64_t*>(nvshmem_calloc(1, sizeof(std::uint64_t)));
    auto* counter = static_cast<std::uint64_t*>(nvshmem_calloc(1, sizeof(std::uint64_t)));
    std::uint64_t* fetched = nullptr;
    int* bad = nullptr;
    if (data == nullptr || src == nullptr || host_dst == nullptr || sig == nullptr || counter == nullptr ||
        cudaMalloc(&fetched, adds * sizeof(std::uint64_t)) != cudaSuccess ||
        cudaMallocManaged(&bad, sizeof(int)) != cudaSuccess)
        FAIL("allocation failed");
    *bad = 0;
    fill<<<64, 256>>>(src, 1);
    cudaDeviceSynchronize();
    nvshmem_barrier_all();

    device_traffic<<<1, 1>>>(data, src, sig, counter, fetched, bad);
    if (cudaDeviceSynchronize() != cudaSuccess) FAIL("device traffic: %s", cudaGetErrorString(cudaGetLastError()));
    if (*bad != 0) FAIL("word %d arrived wrong (or after its signal)", *bad - 1);
    nvshmem_barrier_all();
    std::uint64_t total = 0;
    cudaMemcpy(&total, counter, sizeof total, cudaMemcpyDeviceToHost);
    if (me == 1 && total != adds)
        FAIL("counter %llu after %d fetch-adds", static_cast<unsigned long long>(total), adds);
    if (me == 0) {
        std::vector<std::uint64_t> f(adds);
        cudaMemcpy(f.data(), fetched, adds * sizeof(std::uint64_t), cudaMemcpyDeviceToHost);
        for (int i = 0; i < adds; ++i)
            if (f[static_cast<std::size_t>(i)] != static_cast<std::uint64_t>(i))
                FAIL("fetch-add %d returned %llu", i, static_cast<unsigned long long>(f[static_cast<std::size_t>(i)]));
    }

    // Host-initiated: put into the peer, quiet, barrier; then get it back from the peer.
    fill<<<64, 256>>>(src, 2 + me);
    cudaDeviceSynchronize();
    nvshmem_putmem(host_dst, src, words * sizeof(std::uint64_t), peer);
    nvshmem_quiet();
    nvshmem_barrier_all();
    std::vector<std::uint64_t> got(words);
    cudaMemcpy(got.data(), host_dst, words * sizeof(std::uint64_t), cudaMemcpyDeviceToHost);
    for (std::size_t i = 0; i < words; ++i)
        if (got[i] != i * 2654435761ULL + static_cast<std::uint64_t>(2 + peer)) FAIL("host put word %zu", i);
    nvshmem_getmem(data, host_dst, words * sizeof(std::uint64_t), peer);  // what we put there
    cudaMemcpy(got.data(), data, words * sizeof(std::uint64_t), cudaMemcpyDeviceToHost);
    for (std::size_t i = 0; i < words; ++i)
        if (got[i] != i * 2654435761ULL + static_cast<std::uint64_t>(2 + me)) FAIL("host get word %zu", i);
    nvshmem_barrier_all();

    nvshmem_free(data);
    nvshmem_free(src);
    nvshmem_free(host_dst);
    nvshmem_free(sig);
    nvshmem_free(counter);
    nvshmem_finalize();
    std::printf("nvshmem_check: PE %d: PASS\n", me);
    return 0;
}
