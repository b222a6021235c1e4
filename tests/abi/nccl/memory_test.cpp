// Memory registrations: DMA-BUF (memfd) carried eager and by rendezvous, byte-exact.
#include "harness_support.hpp"

namespace nccl_harness {
namespace {

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
                CHECK(wait(a, post_send(a, sc, m.map, lens[i], static_cast<int>(i), mh), nullptr) == 0, "send %zu",
                      lens[i]);
            }
            await_peer(p.to_sender[0]);
            CHECK(a.dereg_mr(sc, mh) == 0, "deregMr");
            CHECK(a.close_send(sc) == 0, "close");
        });
}

INSTANTIATE_TEST_SUITE_P(memory, nccl_memory,
                         ::testing::Values(param{"shm", 12, "LOOM_FLUSH=1"}, param{"tcp", 11, "LOOM_FLUSH=1"},
                                           param{"tcp;ofi_rxm", 12, "LOOM_FLUSH=auto"}),
                         name_of);

}  // namespace
}  // namespace nccl_harness
