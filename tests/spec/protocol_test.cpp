// "Protocol Abstraction Layer": the spec's protocol type and generic function compiled, checked
// by its concepts and run over a tcp loopback endpoint; the generic calls moving bytes through
// a protocol whose peer is the endpoint itself.
#include <loom/loom.hpp>
#include <loom/protocol/protocol.hpp>

#include <gtest/gtest.h>

#include "core_support.hpp"

#include <array>
#include <cstring>

using namespace loom;
using namespace std::chrono_literals;

// ---- the spec's example, unchanged
template <typename Provider>
class my_rdma_protocol {
public:
    using provider_type = Provider;

    static constexpr bool supports_rma = true;
    static constexpr bool supports_tagged = true;
    static constexpr bool supports_atomic = native_atomic_provider<Provider>;
    static constexpr bool supports_inject = provider_traits<Provider>::supports_inject;

    explicit my_rdma_protocol(endpoint& ep, memory_region& mr) : ep_(ep), mr_(mr) {}

    [[nodiscard]] auto name() const noexcept -> const char* { return "my_rdma_protocol"; }

    [[nodiscard]] auto send(std::span<const std::byte> data, context_ptr<void> ctx = {}) -> void_result {
        return ep_.send(data, ctx);
    }

    [[nodiscard]] auto recv(std::span<std::byte> buf, context_ptr<void> ctx = {}) -> void_result {
        return ep_.recv(buf, ctx);
    }

    [[nodiscard]] auto tagged_send(std::span<const std::byte> data, std::uint64_t tag, context_ptr<void> ctx = {})
        -> void_result {
        return ep_.tagged_send(data, tag, ctx);
    }

    [[nodiscard]] auto tagged_recv(std::span<std::byte> buf, std::uint64_t tag, std::uint64_t ignore = 0,
                                   context_ptr<void> ctx = {}) -> void_result {
        return ep_.tagged_recv(buf, tag, ignore, ctx);
    }

    [[nodiscard]] auto read(std::span<std::byte> local, rma_addr remote, mr_key key, context_ptr<void> ctx = {})
        -> void_result {
        return rma::read(ep_, local, mr_, remote_memory{remote.get(), key.get(), local.size()}, ctx);
    }

    [[nodiscard]] auto write(std::span<const std::byte> local, rma_addr remote, mr_key key, context_ptr<void> ctx = {})
        -> void_result {
        return rma::write(ep_, local, mr_, remote_memory{remote.get(), key.get(), local.size()}, ctx);
    }

    [[nodiscard]] auto inject(std::span<const std::byte> data, fabric_addr dest = fabric_addrs::unspecified)
        -> void_result
        requires inject_capable_provider<Provider>
    {
        return ep_.inject(data, dest);
    }

private:
    endpoint& ep_;
    memory_region& mr_;
};

static_assert(basic_protocol<my_rdma_protocol<provider::verbs_tag>>);
static_assert(tagged_protocol<my_rdma_protocol<provider::verbs_tag>>);
static_assert(rma_protocol<my_rdma_protocol<provider::verbs_tag>>);
static_assert(has_static_capabilities<my_rdma_protocol<provider::verbs_tag>>);
static_assert(provider_aware_protocol<my_rdma_protocol<provider::verbs_tag>>);

void use_any_protocol(auto& proto)
    requires basic_protocol<decltype(proto)>
{
    std::array<std::byte, 64> buf{};
    protocol::send(proto, std::span{buf});

    if constexpr (rma_protocol<decltype(proto)>) {
        protocol::read(proto, std::span{buf}, rma_addr{0x1000}, mr_key{42});
    }

    using caps = protocol_capabilities<std::remove_cvref_t<decltype(proto)>>;
    if constexpr (caps::static_rma) {
    }
}

