// MSG connection setup between two processes (a forked listener and the test as the
// connecting side) on tcp and sockets: connection data both ways, a message each way over the
// connection, shutdown seen by the listener; a rejected request with its data; every refusal
// of the set-up calls, before the provider is asked; and a queue that closes once the objects
// bound to it are closed.
#include <loom/loom.hpp>

#include <gtest/gtest.h>

#include "core_connection_support.hpp"
#include "core_support.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <string_view>

using namespace std::chrono_literals;
using core_test::outcome;
using namespace core_test;

namespace {

auto bytes(std::string_view s) -> std::span<const std::byte> { return std::as_bytes(std::span{s.data(), s.size()}); }
auto text(const std::vector<std::byte>& b) -> std::string {
    return {reinterpret_cast<const char*>(b.data()), b.size()};
}

/// The listener, in the child: exit code 0 when every step held, otherwise the step's number.
[[noreturn]] void listen_and_serve(const std::string& provider, int address_out, bool reject) {
    auto step = [](int n, bool ok) {
        if (!ok) ::_exit(n);
    };
    auto info = msg_info(provider);
    step(10, info.has_value());
    auto fab = loom::fabric::create(*info);
    step(11, fab.has_value());
    auto eq = loom::event_queue::create(*fab);
    step(12, eq.has_value());
    auto pep = loom::passive_endpoint::create(*fab, *info);
    step(13, pep.has_value());
    step(14, pep->bind(*eq).has_value() && pep->listen().has_value());
    auto me = pep->name();
    step(15, me.has_value());
    const auto raw = loom::to_raw(*me);
    const std::uint32_t n = static_cast<std::uint32_t>(raw.size());
    step(16, ::write(address_out, &n, sizeof n) == sizeof n &&
                 ::write(address_out, raw.data(), raw.size()) == static_cast<ssize_t>(raw.size()));
    auto req = next_of(*eq, loom::cm_event_kind::connreq, 10s);
    step(20, req && req->kind == loom::cm_event_kind::connreq && req->info.valid());
    step(21, text(req->data) == "hello, listener");
    if (reject) {
        step(22, pep->reject(*req, bytes("not today")).has_value());
        std::this_thread::sleep_for(500ms);  // the refusal reaches the peer before the listener goes
        ::_exit(0);
    }
    connection c;
    step(30, c.open(*fab, req->info, *eq).empty());
    std::array<std::byte, 64> in{};
    loom::request_context rctx, sctx;
    step(31, c.ep.recv(std::span{in}, &rctx).has_value());
    step(32, c.ep.accept(bytes("welcome")).has_value());
    auto up = next_of(*eq, loom::cm_event_kind::connected, 10s);
    step(33, up && up->kind == loom::cm_event_kind::connected && up->fid == &c.ep.native()->fid);
    std::size_t got = 0;
    step(34, completes(c.cq, &rctx, &got) && got == 4 && std::memcmp(in.data(), "ping", 4) == 0);
    step(35, c.ep.send(bytes("pong"), &sctx).has_value() && completes(c.cq, &sctx));
    auto down = next_of(*eq, loom::cm_event_kind::shutdown, 10s);
    step(36, down && down->kind == loom::cm_event_kind::shutdown);
    ::_exit(0);
}

struct listener {
    pid_t pid{-1};
    std::vector<std::byte> address;
    auto start(const std::string& provider, bool reject) -> bool {
        int fds[2];
        if (::pipe(fds) != 0) return false;
        pid = ::fork();
        if (pid == 0) {
            ::close(fds[0]);
            listen_and_serve(provider, fds[1], reject);
        }
        ::close(fds[1]);
        std::uint32_t n = 0;
        const bool ok = ::read(fds[0], &n, sizeof n) == sizeof n && n > 0 && n < 4096;
        if (ok) {
            address.resize(n);
            (void)!::read(fds[0], address.data(), n);
        }
        ::close(fds[0]);
        return ok;
    }
    /// The child's exit code (-1: killed or not started).
    auto finish() -> int {
        if (pid <= 0) return -1;
        int status = 0;
        ::waitpid(pid, &status, 0);
        pid = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    ~listener() {
        if (pid > 0) {
            ::kill(pid, SIGKILL);
            (void)finish();
        }
    }
};

/// The connecting side: its fabric, event queue and enabled endpoint.
struct client {
    loom::result<loom::fabric_info> info = loom::make_unexpected(loom::errc::other);
    loom::result<loom::fabric> fab = loom::make_unexpected(loom::errc::other);
    loom::result<loom::event_queue> eq = loom::make_unexpected(loom::errc::other);
    connection c;
    /// Opens everything and asks `l` for a connection with the listener's expected data.
    void connect_to(const std::string& provider, const listener& l) {
        info = msg_info(provider);
        ASSERT_TRUE(info);
        fab = loom::fabric::create(*info);
        ASSERT_TRUE(fab);
        eq = loom::event_queue::create(*fab);
        ASSERT_TRUE(eq);
        ASSERT_EQ(c.open(*fab, *info, *eq), "");
        ASSERT_EQ(outcome(c.ep.connect_raw(l.address, bytes("hello, listener"))), "ok");
    }
};

class Connection : public ::testing::TestWithParam<std::string> {};

/// What the single-process cases start from: tcp's MSG entry, its fabric, an event queue and a
/// passive endpoint bound to nothing yet (declared so that they close in the reverse order).
struct listener_objects {
    loom::result<loom::fabric_info> info = loom::make_unexpected(loom::errc::other);
    loom::result<loom::fabric> fab = loom::make_unexpected(loom::errc::other);
    loom::result<loom::event_queue> eq = loom::make_unexpected(loom::errc::other);
    loom::result<loom::passive_endpoint> pep = loom::make_unexpected(loom::errc::other);

