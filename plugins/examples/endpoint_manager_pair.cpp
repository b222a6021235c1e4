// Two processes talking through the plugin runtime's endpoint manager alone — what a program
// (or a fourth host adaptor) built on loom's runtime starts from.
//
// The parent opens a receive endpoint and registers a buffer for one-sided writes; it hands
// the endpoint's address and the buffer's remote key to its child through a pipe (any
// out-of-band channel does: a file, MPI, a key-value store). The child connects a buffered
// send endpoint (many small messages, coalesced) and a zero-copy one (large registered
// buffers with a header), writes into the parent's buffer with immediate data, and where the
// provider has native atomics adds to a counter there. Both check everything they receive.
//
//   LOOM_PROVIDER=tcp ./loom-example-endpoint-manager      (or shm, tcp;ofi_rxm, ...)
#include <loom/plugins/endpoint_manager.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace lp = loom::plugins;
using namespace std::chrono_literals;

namespace {

constexpr int small_messages = 1000;
constexpr int large_messages = 4;
constexpr std::size_t large_size = std::size_t{256} * 1024;
constexpr std::size_t target_size = std::size_t{64} * 1024;  // the one-sided target: data, then a counter
constexpr std::size_t counter_offset = target_size - 8;
constexpr std::uint64_t write_tag = 42;

auto fill(std::size_t i, int seed) -> std::byte {
    return static_cast<std::byte>((i * 7 + static_cast<std::size_t>(seed) * 13) & 0xff);
}

/// prefix + i (GCC 12 at -O3 raises a false -Wrestrict in "text" + std::to_string(i)).
auto numbered(std::string_view prefix, int i) -> std::string {
    std::string s(prefix);
    s += std::to_string(i);
    return s;
}

auto fail(const char* what, std::error_code ec = {}) -> int {
    std::fprintf(stderr, "[%d] %s%s%s\n", static_cast<int>(::getpid()), what, ec ? ": " : "",
                 ec ? ec.message().c_str() : "");
    return 1;
}

/// poll() until `done` or 30 s.
template <class F>
auto poll_until(lp::endpoint_manager& m, F&& done) -> bool {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        m.poll();
    }
    return true;
}