// ---- the concepts and capabilities beyond the example
static_assert(inject_capable<my_rdma_protocol<provider::tcp_tag>>);
static_assert(!inject_capable<my_rdma_protocol<provider::generic_tag>>, "the generic tag offers no inject");
static_assert(protocol_capabilities<my_rdma_protocol<provider::verbs_tag>>::static_atomic);
static_assert(!protocol_capabilities<my_rdma_protocol<provider::tcp_tag>>::static_atomic);
static_assert(protocol_capabilities<my_rdma_protocol<provider::tcp_tag>>::static_rma);
static_assert(
    std::is_same_v<protocol_capabilities<my_rdma_protocol<provider::efa_tag>>::provider_type, provider::efa_tag>);
static_assert(basic_protocol<const my_rdma_protocol<provider::tcp_tag>&> ==
              basic_protocol<my_rdma_protocol<provider::tcp_tag>>);

namespace {

/// Only untagged messages, no declarations: static capabilities follow the members.
struct messages_only {
    auto send(std::span<const std::byte>) -> void_result { return {}; }
    auto recv(std::span<std::byte>) -> void_result { return {}; }
};
static_assert(basic_protocol<messages_only> && !tagged_protocol<messages_only> && !rma_protocol<messages_only>);
static_assert(!has_static_capabilities<messages_only> && !provider_aware_protocol<messages_only>);
static_assert(!protocol_capabilities<messages_only>::static_rma &&
              !protocol_capabilities<messages_only>::static_tagged);
static_assert(std::is_same_v<protocol_capabilities<messages_only>::provider_type, provider::generic_tag>);
/// Declares RMA unsupported although it has the members: the declaration wins.
struct rma_declared_off : my_rdma_protocol<provider::tcp_tag> {
    using my_rdma_protocol::my_rdma_protocol;
    static constexpr bool supports_rma = false;
};
static_assert(rma_protocol<rma_declared_off> && !protocol_capabilities<rma_declared_off>::static_rma);
struct wrong_result {
    auto send(std::span<const std::byte>) -> int { return 0; }
    auto recv(std::span<std::byte>) -> void_result { return {}; }
};
static_assert(!basic_protocol<wrong_result>, "operations return void_result");

/// A protocol whose peer is its own endpoint (RDM loopback), with per-call contexts.
struct loop_protocol {
    using provider_type = provider::tcp_tag;
    core_test::loop_stack* s;
    memory_region* mr;
    request_context* ctx;
    auto send(std::span<const std::byte> d) -> void_result { return s->ep.send(d, s->self, mr->descriptor(), ctx); }
    auto recv(std::span<std::byte> b) -> void_result {
        return s->ep.recv(b, fabric_addrs::unspecified, mr->descriptor(), ctx);
    }
    auto tagged_send(std::span<const std::byte> d, std::uint64_t tag) -> void_result {
        return s->ep.tagged_send(d, tag, s->self, mr->descriptor(), ctx);
    }
    auto tagged_recv(std::span<std::byte> b, std::uint64_t tag, std::uint64_t ignore) -> void_result {
        return s->ep.tagged_recv(b, tag, ignore, fabric_addrs::unspecified, mr->descriptor(), ctx);
    }
    auto read(std::span<std::byte> local, rma_addr remote, mr_key key) -> void_result {
        return rma::read_to(s->ep, local, *mr, s->self, remote_memory{remote.get(), key.get(), local.size()}, ctx);
    }
    auto write(std::span<const std::byte> local, rma_addr remote, mr_key key) -> void_result {
        return rma::write_to(s->ep, local, *mr, s->self, remote_memory{remote.get(), key.get(), local.size()}, ctx);
    }
};
static_assert(rma_protocol<loop_protocol> && tagged_protocol<loop_protocol> && provider_aware_protocol<loop_protocol>);

constexpr auto rma_access = mr_access_flags::send | mr_access_flags::recv | mr_access_flags::read |
                            mr_access_flags::write | mr_access_flags::remote_read | mr_access_flags::remote_write;

/// A tcp loopback endpoint with RMA and `mem` registered for every access.
template <std::size_t N>
void open_rma_loop(core_test::loop_stack& s, std::array<std::byte, N>& mem, result<memory_region>& mr) {
    core_test::loop_options o;
    o.caps = capability::msg | capability::tagged | capability::rma;
    ASSERT_NO_FATAL_FAILURE(core_test::must_open_loop("tcp", o, s));
    mr = memory_region::register_memory(s.domain, std::span{mem}, rma_access);
    ASSERT_TRUE(mr) << mr.error().message();
}

}  // namespace

