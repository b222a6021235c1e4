// Named receive contexts and scalable endpoints. The encoding of receive-context addresses
// is checked without a provider; on sockets (the provider here with scalable endpoints and
// FI_NAMED_RX_CTX) messages addressed with receive_context_address(peer, i) are shown to
// land on receive context i and nowhere else, from the scalable endpoint itself and from an
// ordinary endpoint, and the context/scalable-endpoint lifetime rules are exercised. Checks
// that must happen before the provider are observed by counting the domain's native calls.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <climits>
#include <loom/scalable_endpoint.hpp>
#include <string>
#include <vector>

#include "core_support.hpp"
#include "ops_swap.hpp"

using namespace core_test;
using namespace std::chrono_literals;

namespace {

constexpr auto named_caps = loom::capability::msg | loom::capability::tagged | loom::capability::named_rx_ctx;
constexpr std::uint64_t all_ones = ~std::uint64_t{0};

auto encode(std::uint64_t base, int index, int bits) -> loom::result<loom::fabric_addr> {
    return loom::address_vector::encode_receive_context(loom::fabric_addr{base}, index, bits);
}

// ================================================================ encoding (no provider)
TEST(core_named_rx_encoding, zero_bits_keep_the_base_for_index_zero_only) {
    auto a = encode(5, 0, 0);
    ASSERT_TRUE(a);
    EXPECT_EQ(a->get(), 5u);
    EXPECT_EQ(outcome(encode(5, 1, 0)), "invalid_argument");
    EXPECT_EQ(outcome(encode(0, 0, 0)), "ok");
}

TEST(core_named_rx_encoding, matches_fi_rx_addr) {
    for (int bits : {1, 2, 8, 16, 31, 32, 63}) {
        for (int index : {0, 1, (bits >= 31 ? INT_MAX : (1 << bits) - 1)}) {
            const std::uint64_t base = 0x1234 & ((std::uint64_t{1} << (64 - bits)) - 1);
            auto a = encode(base, index, bits);
            ASSERT_TRUE(a) << "bits " << bits << " index " << index << ": " << outcome(a.error());
            EXPECT_EQ(a->get(), ::fi_rx_addr(base, index, bits)) << "bits " << bits << " index " << index;
            EXPECT_EQ(a->get() >> (64 - bits), static_cast<std::uint64_t>(index));
        }
    }
    // 64 bits: the index is the whole address; the base must be 0.
    auto whole = encode(0, 7, 64);
    ASSERT_TRUE(whole);
    EXPECT_EQ(whole->get(), 7u);
}

TEST(core_named_rx_encoding, rejects_bad_widths_indices_overlaps_and_reserved_values) {
    EXPECT_EQ(outcome(encode(1, 0, -1)), "invalid_argument");
    EXPECT_EQ(outcome(encode(1, 0, 65)), "invalid_argument");
    EXPECT_EQ(outcome(encode(1, -1, 4)), "invalid_argument");
    EXPECT_EQ(outcome(encode(1, 16, 4)), "invalid_argument") << "index does not fit 4 bits";
    EXPECT_EQ(outcome(encode(1, 15, 4)), "ok");
    EXPECT_EQ(outcome(encode(1, 2, 1)), "invalid_argument");
    // Base bits inside the reserved top bits.
    EXPECT_EQ(outcome(encode(std::uint64_t{1} << 63, 0, 1)), "invalid_argument");
    EXPECT_EQ(outcome(encode(std::uint64_t{1} << 60, 1, 4)), "invalid_argument");
    EXPECT_EQ(outcome(encode(std::uint64_t{1} << 59, 1, 4)), "ok");
    EXPECT_EQ(outcome(encode(1, 7, 64)), "invalid_argument");
    // Reserved values: FI_ADDR_UNSPEC / FI_ADDR_NOTAVAIL as base, or as the result.
    EXPECT_EQ(outcome(encode(FI_ADDR_UNSPEC, 0, 0)), "invalid_argument");
    EXPECT_EQ(outcome(encode(FI_ADDR_NOTAVAIL, 0, 2)), "invalid_argument");
    EXPECT_EQ(outcome(encode(all_ones >> 1, 1, 1)), "invalid_argument") << "result would be FI_ADDR_NOTAVAIL";
    EXPECT_EQ(outcome(encode(all_ones >> 1, 0, 1)), "ok");
}

TEST(core_named_rx_encoding, closed_vector_is_bad_state) {
    loom::address_vector av;
    EXPECT_EQ(outcome(av.receive_context_address(loom::fabric_addr{0}, 0)), "bad_state");
    EXPECT_FALSE(av.contains(loom::fabric_addr{0}));
}

// ================================================================ native-call counting
/// Counts av_open and scalable_ep calls of a domain (copy of its fi_ops_domain).
class domain_spy {
public:
    explicit domain_spy(loom::domain& d) : ops_(d.native()->ops) {
        ops_.copy().av_open = &domain_spy::av_open;
        ops_.copy().scalable_ep = &domain_spy::scalable_ep;
        active_ = this;
    }
    domain_spy(const domain_spy&) = delete;
    auto operator=(const domain_spy&) -> domain_spy& = delete;
    ~domain_spy() { active_ = nullptr; }
    std::atomic<int> av_opens{0};
    std::atomic<int> sep_opens{0};

private:
    static auto av_open(::fid_domain* d, ::fi_av_attr* a, ::fid_av** av, void* ctx) -> int {
        active_->av_opens.fetch_add(1);
        return active_->ops_.provider()->av_open(d, a, av, ctx);
    }
    static auto scalable_ep(::fid_domain* d, ::fi_info* i, ::fid_ep** ep, void* ctx) -> int {
        active_->sep_opens.fetch_add(1);
        return active_->ops_.provider()->scalable_ep(d, i, ep, ctx);
    }
    loom_test::ops_swap<::fi_ops_domain> ops_;
    static inline domain_spy* active_ = nullptr;
};

// ================================================================ sockets: scalable endpoints
constexpr int rx_count = 3;
constexpr int tx_count = 2;
constexpr int ctx_bits = 2;

/// A scalable endpoint with its contexts, each with its own CQ; declared so that contexts
/// close first, then the scalable endpoint, then the queues and vectors.
struct sep_stack {
    loom::fabric_info info;
    loom::fabric fabric;
    loom::domain domain;
    loom::address_vector av;
    loom::completion_queue tx_cq;
    std::array<loom::completion_queue, rx_count> rx_cq;
    loom::scalable_endpoint sep;
    std::array<loom::endpoint, tx_count> tx;
    std::array<loom::endpoint, rx_count> rx;
    loom::fabric_addr self{loom::fabric_addrs::unspecified};
};

auto open_sep(sep_stack& s) -> std::string {
    if (auto err = open_domain("sockets", named_caps, s); !err.empty()) return err;
    auto av = loom::address_vector::create(s.domain, {.rx_ctx_bits = ctx_bits});
    if (!av) return "av: " + outcome(av.error());
    s.av = std::move(*av);
    auto cq = loom::completion_queue::create(s.domain, {.size = 64});
    if (!cq) return "cq: " + outcome(cq.error());
    s.tx_cq = std::move(*cq);
    for (auto& q : s.rx_cq) {
        auto c = loom::completion_queue::create(s.domain, {.size = 64});
        if (!c) return "cq: " + outcome(c.error());
        q = std::move(*c);
    }
    auto sep = loom::scalable_endpoint::create(s.domain, s.info, {.tx_contexts = tx_count, .rx_contexts = rx_count});
    if (!sep) return "scalable_endpoint: " + outcome(sep.error());
    s.sep = std::move(*sep);
    if (auto r = s.sep.bind_av(s.av); !r) return "bind_av: " + outcome(r);
    for (int i = 0; i < tx_count; ++i) {
        auto t = s.sep.tx_context(i);
        if (!t) return "tx_context: " + outcome(t.error());
        s.tx[i] = std::move(*t);
        if (auto r = s.tx[i].bind_cq(s.tx_cq, loom::cq_bind::transmit); !r) return "tx bind_cq: " + outcome(r);
        if (auto r = s.sep.enable_context(s.tx[i]); !r) return "enable tx: " + outcome(r);
    }
    for (int i = 0; i < rx_count; ++i) {
        auto r0 = s.sep.rx_context(i);
        if (!r0) return "rx_context: " + outcome(r0.error());
        s.rx[i] = std::move(*r0);
        if (auto r = s.rx[i].bind_cq(s.rx_cq[i], loom::cq_bind::recv); !r) return "rx bind_cq: " + outcome(r);
        if (auto r = s.sep.enable_context(s.rx[i]); !r) return "enable rx: " + outcome(r);
    }
    if (auto r = s.sep.enable(); !r) return "enable: " + outcome(r);
    auto me = s.sep.name();
    if (!me) return "name: " + outcome(me.error());
    auto self = s.av.insert(*me);
    if (!self) return "av insert: " + outcome(self.error());
    s.self = *self;
    return {};
}

class core_named_rx : public ::testing::Test {
protected:
    void SetUp() override {
        const auto err = open_sep(s_);
        if (err.rfind("find_info", 0) == 0) GTEST_SKIP() << "sockets with named receive contexts unavailable";
        ASSERT_TRUE(err.empty()) << err;
    }

