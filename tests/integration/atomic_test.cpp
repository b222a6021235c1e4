// Two-process atomics: every operation x {uint32, uint64, int64, double} the provider accepts,
// each checked against a local model (old value returned, new value read back).
#include "peer_process.hpp"

#include <loom/atomic.hpp>
#include <loom/rma.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

using namespace loom_test;
using namespace std::chrono_literals;
namespace la = loom::atomic;

namespace {

constexpr auto atomic_caps = loom::capability::msg | loom::capability::tagged | loom::capability::atomic;

template <class T>
auto model(la::operation op, T v0, T x, T c) -> T {
    using O = la::operation;
    switch (op) {
        case O::min: return std::min(v0, x);
        case O::max: return std::max(v0, x);
        case O::sum: return static_cast<T>(v0 + x);
        case O::prod: return static_cast<T>(v0 * x);
        case O::lor: return static_cast<T>((v0 != T{}) || (x != T{}));
        case O::land: return static_cast<T>((v0 != T{}) && (x != T{}));
        case O::lxor: return static_cast<T>((v0 != T{}) != (x != T{}));
        case O::atomic_read: return v0;
        case O::atomic_write: return x;
        case O::cswap: return c == v0 ? x : v0;
        case O::cswap_ne: return c != v0 ? x : v0;
        case O::cswap_le: return c <= v0 ? x : v0;
        case O::cswap_lt: return c < v0 ? x : v0;
        case O::cswap_ge: return c >= v0 ? x : v0;
        case O::cswap_gt: return c > v0 ? x : v0;
        default: break;
    }
    if constexpr (std::is_integral_v<T>) {
        switch (op) {
            case O::bor: return v0 | x;
            case O::band: return v0 & x;
            case O::bxor: return v0 ^ x;
            case O::mswap: return static_cast<T>((x & c) | (v0 & ~c));
            default: break;
        }
    }
    ADD_FAILURE() << "no model for op " << static_cast<int>(op);
    return v0;
}

constexpr la::operation all_ops[] = {
    la::operation::min,      la::operation::max,      la::operation::sum,         la::operation::prod,
    la::operation::lor,      la::operation::land,     la::operation::bor,         la::operation::band,
    la::operation::lxor,     la::operation::bxor,     la::operation::atomic_read, la::operation::atomic_write,
    la::operation::cswap,    la::operation::cswap_ne, la::operation::cswap_le,    la::operation::cswap_lt,
    la::operation::cswap_ge, la::operation::cswap_gt, la::operation::mswap,
};

class atomics : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        auto st = open_stack(GetParam(), atomic_caps);
        ASSERT_TRUE(st) << GetParam() << ": " << st.error().message();
        local_ = std::make_unique<stack>(std::move(*st));
        auto mr = loom::memory_region::register_memory(local_->domain, std::span{scratch_},
                                                       loom::mr_access_flags::read | loom::mr_access_flags::write);
        ASSERT_TRUE(mr) << mr.error().message();
        mr_ = std::move(*mr);
        peer_ = std::make_unique<peer_process>(GetParam(), atomic_caps, *local_);
        ASSERT_TRUE(peer_->ok()) << peer_->error();
        auto r = peer_->run({.code = op::expose, .size = 4096, .seed = 1});
        ASSERT_EQ(r.status, 0) << r.text;
        remote_ = {r.value, r.tag, static_cast<std::size_t>(r.bytes)};
    }
    void TearDown() override {
        peer_.reset();
        mr_ = {};
        local_.reset();
    }

    /// Waits for a submitted operation's completion.
    auto finish(loom::void_result submitted, const loom::request_context& ctx) -> bool {
        if (!submitted) {
            ADD_FAILURE() << "submit: " << submitted.error().message();
            return false;
        }
        auto ev = peer_->local().wait_for(&ctx, 20s);
        if (!ev || ev->has_error()) {
            ADD_FAILURE() << "completion: " << (ev ? ev->error.message() + " " + ev->error_text : ev.error().message());
            return false;
        }
        return true;
    }
    template <class T>
    auto slot(std::size_t i) -> T* {
        return reinterpret_cast<T*>(scratch_.data() + i * 16);
    }
    /// Sets the remote word with a fetching atomic write (completion = applied).
    template <class T>
    auto set_remote(const loom::remote_memory& at, T v) -> bool {
        *slot<T>(0) = v;
        loom::request_context ctx;
        return finish(peer_->local().retry(
                          [&] {
                              return la::fetch_to<T>(local_->ep, std::span<const T>{slot<T>(0), 1}, &mr_,
                                                     std::span<T>{slot<T>(1), 1}, &mr_, peer_->address(), at,
                                                     la::operation::atomic_write, &ctx);
                          },
                          20s),
                      ctx);
    }
    template <class T>
    auto read_remote(const loom::remote_memory& at) -> T {
        loom::request_context ctx;
        *slot<T>(2) = T{};
        finish(peer_->local().retry(
                   [&] {
                       return la::fetch_to<T>(local_->ep, std::span<const T>{}, nullptr, std::span<T>{slot<T>(2), 1},
                                              &mr_, peer_->address(), at, la::operation::atomic_read, &ctx);
                   },
                   20s),
               ctx);
        return *slot<T>(2);
    }
    /// Non-fetching operations complete before the target may have applied them on some
    /// providers: read until the model's value shows up (or time runs out).
    template <class T>
    auto eventually(const loom::remote_memory& at, T want) -> T {
        const auto deadline = std::chrono::steady_clock::now() + 5s;
        T got = read_remote<T>(at);
        while (got != want && std::chrono::steady_clock::now() < deadline) got = read_remote<T>(at);
        return got;
    }

    template <class T>
    auto run_type(std::size_t word) -> int {
        const auto at = remote_.subregion(word * 16, sizeof(T)).value();
        const T v0 = static_cast<T>(10), x = static_cast<T>(3);
        int checked = 0;
        for (auto op : all_ops) {
            std::size_t count = 0;
            SCOPED_TRACE(::testing::Message() << "op " << static_cast<int>(op) << " type " << sizeof(T)
                                              << (std::is_floating_point_v<T> ? " float" : " int"));
            // fetch family (also covers atomic_read)
            if (la::is_fetch_valid(local_->ep, op, la::datatype_of<T>, &count)) {
                if (!set_remote<T>(at, v0)) return checked;
                *slot<T>(3) = x;
                *slot<T>(4) = T{};
                loom::request_context ctx;
                if (!finish(peer_->local().retry(
                                [&] {
                                    return la::fetch_to<T>(local_->ep, std::span<const T>{slot<T>(3), 1}, &mr_,
                                                           std::span<T>{slot<T>(4), 1}, &mr_, peer_->address(), at, op,
                                                           &ctx);
                                },
                                20s),
                            ctx))
                    return checked;
                EXPECT_EQ(*slot<T>(4), v0) << "fetched old value";
                EXPECT_EQ(read_remote<T>(at), model<T>(op, v0, x, T{})) << "new value (fetch)";
                ++checked;
            }
            // base family
            if (la::is_valid(local_->ep, op, la::datatype_of<T>, &count)) {
                if (!set_remote<T>(at, v0)) return checked;
                *slot<T>(3) = x;
                loom::request_context ctx;
                if (!finish(peer_->local().retry(
                                [&] {
                                    return la::execute_to<T>(local_->ep, std::span<const T>{slot<T>(3), 1}, &mr_,
                                                             peer_->address(), at, op, &ctx);
                                },
                                20s),
                            ctx))
                    return checked;
                const T want = model<T>(op, v0, x, T{});
                EXPECT_EQ(eventually<T>(at, want), want) << "new value (base)";
                ++checked;
            }
            // compare family: once where the comparison holds, once where it does not
            if (la::is_compare_valid(local_->ep, op, la::datatype_of<T>, &count)) {
                for (T c : {v0, static_cast<T>(7), static_cast<T>(12)}) {
                    if (!set_remote<T>(at, v0)) return checked;
                    *slot<T>(3) = x;
                    *slot<T>(5) = c;
                    *slot<T>(4) = T{};
                    loom::request_context ctx;
                    if (!finish(peer_->local().retry(
                                    [&] {
                                        return la::compare_swap_to<T>(local_->ep, std::span<const T>{slot<T>(5), 1},
                                                                      &mr_, std::span<const T>{slot<T>(3), 1}, &mr_,
                                                                      std::span<T>{slot<T>(4), 1}, &mr_,
                                                                      peer_->address(), at, op, &ctx);
                                    },
                                    20s),
                                ctx))
                        return checked;
                    EXPECT_EQ(*slot<T>(4), v0) << "fetched old value, compare " << c;
                    EXPECT_EQ(read_remote<T>(at), model<T>(op, v0, x, c)) << "new value, compare " << c;
                    ++checked;
                }
            }
        }
        return checked;
    }

    std::unique_ptr<stack> local_;
    std::array<std::byte, 4096> scratch_{};
    loom::memory_region mr_;
    std::unique_ptr<peer_process> peer_;
    loom::remote_memory remote_;
};