    /// Empty on success, else the step that failed.
    auto open() -> std::string {
        info = msg_info("tcp");
        if (!info) return "msg_info: " + outcome(info.error());
        fab = loom::fabric::create(*info);
        if (!fab) return "fabric: " + outcome(fab.error());
        eq = loom::event_queue::create(*fab);
        if (!eq) return "event queue: " + outcome(eq.error());
        pep = loom::passive_endpoint::create(*fab, *info);
        if (!pep) return "passive endpoint: " + outcome(pep.error());
        return {};
    }
};

}  // namespace

TEST_P(Connection, connects_exchanges_data_and_shuts_down) {
    listener l;
    ASSERT_TRUE(l.start(GetParam(), false)) << "the listener published no address";
    client cl;
    ASSERT_NO_FATAL_FAILURE(cl.connect_to(GetParam(), l));
    auto& c = cl.c;
    auto up = next_of(*cl.eq, loom::cm_event_kind::connected, 10s);
    ASSERT_TRUE(up) << "no connected event";
    ASSERT_EQ(up->kind, loom::cm_event_kind::connected) << outcome(up->error) << " " << up->error_text;
    EXPECT_EQ(up->fid, &c.ep.native()->fid);
    EXPECT_EQ(text(up->data), "welcome") << "the accept's connection data";

    std::array<std::byte, 64> in{};
    loom::request_context rctx, sctx;
    ASSERT_EQ(outcome(c.ep.recv(std::span{in}, &rctx)), "ok");
    ASSERT_EQ(outcome(c.ep.send(bytes("ping"), &sctx)), "ok");
    EXPECT_TRUE(completes(c.cq, &sctx));
    std::size_t got = 0;
    EXPECT_TRUE(completes(c.cq, &rctx, &got));
    EXPECT_EQ(got, 4u);
    EXPECT_EQ(std::memcmp(in.data(), "pong", 4), 0);
    ASSERT_EQ(outcome(c.ep.shutdown()), "ok");
    EXPECT_EQ(l.finish(), 0) << "the listener's failing step";
}

TEST_P(Connection, a_rejected_request_reports_refusal_with_the_listeners_data) {
    listener l;
    ASSERT_TRUE(l.start(GetParam(), true));
    client cl;
    ASSERT_NO_FATAL_FAILURE(cl.connect_to(GetParam(), l));
    auto& c = cl.c;
    auto ev = next_of(*cl.eq, loom::cm_event_kind::error, 10s);
    ASSERT_TRUE(ev) << "no event after the rejection";
    ASSERT_EQ(ev->kind, loom::cm_event_kind::error);
    EXPECT_EQ(ev->error, make_error_code(loom::errc::connection_refused)) << ev->error.message();
    EXPECT_EQ(ev->fid, &c.ep.native()->fid);
    if (ev->data.empty())
        core_test::quirk(GetParam(), "a rejection carries no connection data");
    else
        EXPECT_EQ(text(ev->data), "not today");
    EXPECT_EQ(l.finish(), 0) << "the listener's failing step";
}

INSTANTIATE_TEST_SUITE_P(Providers, Connection, ::testing::Values("tcp", "sockets"),
                         [](const auto& p) { return p.param; });

TEST(ConnectionRefusals, calls_out_of_order_or_on_the_wrong_object_are_refused) {
    listener_objects objects;
    ASSERT_EQ(objects.open(), "");
    auto& [info, fab, eq, pep] = objects;
    EXPECT_EQ(outcome(pep->listen()), "bad_state") << "requests need a queue";
    ASSERT_EQ(outcome(pep->bind(*eq)), "ok");
    EXPECT_EQ(outcome(pep->bind(*eq)), "bad_state");
    EXPECT_EQ(outcome(pep->reject(loom::cm_event{})), "bad_state") << "not listening";
    ASSERT_EQ(outcome(pep->listen()), "ok");
    EXPECT_EQ(outcome(pep->reject(loom::cm_event{})), "invalid_argument") << "not a request";
    EXPECT_EQ(outcome(eq->close()), "busy") << "a listener is bound to it";

    connection c;
    auto d = loom::domain::create(*fab, *info);
    ASSERT_TRUE(d);
    c.dom = std::move(*d);
    auto e = loom::endpoint::create(c.dom, *info);
    ASSERT_TRUE(e);
    c.ep = std::move(*e);
    const std::array<std::byte, 16> somewhere{std::byte{2}};
    EXPECT_EQ(outcome(c.ep.connect_raw(somewhere)), "bad_state") << "before enable";
    EXPECT_EQ(outcome(c.ep.accept()), "bad_state");
    EXPECT_EQ(outcome(c.ep.connect_raw({})), "invalid_argument");
    ASSERT_EQ(outcome(c.ep.bind_eq(*eq)), "ok");
    EXPECT_EQ(outcome(c.ep.bind_eq(*eq)), "bad_state");

    // An event queue of another fabric, a passive endpoint of an RDM configuration.
    auto other_fab = loom::fabric::create(*info);
    ASSERT_TRUE(other_fab);
    auto other_eq = loom::event_queue::create(*other_fab);
    ASSERT_TRUE(other_eq);
    auto pep2 = loom::passive_endpoint::create(*fab, *info);
    ASSERT_TRUE(pep2);
    EXPECT_EQ(outcome(pep2->bind(*other_eq)), "invalid_argument");
    auto rdm = loom::query_fabric(
        {.capabilities = loom::capability::msg, .ep_type = loom::endpoint_types::rdm, .provider = "tcp"});
    ASSERT_TRUE(rdm);
    EXPECT_EQ(outcome(loom::passive_endpoint::create(*fab, *rdm)), "invalid_argument");

    // RDM endpoints have no connections.
    core_test::loop_stack s;
    ASSERT_NO_FATAL_FAILURE(core_test::must_open_loop("tcp", core_test::loop_options{}, s));
    auto rdm_eq = loom::event_queue::create(s.fabric);
    ASSERT_TRUE(rdm_eq);
    EXPECT_EQ(outcome(s.ep.connect_raw(somewhere)), "invalid_argument");
    EXPECT_EQ(outcome(s.ep.shutdown()), "invalid_argument");

    // Queue attributes and waiting.
    EXPECT_EQ(outcome(loom::event_queue::create(*fab, {.wait = static_cast<loom::wait_object>(42)})),
              "invalid_argument");
    auto polled = loom::event_queue::create(*fab, {.wait = loom::wait_object::none});
    ASSERT_TRUE(polled);
    EXPECT_EQ(outcome(polled->wait(1ms)), "not_supported");
    auto nothing = polled->read();
    ASSERT_TRUE(nothing);
    EXPECT_FALSE(nothing->has_value());
    auto quiet = other_eq->wait(10ms);
    ASSERT_TRUE(quiet);
    EXPECT_FALSE(quiet->has_value()) << "a timeout is no event and no error";
    loom::event_queue empty;
    EXPECT_EQ(outcome(empty.read()), "bad_state");
}

TEST(ConnectionClose, closing_the_bound_listener_and_endpoint_lets_their_queue_close) {
    listener_objects objects;
    ASSERT_EQ(objects.open(), "");
    auto& [info, fab, eq, pep] = objects;
    ASSERT_EQ(outcome(pep->bind(*eq)), "ok");
    connection c;
    ASSERT_EQ(c.open(*fab, *info, *eq), "");
    EXPECT_EQ(outcome(eq->close()), "busy") << "a listener and an endpoint are bound to it";
    ASSERT_EQ(outcome(pep->close()), "ok");
    EXPECT_EQ(outcome(eq->close()), "busy") << "the endpoint is still open";
    ASSERT_EQ(outcome(c.ep.close()), "ok");
    EXPECT_EQ(outcome(eq->close()), "ok") << "closed objects still counted as bound";
    EXPECT_EQ(outcome(c.cq.close()), "ok");
    EXPECT_EQ(outcome(c.dom.close()), "ok");
    EXPECT_EQ(outcome(fab->close()), "ok");
}
