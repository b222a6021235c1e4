// Virtual devices: every size over two rails, byte-exact.
#include "harness_support.hpp"

namespace nccl_harness {
namespace {

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
        CHECK(a.get_props(vd, p) == 0 && p.name.find('+') != std::string::npos, "vdevice properties '%s'",
              p.name.c_str());
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

}  // namespace
}  // namespace nccl_harness