TEST_P(atomics, uint32_every_valid_operation_matches_the_model) { EXPECT_GT(run_type<std::uint32_t>(0), 20); }
TEST_P(atomics, uint64_every_valid_operation_matches_the_model) { EXPECT_GT(run_type<std::uint64_t>(1), 20); }
TEST_P(atomics, int64_every_valid_operation_matches_the_model) { EXPECT_GT(run_type<std::int64_t>(2), 20); }
TEST_P(atomics, double_every_valid_operation_matches_the_model) { EXPECT_GT(run_type<double>(3), 10); }

TEST_P(atomics, typed_helpers_and_inject) {
    const auto at = remote_.subregion(64, 8).value();
    ASSERT_TRUE(set_remote<std::uint64_t>(at, 100));
    const std::uint64_t inc = 42;
    std::uint64_t previous = 0;
    auto in_mr = loom::memory_region::register_memory(
                     local_->domain, std::as_writable_bytes(std::span{const_cast<std::uint64_t*>(&inc), 1}),
                     loom::mr_access_flags::read)
                     .value();
    auto out_mr = loom::memory_region::register_memory(local_->domain, std::as_writable_bytes(std::span{&previous, 1}),
                                                       loom::mr_access_flags::write)
                      .value();
    loom::request_context ctx;
    ASSERT_TRUE(finish(
        peer_->local().retry(
            [&] { return la::fetch_add_to(local_->ep, inc, &previous, &in_mr, &out_mr, peer_->address(), at, &ctx); },
            20s),
        ctx));
    EXPECT_EQ(previous, 100u);
    ASSERT_TRUE(finish(
        peer_->local().retry([&] { return la::add_to(local_->ep, inc, &in_mr, peer_->address(), at, &ctx); }, 20s),
        ctx));
    EXPECT_EQ(eventually<std::uint64_t>(at, 184), 184u);
    const std::uint64_t expected = 184, desired = 7;
    std::uint64_t result = 0;
    ASSERT_TRUE(finish(peer_->local().retry(
                           [&] {
                               return la::cas_to(local_->ep, expected, nullptr, desired, nullptr, &result, nullptr,
                                                 peer_->address(), at, &ctx);
                           },
                           20s),
                       ctx));
    EXPECT_EQ(result, 184u);
    EXPECT_EQ(read_remote<std::uint64_t>(at), 7u);
    const std::uint64_t five = 5;
    ASSERT_TRUE(peer_->local().retry(
        [&] {
            return la::inject_to<std::uint64_t>(local_->ep, std::span{&five, 1}, peer_->address(), at,
                                                la::operation::sum);
        },
        20s));
    EXPECT_EQ(eventually<std::uint64_t>(at, 12), 12u);
}

