// In-process completion-queue checks: empty queues (wait/read/poll), format validation, and
// the fields each cq_format carries for a loopback message.
#include "core_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <ostream>
#include <tuple>

using namespace core_test;
using namespace std::chrono_literals;

namespace {

constexpr auto base_caps = loom::capability::msg | loom::capability::tagged;

// ================================================================ empty queues
class core_cq : public ::testing::TestWithParam<std::string> {};

void expect_empty_wait_times_out(loom::completion_queue& cq) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = cq.wait(50ms);
    const auto waited = std::chrono::steady_clock::now() - t0;
    EXPECT_EQ(outcome(r), "timed_out");
    EXPECT_GE(waited, 45ms);
    EXPECT_LT(waited, 2s);
    std::array<loom::completion_event, 4> evs;
    auto n = cq.read(evs);
    ASSERT_TRUE(n) << outcome(n.error());
    EXPECT_EQ(*n, 0u);
    EXPECT_FALSE(cq.poll().has_value());
}

TEST_P(core_cq, empty_queue_times_out_without_wait_object) {
    auto st = loom_test::open_stack(GetParam(), base_caps);
    ASSERT_TRUE(st) << outcome(st.error());
    auto cq = loom::completion_queue::create(st->domain, {.size = 32, .wait_obj = false});
    ASSERT_TRUE(cq) << outcome(cq.error());
    EXPECT_FALSE(cq->attributes().wait_obj);
    expect_empty_wait_times_out(*cq);
    // The stack's own (bound, idle) queue too.
    expect_empty_wait_times_out(st->cq);
}

TEST_P(core_cq, empty_queue_times_out_with_wait_object) {
    auto st = loom_test::open_stack(GetParam(), base_caps);
    ASSERT_TRUE(st) << outcome(st.error());
    auto cq = loom::completion_queue::create(st->domain, {.size = 32, .wait_obj = true});
    if (!cq) {
        quirk(GetParam(), "cq with wait object -> " + outcome(cq.error()));
        GTEST_SKIP() << "no CQ wait object: " << outcome(cq.error());
    }
    EXPECT_TRUE(cq->attributes().wait_obj);
    expect_empty_wait_times_out(*cq);
}

/// Posts with `post` until the provider accepts it; a busy provider asks for progress, driven by
/// reading `cq`, which must stay empty (nothing can complete before the send is accepted).
template <class Post>
auto post_retrying(loom::completion_queue& cq, Post post) -> std::string {
    std::array<loom::completion_event, 4> scratch;
    loom::void_result sent;
    for (int i = 0; i < 2000; ++i) {
        sent = post();
        if (sent || !loom::is_again(sent.error())) break;
        auto n = cq.read(scratch);
        if (!n || *n != 0) return "completion before the send was accepted";
    }
    return outcome(sent);
}

TEST_P(core_cq, wait_object_queue_delivers_a_loopback_completion) {
    std::array<std::byte, 16> out{}, in{};
    loom::request_context rctx, sctx;
    loop_stack s;
    const auto err = open_loop(GetParam(), {.cq = {.size = 64, .wait_obj = true}}, s);
    if (err.rfind("cq:", 0) == 0) GTEST_SKIP() << "no CQ wait object: " << err;
    ASSERT_TRUE(err.empty()) << err;
    loom_test::fill_pattern(out, 12);
    ASSERT_EQ(outcome(s.ep.recv(in, loom::fabric_addrs::unspecified, nullptr, &rctx)), "ok");
    // The first send may ask for progress (again); nothing can complete before it is accepted.
    loom::void_result sent;
    for (int i = 0; i < 2000; ++i) {
        sent = s.ep.send(out, s.self, nullptr, &sctx);
        if (sent || !loom::is_again(sent.error())) break;
        auto early = s.cq.wait(1ms);  // drives progress through the wait object
        ASSERT_FALSE(early.has_value()) << "completion before the send was accepted";
    }
    ASSERT_EQ(outcome(sent), "ok");
    bool got_recv = false, got_send = false;
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while ((!got_recv || !got_send) && std::chrono::steady_clock::now() < deadline) {
        auto ev = s.cq.wait(100ms);
        if (!ev) {
            ASSERT_EQ(outcome(ev.error()), "timed_out");
            continue;
        }
        ASSERT_FALSE(ev->has_error()) << outcome(ev->error) << " " << ev->error_text;
        if (ev->context == &rctx) {
            got_recv = true;
            EXPECT_EQ(ev->bytes_transferred, out.size());
        } else if (ev->context == &sctx) {
            got_send = true;
        } else {
            ADD_FAILURE() << "completion with an unknown context";
        }
    }
    EXPECT_TRUE(got_recv);
    EXPECT_TRUE(got_send);
    EXPECT_EQ(in, out);
}

