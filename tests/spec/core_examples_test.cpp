// The spec's core examples that the section tests do not already run: "Atomic Operations", "RMA" over a connected
// endpoint, "Endpoint options" and the raw-key mapping snippet. Each is the spec's text with its elided setup filled in
// (std::println as printf); what the spec leaves to a comment is filled in so the test can see the outcome.
#include <loom/loom.hpp>

#include <gtest/gtest.h>

#include "core_connection_support.hpp"
#include "core_support.hpp"

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>

using core_test::outcome;

namespace {

/// "Atomic Operations": the example's body; `previous` is handed out when the completion
/// reports success (where the spec says to check the event first).
void atomic_example(loom::domain& domain, loom::endpoint& ep, loom::completion_queue& cq,
                    loom::fabric_addr peer_address, const loom::remote_memory& remote,
                    std::optional<std::uint64_t>& seen) {
    // ---- the spec's example
    std::uint64_t increment = 42;
    std::uint64_t previous = 0;
    auto input_mr = loom::memory_region::register_memory(domain, std::as_writable_bytes(std::span{&increment, 1}),
                                                         loom::mr_access_flags::read)
                        .value();
    auto result_mr = loom::memory_region::register_memory(domain, std::as_writable_bytes(std::span{&previous, 1}),
                                                          loom::mr_access_flags::write)
                         .value();

    std::size_t max_count{};
    if (!loom::atomic::is_fetch_valid(ep, loom::atomic::operation::sum, loom::atomic::datatype::uint64, &max_count) ||
        max_count < 1) {
        // Reject this transport profile before submitting work.
        return;
    }
    loom::request_context context;
    auto submitted =
        loom::atomic::fetch_add_to(ep, increment, &previous, &input_mr, &result_mr, peer_address, remote, &context);
    if (!submitted) {
        // Nothing was accepted. Preserve the numeric error, including EAGAIN.
        return;
    }
    for (;;) {
        if (auto event = cq.poll()) {
            // Check event->error before using previous. This dedicated CQ has
            // only this operation; a shared CQ needs dispatch by context.
            if (!event->error && event->context == &context) seen = previous;
            break;
        }
    }
    // The completion retires the borrowed buffers and registrations.
}

/// "RMA": the example's body over a connected endpoint; `peer_addr` and `peer_key` are the
/// target's exported registration.
void rma_example(loom::domain& domain, loom::endpoint& ep, loom::completion_queue& cq, std::uint64_t peer_addr,
                 std::uint64_t peer_key) {
    using namespace loom;
    // ---- the spec's example
    std::array<std::byte, 4096> local_buf{};
    auto local_mr = memory_region::register_memory(domain, std::span{local_buf},
                                                   mr_access_flags::read | mr_access_flags::write |
                                                       mr_access_flags::remote_read | mr_access_flags::remote_write)
                        .value();

    // Remote memory info (exchanged out-of-band with peer)
    remote_memory remote{.addr = peer_addr, .key = peer_key, .length = 4096};

    // One-sided write: copy local data to remote memory
    std::memcpy(local_buf.data(), "Hello, RDMA!", 12);
    rma::write(ep, std::span{local_buf}.first(12), local_mr, remote).value();

    // One-sided read: copy remote data to local memory
    rma::read(ep, std::span{local_buf}, local_mr, remote).value();

    // Write with immediate data (notifies remote of write completion)
    rma::write_data(ep, std::span{local_buf}, local_mr, remote, 0xDEADBEEF /* immediate data */).value();
    // ---- filled in: the three operations retire before the buffer goes
    int done = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (done < 3 && std::chrono::steady_clock::now() < deadline)
        if (auto ev = core_test::next_event(cq, std::chrono::milliseconds(100))) {
            EXPECT_FALSE(ev->has_error()) << outcome(ev->error) << " " << ev->error_text;
            ++done;
        }
    EXPECT_EQ(done, 3) << "the write, the read and the write with data complete";
    EXPECT_EQ(std::memcmp(local_buf.data(), "Hello, RDMA!", 12), 0) << "the read brought the write back";
}

}  // namespace