TEST_P(atomics, family_and_extent_checks_fail_before_the_provider) {
    std::uint64_t v = 1, r = 0;
    auto mr = loom::memory_region::register_memory(local_->domain, std::as_writable_bytes(std::span{&v, 1}),
                                                   loom::mr_access_flags::read | loom::mr_access_flags::write)
                  .value();
    loom::request_context ctx;
    auto invalid = [](const loom::void_result& res) { return !res && res.error() == loom::errc::invalid_argument; };
    const std::span<const std::uint64_t> one{&v, 1};
    // atomic_read needs the fetch interface; compare ops need the compare interface.
    EXPECT_TRUE(
        invalid(la::execute_to(local_->ep, one, &mr, peer_->address(), remote_, la::operation::atomic_read, &ctx)));
    EXPECT_TRUE(invalid(la::execute_to(local_->ep, one, &mr, peer_->address(), remote_, la::operation::cswap, &ctx)));
    EXPECT_TRUE(invalid(la::fetch_to(local_->ep, one, &mr, std::span{&r, 1}, nullptr, peer_->address(), remote_,
                                     la::operation::mswap, &ctx)));
    EXPECT_TRUE(invalid(la::compare_swap_to(local_->ep, one, &mr, one, &mr, std::span{&r, 1}, nullptr, peer_->address(),
                                            remote_, la::operation::sum, &ctx)));
    EXPECT_TRUE(
        invalid(la::execute_to(local_->ep, one, &mr, peer_->address(), remote_, static_cast<la::operation>(99), &ctx)));
    // Registration extents: the result is outside `mr`.
    EXPECT_TRUE(invalid(la::fetch_to(local_->ep, one, &mr, std::span{&r, 1}, &mr, peer_->address(), remote_,
                                     la::operation::sum, &ctx)));
    // Remote shorter than one value.
    const auto tiny = remote_.subregion(0, 4).value();
    EXPECT_TRUE(invalid(la::execute_to(local_->ep, one, &mr, peer_->address(), tiny, la::operation::sum, &ctx)));
    // Queries of another family: false, count untouched.
    std::size_t count = 12345;
    EXPECT_FALSE(la::is_valid(local_->ep, la::operation::atomic_read, la::datatype::uint64, &count));
    EXPECT_FALSE(la::is_fetch_valid(local_->ep, la::operation::cswap, la::datatype::uint64, &count));
    EXPECT_FALSE(la::is_compare_valid(local_->ep, la::operation::sum, la::datatype::uint64, &count));
    EXPECT_EQ(count, 12345u);
    // Nothing was submitted.
    EXPECT_FALSE(peer_->local().wait_for(&ctx, 50ms));
}