// read() reuses the caller's events in place: an event that carried an error entry (here a
// truncated receive) comes back without any of the error's fields when a later read() fills it
// with a successful completion.
TEST_P(core_cq, a_reused_event_loses_the_error_it_carried) {
    std::array<std::byte, 64> out{}, big{};
    std::array<std::byte, 8> small{};
    loom::request_context r1, r2, s1, s2;
    loop_stack s;
    must_open_loop(GetParam(), {.cq = {.size = 64}}, s);
    loom_test::fill_pattern(out, 5);
    std::array<loom::completion_event, 4> evs;
    auto send = [&](loom::request_context& ctx) {
        return post_retrying(s.cq, [&] { return s.ep.send(out, s.self, nullptr, &ctx); });
    };
    // Reads until `ctx` completed; true when it completed with an error (left in evs[0]).
    auto until = [&](const void* ctx, bool& failed) -> bool {
        const auto deadline = std::chrono::steady_clock::now() + 5s;
        while (std::chrono::steady_clock::now() < deadline) {
            auto n = s.cq.read(evs);
            if (!n) {
                ADD_FAILURE() << "read: " << outcome(n.error());
                return false;
            }
            for (std::size_t i = 0; i < *n; ++i) {
                // Only the truncated receive may fail; a stale error on any other event is a bug.
                if (evs[i].context != &r1) {
                    EXPECT_FALSE(evs[i].has_error()) << i << ": " << outcome(evs[i].error);
                }
                if (!evs[i].has_error()) {
                    EXPECT_EQ(evs[i].provider_errno, 0) << i;
                    EXPECT_EQ(evs[i].overflow_length, 0u) << i;
                    EXPECT_TRUE(evs[i].error_text.empty()) << i << ": " << evs[i].error_text;
                }
                if (evs[i].context == ctx) {
                    failed = evs[i].has_error();
                    if (failed) {
                        EXPECT_EQ(i, 0u) << "an error entry comes back alone, first";
                    }
                    return true;
                }
            }
        }
        ADD_FAILURE() << "no completion";
        return false;
    };
    ASSERT_EQ(outcome(s.ep.recv(small, loom::fabric_addrs::unspecified, nullptr, &r1)), "ok");
    ASSERT_EQ(send(s1), "ok");
    bool failed = false;
    ASSERT_TRUE(until(&r1, failed));
    if (!failed) GTEST_SKIP() << GetParam() << " reports no truncation error";
    ASSERT_TRUE(evs[0].has_error());
    EXPECT_GT(evs[0].overflow_length + static_cast<std::size_t>(!evs[0].error_text.empty()), 0u);
    // The next completions land in the same events: the error's fields are gone.
    ASSERT_EQ(outcome(s.ep.recv(big, loom::fabric_addrs::unspecified, nullptr, &r2)), "ok");
    ASSERT_EQ(send(s2), "ok");
    ASSERT_TRUE(until(&r2, failed));
    EXPECT_FALSE(failed);
    EXPECT_TRUE(std::equal(out.begin(), out.end(), big.begin()));
}