auto run_receiver(int to_child, pid_t child) -> int {
    int small_seen = 0, large_seen = 0, writes_seen = 0, errors = 0, closed = 0;
    bool atomics_done = false;
    auto mgr = lp::endpoint_manager::create({.on_event = [&](const lp::event& e) {
        switch (e.kind) {
            case lp::event_kind::message:
                if (!e.header.empty()) {  // zero-copy: the header names the message
                    const int n = e.header[0] == std::byte{'Z'} ? static_cast<int>(e.header[1]) : -1;
                    bool ok = n == large_seen && e.data.size() == large_size;
                    for (std::size_t i = 0; ok && i < e.data.size(); ++i) ok = e.data[i] == fill(i, n);
                    large_seen += ok ? 1 : 0;
                    errors += ok ? 0 : 1;
                } else if (std::string_view(reinterpret_cast<const char*>(e.data.data()), e.data.size()) ==
                           "atomics done") {
                    atomics_done = true;
                } else {
                    const std::string want = numbered("message ", small_seen);
                    const bool ok =
                        std::string_view(reinterpret_cast<const char*>(e.data.data()), e.data.size()) == want;
                    small_seen += ok ? 1 : 0;
                    errors += ok ? 0 : 1;
                }
                break;
            case lp::event_kind::remote_write: writes_seen += e.value == write_tag ? 1 : 0; break;
            case lp::event_kind::peer_connected: break;
            case lp::event_kind::peer_closed: ++closed; break;  // each send endpoint's goodbye, after its messages
            default:
                ++errors;
                std::fprintf(stderr, "receiver: event %d: %s\n", static_cast<int>(e.kind), e.error.message().c_str());
        }
    }});
    if (!mgr) return fail("receiver: create", mgr.error());
    auto& m = **mgr;
    auto rx = m.open_receive_endpoint({.mode = lp::receive_mode::pool, .buffer_size = large_size, .buffer_count = 4});
    if (!rx) return fail("receiver: open_receive_endpoint", rx.error());
    std::vector<std::byte> target(target_size);
    auto mh = m.register_memory(target);
    if (!mh) return fail("receiver: register_memory", mh.error());
    auto addr = m.address_of(*rx);
    auto key = m.remote_key_of(*mh);
    if (!addr || !key) return fail("receiver: address or key");
    if (::write(to_child, addr->data(), addr->size()) != static_cast<ssize_t>(addr->size()) ||
        ::write(to_child, key->data(), key->size()) != static_cast<ssize_t>(key->size()))
        return fail("receiver: pipe");
    const bool atomics = m.supports_atomics();
    const bool all = poll_until(m, [&] {
        return errors > 0 || (small_seen == small_messages && large_seen == large_messages && writes_seen == 1 &&
                              (!atomics || atomics_done) && closed == 2);
    });
    bool written = true;
    for (std::size_t i = 0; i < 4096; ++i) written = written && target[i] == fill(i, 99);
    std::uint64_t counter = 0;
    std::memcpy(&counter, target.data() + counter_offset, 8);
    int status = 0;
    ::waitpid(child, &status, 0);
    std::printf(
        "receiver: %d/%d buffered, %d/%d zero-copy, %d write(s) with data, written bytes %s, counter %llu (%s), "
        "%d goodbyes, child %s\n",
        small_seen, small_messages, large_seen, large_messages, writes_seen, written ? "right" : "WRONG",
        static_cast<unsigned long long>(counter), atomics ? "native atomics" : "no native atomics here", closed,
        WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "ok" : "FAILED");
    m.deregister(*mh);
    const bool counter_ok = !atomics || counter == 12;
    return all && errors == 0 && written && counter_ok && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

/// Many small messages, copied and coalesced (many per network message), then flushed.
auto send_small_messages(lp::endpoint_manager& m, lp::send_endpoint_id ep) -> int {
    for (int i = 0; i < small_messages; ++i) {
        const std::string text = numbered("message ", i);
        while (true) {
            auto r = m.send(ep, std::as_bytes(std::span{text.data(), text.size()}));
            if (r) break;
            if (r.error() != loom::make_error_code(loom::errc::again)) return fail("sender: send", r.error());
            m.poll();  // every buffer in flight: let some come back
        }
    }
    return m.flush(ep) ? 0 : fail("sender: flush");
}

/// The large messages, each from its own registered buffer (kept in `regs` until the end).
auto send_large_messages(lp::endpoint_manager& m, lp::send_endpoint_id ep, std::vector<std::vector<std::byte>>& large,
                         std::vector<lp::memory_handle*>& regs) -> int {
    for (int n = 0; n < large_messages; ++n) {
        auto& buffer = large[static_cast<std::size_t>(n)];
        for (std::size_t i = 0; i < large_size; ++i) buffer[i] = fill(i, n);
        auto mh = m.register_memory(buffer);
        if (!mh) return fail("sender: register_memory", mh.error());
        regs.push_back(*mh);
        const std::array header{std::byte{'Z'}, static_cast<std::byte>(n)};
        while (true) {  // two header slots: at most two in flight
            auto r = m.send(ep, buffer, *mh, header);
            if (r) break;
            if (r.error() != loom::make_error_code(loom::errc::again)) return fail("sender: zero-copy send", r.error());
            m.poll();
        }
    }
    return 0;
}

auto run_sender(int from_parent) -> int {
    lp::handle_bytes addr{};
    lp::remote_key_bytes key{};
    if (::read(from_parent, addr.data(), addr.size()) != static_cast<ssize_t>(addr.size()) ||
        ::read(from_parent, key.data(), key.size()) != static_cast<ssize_t>(key.size()))
        return fail("sender: pipe");
    int connected = 0, completions = 0, writes = 0, atomics_seen = 0, errors = 0;
    auto mgr = lp::endpoint_manager::create({.on_event = [&](const lp::event& e) {
        switch (e.kind) {
            case lp::event_kind::connected: ++connected; break;
            case lp::event_kind::send_complete: e.error ? ++errors : ++completions; break;
            case lp::event_kind::write_complete: e.error ? ++errors : ++writes; break;
            case lp::event_kind::atomic_complete: e.error ? ++errors : ++atomics_seen; break;
            default:
                ++errors;
                std::fprintf(stderr, "sender: event %d: %s\n", static_cast<int>(e.kind), e.error.message().c_str());
        }
    }});
    if (!mgr) return fail("sender: create", mgr.error());
    auto& m = **mgr;
    auto buffered =
        m.open_send_endpoint(addr, {.mode = lp::send_mode::buffered, .buffer_size = 8192, .buffer_count = 8});
    auto zero_copy = m.open_send_endpoint(addr, {.mode = lp::send_mode::zero_copy, .buffer_count = 2});
    if (!buffered || !zero_copy) return fail("sender: open_send_endpoint");
    if (!poll_until(m, [&] { return connected == 2 || errors > 0; }) || errors > 0) return fail("sender: connect");

    if (const int rc = send_small_messages(m, *buffered); rc != 0) return rc;
    std::vector<std::vector<std::byte>> large(large_messages, std::vector<std::byte>(large_size));
    std::vector<lp::memory_handle*> regs;
    if (const int rc = send_large_messages(m, *zero_copy, large, regs); rc != 0) return rc;

    std::vector<std::byte> source(4096);
    for (std::size_t i = 0; i < source.size(); ++i) source[i] = fill(i, 99);
    auto smh = m.register_memory(source);
    if (!smh) return fail("sender: register_memory", smh.error());
    if (auto w = m.write(*zero_copy, source, *smh, key, 0, write_tag); !w) return fail("sender: write", w.error());
    std::array<std::uint64_t, 2> previous{99, 99};
    const bool atomics = m.supports_atomics();
    if (atomics) {
        if (!m.fetch_add(*zero_copy, 5, &previous[0], key, counter_offset) ||
            !poll_until(m, [&] { return atomics_seen == 1 || errors > 0; }) ||
            !m.fetch_add(*zero_copy, 7, &previous[1], key, counter_offset))
            return fail("sender: fetch_add");
    }
    if (!poll_until(m, [&] {
            return errors > 0 || (completions == large_messages && writes == 1 && atomics_seen == (atomics ? 2 : 0));
        }))
        return fail("sender: completions");
    if (atomics) {
        if (previous[0] != 0 || previous[1] != 5) return fail("sender: fetch_add returned the wrong old values");
        const std::string_view done = "atomics done";
        if (!m.send(*buffered, std::as_bytes(std::span{done.data(), done.size()})) || !m.flush(*buffered))
            return fail("sender: send");
    }
    auto free_now = m.available_buffers(*zero_copy);
    std::printf(
        "sender: %d zero-copy sends complete, %d write, %d atomics, fewest header slots free since opening: %zu\n",
        completions, writes, atomics_seen, free_now ? *free_now : 0);
    if (!m.close_send_endpoint(*buffered) || !m.close_send_endpoint(*zero_copy)) return fail("sender: close");
    for (auto* r : regs) m.deregister(r);
    m.deregister(*smh);
    return errors == 0 ? 0 : 1;
}

}  // namespace

int main() {
    int fds[2];
    if (::pipe(fds) != 0) return fail("pipe");
    const pid_t child = ::fork();
    if (child < 0) return fail("fork");
    if (child == 0) {
        ::close(fds[1]);
        ::alarm(60);  // never hang a test run
        const int rc = run_sender(fds[0]);
        std::fflush(stdout);
        ::_exit(rc);
    }
    ::close(fds[0]);
    ::alarm(90);
    return run_receiver(fds[1], child);
}
