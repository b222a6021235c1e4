// tools/bench/launch_mpi.cpp — the MPI launcher (mpirun): rank/size from MPI_COMM_WORLD and a
// channel over MPI point-to-point messages, so that run_rank and the paths are the same code as
// under --local. Compiled without MPI (no libopenmpi-dev at configure time) it only explains
// that and fails.
#include "launch.hpp"

#include <cstdio>
#include <cstdlib>

#ifdef LOOM_BENCH_HAVE_MPI
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <deque>
#include <vector>
#endif

namespace loom::bench {

auto started_by_mpirun() -> bool { return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr; }

#ifdef LOOM_BENCH_HAVE_MPI

auto mpi_available() -> bool { return true; }

namespace {

/// A byte stream to `peer` over MPI messages on a private communicator: every send is one
/// nonblocking message with its own copy of the bytes (so both ranks may send before receiving,
/// as they do over the socketpair, whatever the eager limit); recv takes bytes from the
/// messages in arrival order, however the peer split them.
class mpi_channel final : public channel {
public:
    /// `initiators`: the communicator of every pair's rank 0, ranked by pair (MPI_COMM_NULL on
    /// the other ranks).
    mpi_channel(MPI_Comm comm, int peer, MPI_Comm initiators) : comm_(comm), peer_(peer), initiators_(initiators) {}
    mpi_channel(const mpi_channel&) = delete;
    auto operator=(const mpi_channel&) -> mpi_channel& = delete;
    ~mpi_channel() override { drain(); }

    [[nodiscard]] auto send(const void* p, std::size_t n) -> bool override {
        if (n == 0) return true;
        if (n > static_cast<std::size_t>(INT_MAX)) return false;
        auto& o = out_.emplace_back();
        o.bytes.resize(n);
        std::memcpy(o.bytes.data(), p, n);
        if (MPI_Isend(o.bytes.data(), static_cast<int>(n), MPI_BYTE, peer_, tag, comm_, &o.request) != MPI_SUCCESS) {
            out_.pop_back();
            return false;
        }
        reap();
        return true;
    }

    [[nodiscard]] auto recv(void* p, std::size_t n) -> bool override {
        auto* c = static_cast<std::byte*>(p);
        while (n > 0) {
            if (in_pos_ == in_.size()) {
                MPI_Status st;
                int count = 0;
                if (MPI_Probe(peer_, tag, comm_, &st) != MPI_SUCCESS ||
                    MPI_Get_count(&st, MPI_BYTE, &count) != MPI_SUCCESS || count <= 0)
                    return false;
                in_.resize(static_cast<std::size_t>(count));
                in_pos_ = 0;
                if (MPI_Recv(in_.data(), count, MPI_BYTE, peer_, tag, comm_, MPI_STATUS_IGNORE) != MPI_SUCCESS)
                    return false;
            }
            const std::size_t k = std::min(n, in_.size() - in_pos_);
            std::memcpy(c, in_.data() + in_pos_, k);
            in_pos_ += k;
            c += k;
            n -= k;
        }
        reap();
        return true;
    }

    [[nodiscard]] auto barrier() -> bool override { return MPI_Barrier(comm_) == MPI_SUCCESS; }

    [[nodiscard]] auto gather_initiators(const std::vector<double>& mine, std::vector<std::vector<double>>& all)
        -> bool override {
        all.clear();
        if (initiators_ == MPI_COMM_NULL || mine.size() > static_cast<std::size_t>(INT_MAX)) return false;
        int me = 0, n = 0;
        if (MPI_Comm_rank(initiators_, &me) != MPI_SUCCESS || MPI_Comm_size(initiators_, &n) != MPI_SUCCESS)
            return false;
        std::vector<double> flat(me == 0 ? mine.size() * static_cast<std::size_t>(n) : 0);
        const int count = static_cast<int>(mine.size());
        if (MPI_Gather(mine.data(), count, MPI_DOUBLE, flat.data(), count, MPI_DOUBLE, 0, initiators_) != MPI_SUCCESS)
            return false;
        if (me == 0)
            for (int k = 0; k < n; ++k)
                all.emplace_back(flat.begin() + static_cast<std::ptrdiff_t>(k) * count,
                                 flat.begin() + static_cast<std::ptrdiff_t>(k + 1) * count);
        return true;
    }