// read_tagged: the provider's entries land in the caller's array as they are (typed
// accessors over fi_cq_tagged_entry); an error entry stops it with error_available and read()
// then returns that entry with its details; queues it cannot serve are refused up front.
TEST_P(core_cq, read_tagged_reads_entries_in_place_and_leaves_errors_to_read) {
    std::array<std::byte, 64> out{}, big{};
    std::array<std::byte, 8> small{};
    loom::request_context r1, r2, s1, s2;
    loop_stack s;
    must_open_loop(GetParam(), {.cq = {.size = 64}}, s);
    loom_test::fill_pattern(out, 9);
    std::array<loom::tagged_completion, 4> tc;
    auto empty = s.cq.read_tagged(tc);
    ASSERT_TRUE(empty) << outcome(empty.error());
    EXPECT_EQ(*empty, 0u);
    EXPECT_EQ(*s.cq.read_tagged(std::span<loom::tagged_completion>{}), 0u);
    auto send = [&](loom::request_context& ctx) {
        return post_retrying(s.cq, [&] { return s.ep.tagged_send(out, 0x77, s.self, nullptr, &ctx); });
    };
    // A good message: receive and send completions come back in place.
    ASSERT_EQ(outcome(s.ep.tagged_recv(big, 0x77, 0, loom::fabric_addrs::unspecified, nullptr, &r1)), "ok");
    ASSERT_EQ(send(s1), "ok");
    bool got_recv = false, got_send = false;
    for (auto deadline = std::chrono::steady_clock::now() + 5s;
         (!got_recv || !got_send) && std::chrono::steady_clock::now() < deadline;) {
        auto n = s.cq.read_tagged(tc);
        ASSERT_TRUE(n) << outcome(n.error());
        for (std::size_t i = 0; i < *n; ++i) {
            if (tc[i].request() == &r1) {
                got_recv = true;
                EXPECT_EQ(tc[i].bytes_transferred(), out.size());
                EXPECT_EQ(tc[i].tag(), 0x77u);
                EXPECT_TRUE(tc[i].flags().any(loom::op_flag::recv));
                EXPECT_EQ(tc[i].native().len, out.size());
            } else if (tc[i].context() == static_cast<void*>(&s1)) {
                got_send = true;
                EXPECT_TRUE(tc[i].flags().any(loom::op_flag::send));
            } else {
                ADD_FAILURE() << "completion with an unknown context";
            }
        }
    }
    EXPECT_TRUE(got_recv && got_send);
    EXPECT_TRUE(std::equal(out.begin(), out.end(), big.begin()));
    // A truncated receive: read_tagged reports error_available, read() delivers the entry.
    ASSERT_EQ(outcome(s.ep.tagged_recv(small, 0x77, 0, loom::fabric_addrs::unspecified, nullptr, &r2)), "ok");
    ASSERT_EQ(send(s2), "ok");
    bool saw_error = false;
    for (auto deadline = std::chrono::steady_clock::now() + 5s;
         !saw_error && std::chrono::steady_clock::now() < deadline;) {
        auto n = s.cq.read_tagged(tc);
        if (!n) {
            ASSERT_EQ(outcome(n.error()), "error_available");
            std::array<loom::completion_event, 2> evs;
            auto m = s.cq.read(evs);
            ASSERT_TRUE(m) << outcome(m.error());
            ASSERT_EQ(*m, 1u);
            EXPECT_TRUE(evs[0].has_error());
            EXPECT_EQ(evs[0].context, static_cast<void*>(&r2));
            saw_error = true;
        } else if (std::any_of(tc.begin(), tc.begin() + static_cast<std::ptrdiff_t>(*n),
                               [&](const auto& c) { return c.context() == static_cast<void*>(&r2); })) {
            GTEST_SKIP() << GetParam() << " reports no truncation error";
        }
    }
    EXPECT_TRUE(saw_error);
}

