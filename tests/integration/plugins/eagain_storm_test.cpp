// FI_EAGAIN storms: the providers' transmit queues shrunk to two entries (main sets
// FI_TCP_TX_SIZE, FI_OFI_RXM_TX_SIZE, FI_OFI_RXM_MSG_TX_SIZE and FI_SHM_TX_SIZE before libfabric
// reads its environment) and the completion queue to one entry, a full pool of sends and receives of eager and
// rendezvous sizes posted at once: submissions are refused with FI_EAGAIN and deferred, and every request still
// completes, byte-exact, without an error and within the deadline (nothing spins without bound).
#include "engine_pair.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <string>

using namespace engine_test;

namespace {

class EagainStorm : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(EagainStorm, a_full_pool_of_requests_completes_through_refusals) {
    const std::string provider = GetParam();
    auto nics = nics_for(provider.c_str(), provider == "shm" ? "" : "lo");
    ASSERT_FALSE(nics.empty()) << provider;
    lp::config cfg;
    cfg.cq_size = 1;
    pair_on_one_engine p({nics[0]}, cfg);
    ASSERT_TRUE(p.eng && p.s && p.r);

    constexpr int count = lp::recv_pool_size;
    const std::size_t eager = p.eng->eager_max();
    auto size_of = [&](int i) -> std::size_t { return i % 2 == 0 ? eager / 2 + i : eager * 4 + i; };
    std::array<std::vector<std::byte>, count> src, dst;
    std::array<lp::recv_request*, count> rq{};
    std::array<lp::send_request*, count> sq{};
    std::lock_guard lock(p.eng->mutex());
    for (int i = 0; i < count; ++i) {
        const std::size_t n = size_of(i);
        src[i].resize(n);
        dst[i].resize(n);
        for (std::size_t b = 0; b < n; ++b) src[i][b] = pattern(b, static_cast<std::size_t>(i));
        void* d = dst[i].data();
        int tag = i;
        auto r = p.eng->irecv(*p.r, 1, &d, &n, &tag, nullptr);
        ASSERT_TRUE(r && *r != nullptr) << "receive " << i;
        rq[i] = *r;
    }
    for (int i = 0; i < count; ++i) {
        auto s = p.eng->isend(*p.s, src[i].data(), src[i].size(), static_cast<std::uint32_t>(i), nullptr);
        ASSERT_TRUE(s && *s != nullptr) << "send " << i;
        sq[i] = *s;
    }
    std::array<bool, count> rdone{}, sdone{};
    int left = 2 * count;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (left > 0 && std::chrono::steady_clock::now() < deadline) {
        for (int i = 0; i < count; ++i) {
            std::size_t got = 0;
            if (!rdone[i]) {
                ASSERT_EQ(p.eng->test(*rq[i], rdone[i], &got, 1), loom::errc::success) << "receive " << i;
                if (rdone[i]) {
                    --left;
                    EXPECT_EQ(got, src[i].size());
                    EXPECT_EQ(dst[i], src[i]) << "receive " << i << " of " << src[i].size() << " bytes";
                }
            }
            if (!sdone[i]) {
                ASSERT_EQ(p.eng->test(*sq[i], sdone[i], &got, 1), loom::errc::success) << "send " << i;
                if (sdone[i]) --left;
            }
        }
    }
    EXPECT_EQ(left, 0) << "requests still pending at the deadline";
    EXPECT_GT(p.eng->stats().eagain_retries, 0U) << "the small queues never refused a submission";
    std::printf("[storm] %s: %llu submissions refused with FI_EAGAIN and retried\n", provider.c_str(),
                static_cast<unsigned long long>(p.eng->stats().eagain_retries));
}

INSTANTIATE_TEST_SUITE_P(Providers, EagainStorm, ::testing::Values("tcp", "tcp;ofi_rxm", "shm"), [](const auto& info) {
    std::string n = info.param;
    for (auto& c : n)
        if (c == ';') c = '_';
    return n;
});

int main(int argc, char** argv) {
    for (const char* name : {"FI_TCP_TX_SIZE", "FI_OFI_RXM_TX_SIZE", "FI_OFI_RXM_MSG_TX_SIZE", "FI_SHM_TX_SIZE"})
        ::setenv(name, "2", 1);
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