    auto abandon(int rc) -> int override {
        // The peer may be blocked in MPI_Probe/MPI_Barrier for this rank: end the whole job.
        std::fflush(nullptr);
        MPI_Abort(MPI_COMM_WORLD, rc);
        return rc;
    }

    /// Completes every send still in flight (before MPI_Finalize).
    void drain() {
        for (auto& o : out_) MPI_Wait(&o.request, MPI_STATUS_IGNORE);
        out_.clear();
    }

private:
    static constexpr int tag = 0x4c4d;  // "LM"
    struct outgoing {
        MPI_Request request{MPI_REQUEST_NULL};
        std::vector<std::byte> bytes;
    };
    /// Frees the copies of completed sends (in order; later ones wait for the next call).
    void reap() {
        while (!out_.empty()) {
            int done = 0;
            if (MPI_Test(&out_.front().request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done == 0) return;
            out_.pop_front();
        }
    }
    MPI_Comm comm_;
    int peer_;
    MPI_Comm initiators_;
    std::deque<outgoing> out_;  // deque: elements never move, MPI holds their buffers
    std::vector<std::byte> in_;
    std::size_t in_pos_{0};
};

}  // namespace

auto run_mpi(int& argc, char**& argv, const rank_body& body) -> int {
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        std::fprintf(stderr, "loom-bench: MPI_Init failed\n");
        return 1;
    }
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2 || size % 2 != 0) {
        // The operations are point-to-point: every rank needs a partner. Every rank sees the
        // same size, so every rank leaves here alike.
        if (rank == 0)
            std::fprintf(stderr,
                         "loom-bench: the MPI launcher needs an even number of ranks (pairs: rank r with "
                         "rank r + size/2), not %d\n",
                         size);
        MPI_Finalize();
        return 2;
    }
    const int pairs = size / 2;
    const int pair = rank % pairs, role = rank / pairs;
    // One communicator per pair (private: no other MPI traffic can match the channel's tag);
    // within it the initiator (first half of the job) is rank 0.
    MPI_Comm comm = MPI_COMM_NULL;
    if (MPI_Comm_split(MPI_COMM_WORLD, pair, role, &comm) != MPI_SUCCESS) {
        std::fprintf(stderr, "loom-bench: rank %d: MPI_Comm_split failed\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
        return 1;
    }
    // Every pair's initiator, ranked by pair: the figures of all pairs meet at pair 0's.
    MPI_Comm initiators = MPI_COMM_NULL;
    if (MPI_Comm_split(MPI_COMM_WORLD, role == 0 ? 0 : MPI_UNDEFINED, pair, &initiators) != MPI_SUCCESS) {
        std::fprintf(stderr, "loom-bench: rank %d: MPI_Comm_split failed\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
        return 1;
    }
    int rc = 0;
    {
        mpi_channel ch(comm, 1 - role, initiators);
        rc = body(ch, role, size, pair);
        ch.drain();
    }
    std::fflush(nullptr);
    if (initiators != MPI_COMM_NULL) MPI_Comm_free(&initiators);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return rc;
}

#else  // built without MPI

auto mpi_available() -> bool { return false; }

auto run_mpi(int&, char**&, const rank_body&) -> int {
    std::fprintf(stderr,
                 "loom-bench: this build has no MPI launcher (CMake found no MPI: install libopenmpi-dev "
                 "and openmpi-bin, e.g. with ./scripts/setup, and reconfigure); use --local 2\n");
    return 2;
}

#endif

}  // namespace loom::bench