// udp;ofi_rxd (libfabric 2.1) has broken fetch/compare atomics and atomic inject; loom refuses
// those there (see rxd_refuses_its_broken_atomics below and docs/providers.md).
TEST_P(atomics, typed_atomics_to_an_inserted_peer_go_through_the_atomic_gate) {
    // With a peer_addr and arguments that pass the inline checks (registrations, remote range),
    // add_to / fetch_add_to / cas_to go straight to the endpoint's atomic gate: it must pass what
    // is valid (results as the model says), refuse a moved-from endpoint with bad_state, and the
    // inline checks must refuse what the full checks refuse.
    ASSERT_TRUE(peer_->peer().has_value());
    const loom::peer_addr peer = *peer_->peer();
    // Direct on every provider here but sockets (whose max_msg_size is finite).
    EXPECT_EQ(local_->ep.send_gate(loom::capability::atomic) == local_->ep.native(), GetParam() != "sockets");
    const auto at = remote_.subregion(64, 8).value();
    ASSERT_TRUE(set_remote<std::uint64_t>(at, 40));
    loom::request_context ctx;
    *slot<std::uint64_t>(2) = 2;
    EXPECT_TRUE(finish(peer_->local().retry(
                           [&] {
                               return la::fetch_add_to(local_->ep, *slot<std::uint64_t>(2), slot<std::uint64_t>(3),
                                                       &mr_, &mr_, peer, at, &ctx);
                           },
                           20s),
                       ctx));
    EXPECT_EQ(*slot<std::uint64_t>(3), 40u);
    EXPECT_TRUE(finish(peer_->local().retry(
                           [&] { return la::add_to(local_->ep, *slot<std::uint64_t>(2), &mr_, peer, at, &ctx); }, 20s),
                       ctx));
    *slot<std::uint64_t>(4) = 44;  // expected: 40 + 2 + 2
    *slot<std::uint64_t>(5) = 7;
    EXPECT_TRUE(finish(peer_->local().retry(
                           [&] {
                               return la::cas_to(local_->ep, *slot<std::uint64_t>(4), &mr_, *slot<std::uint64_t>(5),
                                                 &mr_, slot<std::uint64_t>(6), &mr_, peer, at, &ctx);
                           },
                           20s),
                       ctx));
    EXPECT_EQ(*slot<std::uint64_t>(6), 44u);
    // Arguments the inline checks catch: a result outside the registration, a short remote range.
    std::uint64_t outside = 0;
    EXPECT_EQ(la::fetch_add_to(local_->ep, *slot<std::uint64_t>(2), &outside, &mr_, &mr_, peer, at, &ctx).error(),
              loom::errc::invalid_argument);
    EXPECT_EQ(
        la::add_to(local_->ep, *slot<std::uint64_t>(2), &mr_, peer, remote_.subregion(64, 4).value(), &ctx).error(),
        loom::errc::invalid_argument);
    // State: a moved-from endpoint refuses; moved back, it works again.
    loom::endpoint moved = std::move(local_->ep);
    EXPECT_EQ(la::fetch_add_to(local_->ep, *slot<std::uint64_t>(2), slot<std::uint64_t>(3), &mr_, &mr_, peer, at, &ctx)
                  .error(),
              loom::errc::bad_state);
    EXPECT_EQ(la::add_to(local_->ep, *slot<std::uint64_t>(2), &mr_, peer, at, &ctx).error(), loom::errc::bad_state);
    local_->ep = std::move(moved);
    EXPECT_TRUE(finish(peer_->local().retry(
                           [&] {
                               return la::fetch_add_to(local_->ep, *slot<std::uint64_t>(2), slot<std::uint64_t>(3),
                                                       &mr_, &mr_, peer, at, &ctx);
                           },
                           20s),
                       ctx));
    EXPECT_EQ(*slot<std::uint64_t>(3), 7u);
}