// The opening example posts a receive without a context. Providers whose mode requires
// context storage for every operation (psm3, first in discovery here; EFA's direct path) cannot
// take one: loom refuses it before the provider is asked. The example itself runs as its own
// program (opening_example.cpp) with those providers left out of discovery.
TEST(SpecExamples, a_receive_without_context_is_refused_where_the_provider_needs_one) {
    auto info = loom::query_fabric({.capabilities = loom::capability::msg | loom::capability::tagged,
                                    .ep_type = loom::endpoint_types::rdm,
                                    .provider = "psm3"});
    if (!info) GTEST_SKIP() << "no psm3 here";
    ASSERT_TRUE(info->mode().any(loom::mode_flags::context | loom::mode_flags::context2));
    core_test::loop_stack s;
    ASSERT_EQ(core_test::open_loop(*info, {}, s), "");
    EXPECT_TRUE(s.ep.context_required());
    std::array<std::byte, 64> buffer{};
    EXPECT_EQ(outcome(s.ep.recv(std::span{buffer})), "invalid_argument");
    loom::request_context ctx;
    EXPECT_EQ(outcome(s.ep.recv(std::span{buffer}, &ctx)), "ok") << "with a context it is taken";
}

TEST(SpecExamples, atomic_fetch_add_returns_the_previous_value) {
    core_test::loop_stack s;
    ASSERT_NO_FATAL_FAILURE(
        core_test::must_open_loop("sockets", {.caps = loom::capability::msg | loom::capability::atomic}, s));
    alignas(8) std::array<std::uint64_t, 1> target{100};
    auto target_mr =
        loom::memory_region::register_memory(s.domain, std::as_writable_bytes(std::span{target}),
                                             loom::mr_access_flags::remote_read | loom::mr_access_flags::remote_write);
    ASSERT_TRUE(target_mr);
    auto remote = loom::remote_memory::from_mr(*target_mr);
    ASSERT_TRUE(remote);
    std::optional<std::uint64_t> seen;
    atomic_example(s.domain, s.ep, s.cq, s.self, *remote, seen);
    ASSERT_TRUE(seen) << "the example returned before its completion";
    EXPECT_EQ(*seen, 100u);
    EXPECT_EQ(target[0], 142u);
}

TEST(SpecExamples, rma_write_read_and_write_with_data_over_a_connected_endpoint) {
    core_test::connected_pair pair;
    ASSERT_EQ(pair.open("sockets", loom::capability::msg | loom::capability::rma | loom::capability::remote_read |
                                       loom::capability::remote_write),
              "");
    std::array<std::byte, 4096> target{};
    auto target_mr = loom::memory_region::register_memory(
        pair.server.dom, std::span{target}, loom::mr_access_flags::remote_read | loom::mr_access_flags::remote_write);
    ASSERT_TRUE(target_mr);
    auto remote = loom::remote_memory::from_mr(*target_mr);
    ASSERT_TRUE(remote);
    ASSERT_NO_FATAL_FAILURE(rma_example(pair.client.dom, pair.client.ep, pair.client.cq, remote->addr, remote->key));
    EXPECT_EQ(std::memcmp(target.data(), "Hello, RDMA!", 12), 0);
    // The write with data tells the target: an event carrying the immediate data.
    auto ev = core_test::next_event(pair.server.cq, std::chrono::seconds(2));
    if (!ev) {
        core_test::quirk("sockets", "a write with remote data raises no event at the target");
    } else {
        EXPECT_FALSE(ev->has_error());
        EXPECT_EQ(ev->data, 0xDEADBEEFu);
    }
}

TEST(SpecExamples, endpoint_options_query_the_connection_data_size) {
    core_test::connected_pair pair;
    ASSERT_EQ(pair.open("sockets", loom::capability::msg), "");
    auto& ep = pair.client.ep;
    // ---- the spec's snippet
    std::size_t bytes{}, length{sizeof(bytes)};
    auto queried =
        loom::get_endpoint_option(ep, loom::ep_opt::level_endpoint, loom::ep_opt::cm_data_size, &bytes, &length);
    // ----
    ASSERT_TRUE(queried) << outcome(queried.error());
    EXPECT_EQ(length, sizeof(bytes));
    EXPECT_GT(bytes, 0u) << "sockets carries connection data";
}

TEST(SpecExamples, mapping_a_raw_key_is_refused_where_no_provider_uses_raw_keys) {
    core_test::loop_stack s;
    ASSERT_NO_FATAL_FAILURE(core_test::must_open_loop("tcp;ofi_rxm", {}, s));
    auto& domain = s.domain;
    loom::raw_remote_memory received_metadata{.base_addr = 0x1000, .addr = 0x1000, .length = 4096, .key = {1, 2}};
    const long children = domain.open_children();
    // The snippet's call (its .value() would throw here: no provider available uses FI_MR_RAW).
    auto mapping = loom::mapped_remote_memory::map(domain, std::move(received_metadata));
    ASSERT_FALSE(mapping);
    EXPECT_EQ(outcome(mapping.error()), "not_supported");
    EXPECT_EQ(domain.open_children(), children) << "the refusal left a child of the domain";
}