    /// Posts one receive per receive context, sends `index` a pattern from `sender` through
    /// `dest`, and checks that exactly context `index` got it.
    void deliver_to(loom::endpoint& sender, loom::completion_queue& sender_cq, loom::fabric_addr dest, int index,
                    std::uint64_t seed) {
        std::array<std::byte, 40> out{};
        loom_test::fill_pattern(out, seed);
        loom::request_context sctx;
        loom_test::progress tx_prog(sender_cq);
        ASSERT_EQ(outcome(tx_prog.retry([&] { return sender.send(out, dest, nullptr, &sctx); }, 2s)), "ok");
        (void)completed(tx_prog, &sctx);
        loom_test::progress rx_prog(s_.rx_cq[index]);
        auto ev = completed(rx_prog, &rctx_[index]);
        EXPECT_EQ(ev.bytes_transferred, out.size()) << "context " << index;
        EXPECT_EQ(in_[index], out) << "context " << index;
        for (int j = 0; j < rx_count; ++j) {
            if (j == index) continue;
            EXPECT_FALSE(next_event(s_.rx_cq[j], 60ms).has_value())
                << "a message for context " << index << " completed on context " << j;
        }
    }
    void post_all() {
        for (int i = 0; i < rx_count; ++i) {
            in_[i] = {};
            ASSERT_EQ(outcome(s_.rx[i].recv(in_[i], loom::fabric_addrs::unspecified, nullptr, &rctx_[i])), "ok");
        }
    }