INSTANTIATE_TEST_SUITE_P(providers, atomics, ::testing::Values("tcp;ofi_rxm", "shm", "sockets"), [](const auto& info) {
    std::string s = info.param;
    std::replace(s.begin(), s.end(), ';', '_');
    return s;
});

TEST(atomics_rxd, refuses_its_broken_atomics_and_runs_base_operations) {
    const auto caps = atomic_caps | loom::capability::rma;
    auto st = open_stack("udp;ofi_rxd", caps);
    ASSERT_TRUE(st) << st.error().message();
    peer_process peer("udp;ofi_rxd", caps, *st);
    ASSERT_TRUE(peer.ok()) << peer.error();
    auto ex = peer.run({.code = op::expose, .size = 4096, .seed = 1});
    ASSERT_EQ(ex.status, 0) << ex.text;
    const loom::remote_memory remote{ex.value, ex.tag, static_cast<std::size_t>(ex.bytes)};
    std::array<std::uint64_t, 4> words{};
    auto mr = loom::memory_region::register_memory(st->domain, std::as_writable_bytes(std::span{words}),
                                                   loom::mr_access_flags::read | loom::mr_access_flags::write)
                  .value();
    std::size_t count = 777;
    EXPECT_FALSE(la::is_fetch_valid(st->ep, la::operation::sum, la::datatype::uint64, &count));
    EXPECT_FALSE(la::is_compare_valid(st->ep, la::operation::cswap, la::datatype::uint64, &count));
    EXPECT_EQ(count, 777u);
    loom::request_context ctx;
    const auto at = remote.subregion(0, 8).value();
    auto fetched = la::fetch_to<std::uint64_t>(st->ep, std::span{words}.first(1), &mr, std::span{words}.subspan(1, 1),
                                               &mr, peer.address(), at, la::operation::sum, &ctx);
    ASSERT_FALSE(fetched);
    EXPECT_EQ(fetched.error(), loom::errc::not_supported);
    // The same through the atomic gate (a peer_addr, arguments that pass the inline checks):
    // the gate, not a per-call quirk test, refuses the broken fetch and compare atomics.
    ASSERT_TRUE(peer.peer().has_value());
    EXPECT_NE(st->ep.send_gate(loom::capability::atomic), st->ep.native());
    EXPECT_EQ(la::fetch_add_to(st->ep, words[0], &words[1], &mr, &mr, *peer.peer(), at, &ctx).error(),
              loom::errc::not_supported);
    EXPECT_EQ(la::cas_to(st->ep, words[0], &mr, words[1], &mr, &words[2], &mr, *peer.peer(), at, &ctx).error(),
              loom::errc::not_supported);
    auto injected =
        la::inject_to<std::uint64_t>(st->ep, std::span{words}.first(1), peer.address(), at, la::operation::sum);
    ASSERT_FALSE(injected);
    EXPECT_EQ(injected.error(), loom::errc::not_supported);

    // Base operations work: set 10 with an RMA write, add 32 atomically, read 42 back with RMA.
    words[0] = 10;
    ASSERT_TRUE(peer.local().retry(
        [&] {
            return loom::rma::write_to(st->ep, std::as_bytes(std::span{words}.first(1)), mr, peer.address(), at, &ctx);
        },
        20s));
    auto ev = peer.local().wait_for(&ctx, 20s);
    ASSERT_TRUE(ev && !ev->has_error());
    words[1] = 32;
    ASSERT_TRUE(peer.local().retry(
        [&] {
            return la::execute_to<std::uint64_t>(st->ep, std::span{words}.subspan(1, 1), &mr, peer.address(), at,
                                                 la::operation::sum, &ctx);
        },
        20s));
    ev = peer.local().wait_for(&ctx, 20s);
    ASSERT_TRUE(ev && !ev->has_error()) << (ev ? ev->error.message() : ev.error().message());
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    do {
        words[2] = 0;
        ASSERT_TRUE(peer.local().retry(
            [&] {
                return loom::rma::read_to(st->ep, std::as_writable_bytes(std::span{words}.subspan(2, 1)), mr,
                                          peer.address(), at, &ctx);
            },
            20s));
        ev = peer.local().wait_for(&ctx, 20s);
        ASSERT_TRUE(ev && !ev->has_error());
    } while (words[2] != 42 && std::chrono::steady_clock::now() < deadline);
    EXPECT_EQ(words[2], 42u);
}

}  // namespace