TEST_P(core_cq, read_tagged_refuses_queues_it_cannot_serve) {
    auto st = loom_test::open_stack(GetParam(), base_caps);
    ASSERT_TRUE(st) << outcome(st.error());
    std::array<loom::tagged_completion, 2> tc;
    for (auto f : {loom::cq_format::context, loom::cq_format::msg, loom::cq_format::data}) {
        auto cq = loom::completion_queue::create(st->domain, {.size = 16, .format = f});
        ASSERT_TRUE(cq) << outcome(cq.error());
        EXPECT_EQ(outcome(cq->read_tagged(tc)), "invalid_argument") << static_cast<int>(f);
    }
    loom::completion_queue closed;
    EXPECT_EQ(outcome(closed.read_tagged(tc)), "bad_state");
    // The fast reads go through a gate set at create and close: a tagged queue that was moved
    // from or closed refuses (bad_state) instead of handing the provider a stale handle, and the
    // queue it moved to reads.
    auto cq = loom::completion_queue::create(st->domain, {.size = 16});
    ASSERT_TRUE(cq) << outcome(cq.error());
    loom::completion_queue moved = std::move(*cq);
    std::array<loom::completion_event, 2> ev;
    EXPECT_EQ(outcome(cq->read_tagged(tc)), "bad_state");
    EXPECT_EQ(outcome(cq->read(ev)), "bad_state");
    EXPECT_EQ(outcome(moved.read_tagged(tc)), "ok");
    EXPECT_EQ(outcome(moved.read(ev)), "ok");
    ASSERT_EQ(outcome(moved.close()), "ok");
    EXPECT_EQ(outcome(moved.read_tagged(tc)), "bad_state");
    EXPECT_EQ(outcome(moved.read(ev)), "bad_state");
}

TEST_P(core_cq, out_of_range_formats_are_invalid) {
    auto st = loom_test::open_stack(GetParam(), base_caps);
    ASSERT_TRUE(st) << outcome(st.error());
    for (int f : {0, 5, -1, 99, 1 << 20}) {
        auto cq = loom::completion_queue::create(st->domain, {.format = static_cast<loom::cq_format>(f)});
        EXPECT_EQ(outcome(cq), "invalid_argument") << "format " << f;
    }
    for (int f = 1; f <= 4; ++f) {
        auto cq = loom::completion_queue::create(st->domain, {.size = 16, .format = static_cast<loom::cq_format>(f)});
        EXPECT_EQ(outcome(cq), "ok") << "format " << f;
        if (cq) {
            EXPECT_EQ(static_cast<int>(cq->format()), f);
        }
    }
    loom::domain none;
    EXPECT_EQ(outcome(loom::completion_queue::create(none)), "invalid_argument");
    loom::completion_queue closed;
    std::array<loom::completion_event, 1> evs;
    EXPECT_EQ(outcome(closed.read(evs)), "bad_state");
    EXPECT_EQ(outcome(closed.wait(1ms)), "bad_state");
}

INSTANTIATE_TEST_SUITE_P(providers, core_cq, ::testing::ValuesIn(providers()), param_name);

// ================================================================ formats
class core_cq_format : public ::testing::TestWithParam<std::tuple<std::string, loom::cq_format>> {};