    // Receive storage first: destroyed after the contexts that may still reference it.
    std::array<std::array<std::byte, 40>, rx_count> in_{};
    std::array<loom::request_context, rx_count> rctx_{};
    sep_stack s_;
};

TEST_F(core_named_rx, contexts_are_endpoints_of_the_domain) {
    EXPECT_TRUE(s_.sep.valid());
    EXPECT_TRUE(s_.sep.enabled());
    EXPECT_EQ(s_.sep.tx_context_count(), static_cast<std::size_t>(tx_count));
    EXPECT_EQ(s_.sep.rx_context_count(), static_cast<std::size_t>(rx_count));
    EXPECT_EQ(s_.sep.open_contexts(), tx_count + rx_count);
    EXPECT_TRUE(s_.sep.capabilities().any(loom::capability::named_rx_ctx));
    for (auto& e : s_.tx) {
        EXPECT_TRUE(e.enabled());
        EXPECT_TRUE(e.belongs_to(s_.domain));
        EXPECT_EQ(e.type(), loom::endpoint_types::rdm);
        EXPECT_GT(e.iov_limits().tx, 0u);
    }
    for (auto& e : s_.rx) {
        EXPECT_TRUE(e.enabled());
        EXPECT_TRUE(e.belongs_to(s_.domain));
        EXPECT_GT(e.iov_limits().rx, 0u);
        EXPECT_EQ(e.iov_limits().tx, 0u) << "a receive context has no transmit attributes";
    }
    EXPECT_EQ(s_.av.receive_context_bits(), ctx_bits);
}

TEST_F(core_named_rx, messages_land_on_the_named_context_only) {
    ASSERT_NO_FATAL_FAILURE(post_all());
    // Out of order, from both transmit contexts.
    for (auto [index, sender] : {std::pair{1, 0}, std::pair{2, 1}, std::pair{0, 0}}) {
        auto dest = s_.av.receive_context_address(s_.self, index);
        ASSERT_TRUE(dest) << outcome(dest.error());
        ASSERT_NO_FATAL_FAILURE(deliver_to(s_.tx[sender], s_.tx_cq, *dest, index, 100 + index));
    }
}

TEST_F(core_named_rx, an_ordinary_endpoint_reaches_a_named_context) {
    // A regular RDM endpoint with its own vector (same reserved width) sends to context 2.
    auto av2 = loom::address_vector::create(s_.domain, {.rx_ctx_bits = ctx_bits});
    ASSERT_TRUE(av2) << outcome(av2.error());
    auto cq2 = loom::completion_queue::create(s_.domain, {.size = 16});
    ASSERT_TRUE(cq2);
    auto ep2 = loom::endpoint::create(s_.domain, s_.info);
    ASSERT_TRUE(ep2) << outcome(ep2.error());
    ASSERT_EQ(outcome(ep2->bind_cq(*cq2, loom::cq_bind::transmit | loom::cq_bind::recv)), "ok");
    ASSERT_EQ(outcome(ep2->bind_av(*av2)), "ok");
    ASSERT_EQ(outcome(ep2->enable()), "ok");
    auto sep_name = s_.sep.name();
    ASSERT_TRUE(sep_name);
    auto base = av2->insert(*sep_name);
    ASSERT_TRUE(base);
    ASSERT_NO_FATAL_FAILURE(post_all());
    auto dest = av2->receive_context_address(*base, 2);
    ASSERT_TRUE(dest) << outcome(dest.error());
    ASSERT_NO_FATAL_FAILURE(deliver_to(*ep2, *cq2, *dest, 2, 202));
    // The base address itself is context 0.
    ASSERT_NO_FATAL_FAILURE(deliver_to(*ep2, *cq2, *base, 0, 203));
}

TEST_F(core_named_rx, receive_context_address_checks_the_vector) {
    auto ok = s_.av.receive_context_address(s_.self, 3);
    ASSERT_TRUE(ok) << outcome(ok.error());
    EXPECT_EQ(ok->get(), ::fi_rx_addr(s_.self.get(), 3, ctx_bits));
    EXPECT_EQ(outcome(s_.av.receive_context_address(s_.self, 4)), "invalid_argument");
    EXPECT_EQ(outcome(s_.av.receive_context_address(s_.self, -1)), "invalid_argument");
    EXPECT_EQ(outcome(s_.av.receive_context_address(loom::fabric_addrs::unspecified, 0)), "invalid_argument");
    const loom::fabric_addr stranger{s_.self.get() + 1000};
    EXPECT_EQ(outcome(s_.av.receive_context_address(stranger, 1)), "invalid_argument") << "not from this vector";
    EXPECT_EQ(outcome(s_.av.receive_context_address(*ok, 1)), "invalid_argument") << "already encoded";
    // A handle of another vector is not a base of this one.
    auto av0 = loom::address_vector::create(s_.domain);
    ASSERT_TRUE(av0);
    auto name = s_.sep.name();
    ASSERT_TRUE(name);
    auto h0 = av0->insert(*name);
    ASSERT_TRUE(h0);
    auto same = av0->receive_context_address(*h0, 0);
    ASSERT_TRUE(same) << outcome(same.error());
    EXPECT_EQ(*same, *h0) << "zero reserved bits keep the base";
    EXPECT_EQ(outcome(av0->receive_context_address(*h0, 1)), "invalid_argument");
    ASSERT_EQ(outcome(av0->remove(*h0)), "ok");
    EXPECT_EQ(outcome(av0->receive_context_address(*h0, 0)), "invalid_argument") << "removed handle";
}

TEST_F(core_named_rx, close_order_and_index_reuse_are_tracked) {
    // The scalable endpoint is refused while contexts are open; fi_close is not reached.
    auto r = s_.sep.close();
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(outcome(r), "busy");
    EXPECT_TRUE(s_.sep.valid());
    EXPECT_EQ(outcome(s_.domain.close()), "busy");

    // Index rules: in range, one open context per index.
    EXPECT_EQ(outcome(s_.sep.tx_context(tx_count)), "invalid_argument");
    EXPECT_EQ(outcome(s_.sep.rx_context(-1)), "invalid_argument");
    EXPECT_EQ(outcome(s_.sep.rx_context(1)), "busy");
    EXPECT_EQ(outcome(s_.sep.tx_context(0)), "busy");
    ASSERT_FALSE(s_.sep.capabilities().any(loom::capability::collective));
    EXPECT_EQ(outcome(s_.sep.tx_context(1, {.caps = loom::capability::collective})), "invalid_argument")
        << "context capabilities must be a subset of the endpoint's";

    // Closing a context (here: its destructor) releases its index and its count.
    s_.rx[1] = loom::endpoint{};
    EXPECT_EQ(s_.sep.open_contexts(), tx_count + rx_count - 1);
    auto again = s_.sep.rx_context(1);
    ASSERT_TRUE(again) << outcome(again.error());
    EXPECT_EQ(s_.sep.open_contexts(), tx_count + rx_count);
    EXPECT_FALSE(again->enabled());
    ASSERT_EQ(outcome(again->bind_cq(s_.rx_cq[1], loom::cq_bind::recv)), "ok");
    ASSERT_EQ(outcome(s_.sep.enable_context(*again)), "ok");
    EXPECT_TRUE(again->enabled());
    s_.rx[1] = std::move(*again);
    // The re-created context receives.
    ASSERT_NO_FATAL_FAILURE(post_all());
    auto dest = s_.av.receive_context_address(s_.self, 1);
    ASSERT_TRUE(dest);
    ASSERT_NO_FATAL_FAILURE(deliver_to(s_.tx[0], s_.tx_cq, *dest, 1, 301));
    // Cancel the other receives before closing.
    for (int i : {0, 2}) {
        ASSERT_EQ(outcome(s_.rx[i].cancel(&rctx_[i])), "ok");
        loom_test::progress prog(s_.rx_cq[i]);
        auto ev = prog.wait_for(&rctx_[i], 2s);
        ASSERT_TRUE(ev) << outcome(ev.error());
    }

    for (auto& e : s_.tx) ASSERT_EQ(outcome(e.close()), "ok");
    for (auto& e : s_.rx) ASSERT_EQ(outcome(e.close()), "ok");
    EXPECT_EQ(s_.sep.open_contexts(), 0);
    EXPECT_EQ(outcome(s_.sep.close()), "ok");
    EXPECT_FALSE(s_.sep.valid());
    EXPECT_EQ(outcome(s_.sep.close()), "ok");
}

TEST_F(core_named_rx, enable_context_accepts_only_own_contexts) {
    loom::endpoint none;
    EXPECT_EQ(outcome(s_.sep.enable_context(none)), "invalid_argument");
    auto ep = loom::endpoint::create(s_.domain, s_.info);
    ASSERT_TRUE(ep);
    EXPECT_EQ(outcome(s_.sep.enable_context(*ep)), "invalid_argument") << "an ordinary endpoint";
    // A context of another scalable endpoint.
    auto other = loom::scalable_endpoint::create(s_.domain, s_.info, {.tx_contexts = 1, .rx_contexts = 1});
    ASSERT_TRUE(other) << outcome(other.error());
    auto foreign = other->tx_context(0);
    ASSERT_TRUE(foreign) << outcome(foreign.error());
    EXPECT_EQ(outcome(s_.sep.enable_context(*foreign)), "invalid_argument");
    // Without an address vector an RDM context cannot be enabled.
    EXPECT_EQ(outcome(other->enable_context(*foreign)), "no_address_vector");
    EXPECT_EQ(outcome(other->enable()), "no_address_vector");
    EXPECT_EQ(outcome(other->bind_av(s_.av)), "ok");
    EXPECT_EQ(outcome(other->bind_av(s_.av)), "bad_state") << "bound twice";
    EXPECT_EQ(outcome(other->enable_context(*foreign)), "ok");
    EXPECT_EQ(outcome(other->close()), "busy");
    ASSERT_EQ(outcome(foreign->close()), "ok");
    EXPECT_EQ(outcome(other->close()), "ok");
}

TEST_F(core_named_rx, creation_checks_come_before_the_provider) {
    const auto da = s_.info.get_domain_attr();
    ASSERT_TRUE(da);
    domain_spy spy(s_.domain);
    auto too_many =
        loom::scalable_endpoint::create(s_.domain, s_.info, {.tx_contexts = da->max_ep_tx_ctx + 1, .rx_contexts = 1});
    EXPECT_EQ(outcome(too_many), "invalid_argument");
    auto too_many_rx =
        loom::scalable_endpoint::create(s_.domain, s_.info, {.tx_contexts = 1, .rx_contexts = da->max_ep_rx_ctx + 1});
    EXPECT_EQ(outcome(too_many_rx), "invalid_argument");
    EXPECT_EQ(outcome(loom::scalable_endpoint::create(s_.domain, loom::fabric_info{})), "invalid_argument");
    EXPECT_EQ(spy.sep_opens.load(), 0);

    EXPECT_EQ(outcome(loom::address_vector::create(s_.domain, {.rx_ctx_bits = 65})), "invalid_argument");
    EXPECT_EQ(outcome(loom::address_vector::create(s_.domain, {.rx_ctx_bits = -1})), "invalid_argument");
    EXPECT_EQ(spy.av_opens.load(), 0) << "widths above the address width must not reach the provider";
    // Within 64 bits the provider may impose its own, smaller limit.
    auto wide = loom::address_vector::create(s_.domain, {.rx_ctx_bits = 17});
    EXPECT_EQ(spy.av_opens.load(), 1);
    quirk("sockets", "address vector with rx_ctx_bits 17 -> " + outcome(wide));

    // And the spy does see a valid creation.
    auto fine = loom::scalable_endpoint::create(s_.domain, s_.info, {.tx_contexts = 1, .rx_contexts = 1});
    EXPECT_EQ(outcome(fine), "ok");
    EXPECT_EQ(spy.sep_opens.load(), 1);
}

// ================================================================ providers without scalable endpoints
class core_sep_unsupported : public ::testing::TestWithParam<std::string> {};

TEST_P(core_sep_unsupported, creation_fails_cleanly) {
    loop_stack s;
    ASSERT_NO_FATAL_FAILURE(must_open_loop(GetParam(), {}, s));
    auto sep = loom::scalable_endpoint::create(s.domain, s.info, {.tx_contexts = 1, .rx_contexts = 1});
    quirk(GetParam(), "scalable_endpoint::create -> " + outcome(sep));
    if (!sep) {
        EXPECT_NE(outcome(sep), "ok");
        return;
    }
    // A provider that does offer them: one context must work like on sockets.
    auto tx = sep->tx_context(0);
    EXPECT_TRUE(tx) << outcome(tx.error());
}

INSTANTIATE_TEST_SUITE_P(providers, core_sep_unsupported, ::testing::Values("shm", "tcp;ofi_rxm"), param_name);

}  // namespace