TEST(SpecProtocol, the_example_runs_and_its_refusals_are_clean) {
    core_test::loop_stack s;
    std::array<std::byte, 64> mem{};
    result<memory_region> mr = make_unexpected(errc::other);
    ASSERT_NO_FATAL_FAILURE(open_rma_loop(s, mem, mr));
    my_rdma_protocol<provider::tcp_tag> proto(s.ep, *mr);
    EXPECT_STREQ(proto.name(), "my_rdma_protocol");
    use_any_protocol(proto);
    // What the example ignores: an RDM endpoint has no connection, so the forms without a peer
    // are refused before the provider is asked.
    std::array<std::byte, 8> b{};
    EXPECT_EQ(protocol::send(proto, std::span{b}).error(), make_error_code(errc::invalid_argument));
    EXPECT_EQ(protocol::read(proto, std::span{b}, rma_addr{0x1000}, mr_key{42}).error(),
              make_error_code(errc::invalid_argument));
}

TEST(SpecProtocol, generic_calls_move_bytes_through_any_protocol) {
    core_test::loop_stack s;
    std::array<std::byte, 256> mem{};
    result<memory_region> mr = make_unexpected(errc::other);
    ASSERT_NO_FATAL_FAILURE(open_rma_loop(s, mem, mr));
    auto remote = remote_memory::from_mr(*mr);
    ASSERT_TRUE(remote);
    request_context rctx, sctx;
    loop_protocol rx{&s, &*mr, &rctx}, tx{&s, &*mr, &sctx};
    loom_test::progress prog(s.cq);
    const auto out = std::span{mem}.first(64), in = std::span{mem}.subspan(64, 64);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::byte>(i + 1);

    ASSERT_EQ(core_test::outcome(protocol::recv(rx, in)), "ok");
    ASSERT_EQ(core_test::outcome(prog.retry([&] { return protocol::send(tx, out); }, 2s)), "ok");
    EXPECT_EQ(core_test::completed(prog, &rctx).bytes_transferred, 64u);
    (void)core_test::completed(prog, &sctx);
    EXPECT_EQ(std::memcmp(in.data(), out.data(), 64), 0);

    std::ranges::fill(in, std::byte{0});
    ASSERT_EQ(core_test::outcome(protocol::tagged_recv(rx, in, 7)), "ok");
    ASSERT_EQ(core_test::outcome(prog.retry([&] { return protocol::tagged_send(tx, out.first(16), 7); }, 2s)), "ok");
    EXPECT_EQ(core_test::completed(prog, &rctx).bytes_transferred, 16u);
    (void)core_test::completed(prog, &sctx);
    EXPECT_EQ(std::memcmp(in.data(), out.data(), 16), 0);

    // Write out -> [128, 160), read [128, 160) -> [160, 192): both through the generic calls.
    const auto at = [&](std::size_t off) { return rma_addr{remote->addr + off}; };
    ASSERT_EQ(core_test::outcome(
                  prog.retry([&] { return protocol::write(tx, out.first(32), at(128), mr_key{remote->key}); }, 2s)),
              "ok");
    (void)core_test::completed(prog, &sctx);
    EXPECT_EQ(std::memcmp(mem.data() + 128, out.data(), 32), 0);
    ASSERT_EQ(
        core_test::outcome(prog.retry(
            [&] { return protocol::read(tx, std::span{mem}.subspan(160, 32), at(128), mr_key{remote->key}); }, 2s)),
        "ok");
    (void)core_test::completed(prog, &sctx);
    EXPECT_EQ(std::memcmp(mem.data() + 160, out.data(), 32), 0);
}