TEST_P(core_cq_format, loopback_event_carries_the_format_fields) {
    const auto& [provider, fmt] = GetParam();
    constexpr std::uint64_t imm = 0x55667788;  // fits a 4-byte cq_data_size too
    constexpr std::uint64_t tag = 0xBEEF;
    std::array<std::byte, 48> out{}, in{}, tin{};
    loom::request_context rctx, sctx, trctx, tsctx;
    loop_stack s;
    ASSERT_NO_FATAL_FAILURE(must_open_loop(provider, {.cq = {.size = 64, .format = fmt}}, s));
    ASSERT_EQ(s.cq.format(), fmt);
    const auto dattr = s.info.get_domain_attr();
    ASSERT_TRUE(dattr.has_value());
    ASSERT_GE(dattr->cq_data_size, 4u) << "provider carries no remote CQ data";
    loom_test::progress prog(s.cq);
    loom_test::fill_pattern(out, 77);

    // A message with remote CQ data.
    ASSERT_EQ(outcome(s.ep.recv(in, loom::fabric_addrs::unspecified, nullptr, &rctx)), "ok");
    ASSERT_EQ(outcome(prog.retry([&] { return s.ep.senddata(out, imm, s.self, nullptr, &sctx); }, 2s)), "ok");
    auto rev = completed(prog, &rctx);
    auto sev = completed(prog, &sctx);
    EXPECT_EQ(rev.context, static_cast<void*>(&rctx));
    EXPECT_EQ(sev.context, static_cast<void*>(&sctx));
    EXPECT_EQ(in, out);
    switch (fmt) {
        case loom::cq_format::context:
            // Only the context: everything else keeps its default.
            EXPECT_EQ(rev.bytes_transferred, 0u);
            EXPECT_TRUE(rev.flags.empty());
            EXPECT_EQ(rev.data, 0u);
            break;
        case loom::cq_format::msg:
            EXPECT_EQ(rev.bytes_transferred, out.size());
            EXPECT_TRUE(rev.flags.has(loom::op_flag::recv)) << loom::to_string(rev.flags);
            EXPECT_TRUE(rev.flags.has(loom::op_flag::msg)) << loom::to_string(rev.flags);
            EXPECT_TRUE(sev.flags.has(loom::op_flag::send)) << loom::to_string(sev.flags);
            EXPECT_EQ(rev.data, 0u);  // not carried by fi_cq_msg_entry
            break;
        case loom::cq_format::data:
        case loom::cq_format::tagged:
            EXPECT_EQ(rev.bytes_transferred, out.size());
            EXPECT_TRUE(rev.flags.has(loom::op_flag::recv)) << loom::to_string(rev.flags);
            EXPECT_TRUE(rev.flags.has(loom::op_flag::remote_cq_data)) << loom::to_string(rev.flags);
            EXPECT_EQ(rev.data, imm);
            EXPECT_TRUE(sev.flags.has(loom::op_flag::send)) << loom::to_string(sev.flags);
            EXPECT_EQ(rev.tag, 0u);
            break;
    }

    // A tagged message with data: the tag comes back only in the tagged format.
    ASSERT_EQ(outcome(s.ep.tagged_recv(tin, tag, 0, &trctx)), "ok");
    ASSERT_EQ(outcome(prog.retry([&] { return s.ep.tagged_senddata(out, tag, imm + 1, s.self, nullptr, &tsctx); }, 2s)),
              "ok");
    auto trev = completed(prog, &trctx);
    (void)completed(prog, &tsctx);
    EXPECT_EQ(tin, out);
    if (fmt == loom::cq_format::tagged) {
        EXPECT_EQ(trev.tag, tag);
        EXPECT_EQ(trev.data, imm + 1);
        EXPECT_EQ(trev.bytes_transferred, out.size());
        EXPECT_TRUE(trev.flags.has(loom::op_flag::tagged)) << loom::to_string(trev.flags);
    } else {
        EXPECT_EQ(trev.tag, 0u);
    }
    if (fmt == loom::cq_format::data) {
        EXPECT_EQ(trev.data, imm + 1);
    }
}

auto format_name(loom::cq_format f) -> std::string {
    switch (f) {
        case loom::cq_format::context: return "context";
        case loom::cq_format::msg: return "msg";
        case loom::cq_format::data: return "data";
        case loom::cq_format::tagged: return "tagged";
    }
    return "unknown";
}

}  // namespace

namespace loom {
// gtest prints parameters through PrintTo found by argument-dependent lookup.
inline void PrintTo(cq_format f, std::ostream* os) { *os << format_name(f); }
}  // namespace loom

namespace {

INSTANTIATE_TEST_SUITE_P(providers, core_cq_format,
                         ::testing::Combine(::testing::ValuesIn(providers()),
                                            ::testing::Values(loom::cq_format::context, loom::cq_format::msg,
                                                              loom::cq_format::data, loom::cq_format::tagged)),
                         [](const auto& info) {
                             return safe_name(std::get<0>(info.param)) + "_" + format_name(std::get<1>(info.param));
                         });

}  // namespace
