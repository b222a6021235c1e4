// loom-test-peer: the remote side of the two-process integration tests. It opens the
// provider given on the command line, exchanges addresses with the test over the socket
// it inherited, then executes the test's commands (see harness.hpp) until told to quit.
#include "harness.hpp"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

using namespace loom_test;
using namespace std::chrono_literals;

namespace {

constexpr auto io_timeout = 60s;
constexpr auto op_timeout = 30s;

struct slot {
    loom::request_context ctx;
    bool posted{false};
    bool multi{false};
};

class peer {
public:
    peer(stack& s, int fd, std::span<std::byte> recv_area, std::span<std::byte> send_area, loom::memory_region& recv_mr,
         loom::memory_region& send_mr)
        : s_(s),
          prog_(s.cq),
          fd_(fd),
          recv_area_(recv_area),
          send_area_(send_area),
          recv_mr_(recv_mr),
          send_mr_(send_mr) {}

    void add_peer(loom::fabric_addr a) { peers_.push_back(a); }

    auto run() -> int {
        for (;;) {
            command c;
            if (!prog_.read_fd(fd_, &c, sizeof c, io_timeout)) return 3;
            if (c.code == op::quit) return 0;
            reply r = execute(c);
            if (!write_all(fd_, &r, sizeof r)) return 4;
        }
    }

private:
    auto slot_buffer(std::uint32_t i) -> std::span<std::byte> {
        const std::size_t per = recv_area_.size() / slot_count;
        return recv_area_.subspan(i * per, per);
    }
    auto peer_addr(std::int32_t i) const -> loom::fabric_addr {
        if (i < 0 || static_cast<std::size_t>(i) >= peers_.size()) return loom::fabric_addrs::unspecified;
        return peers_[static_cast<std::size_t>(i)];
    }
    static auto fail(reply& r, const std::error_code& ec, const char* what) -> reply {
        r.status = ec.value();
        std::snprintf(r.text, sizeof r.text, "%s: %s", what, ec.message().c_str());
        return r;
    }

    auto execute(const command& c) -> reply {
        if (c.slot >= slot_count) {
            reply r;
            return fail(r, loom::make_error_code(loom::errc::invalid_argument), "slot");
        }
        switch (c.code) {
            case op::add_peer: return add_peer();
            case op::post_recv: return post_recv(c);
            case op::multi_recv: return multi_recv(c);
            case op::wait_recv: return wait_recv(c);
            case op::wait_multi: return wait_multi(c);
            case op::send: return send_one(c);
            case op::expose: return expose(c);
            case op::verify: return verify(c);
            case op::wait_data: return wait_data();
            case op::quit: return {};
        }
        reply r;
        return fail(r, loom::make_error_code(loom::errc::invalid_argument), "unknown command");
    }

    /// Inserts the address the test sends next; replies with its index.
    auto add_peer() -> reply {
        reply r;
        auto a = recv_address(fd_, io_timeout);
        if (!a) return fail(r, loom::make_error_code(loom::errc::invalid_argument), "address");
        auto h = s_.av.insert(*a);
        if (!h) return fail(r, h.error(), "av insert");
        peers_.push_back(*h);
        r.value = peers_.size() - 1;
        return r;
    }
    /// Posts a receive (tagged or not) into the slot's buffer, filled with 0xEE first.
    auto post_recv(const command& c) -> reply {
        auto& sl = slots_[c.slot];
        auto buf = slot_buffer(c.slot).first(std::min<std::size_t>(c.size, slot_buffer(c.slot).size()));
        std::memset(buf.data(), 0xEE, buf.size());
        const auto src = peer_addr(c.peer);
        auto ok = c.k == kind::tagged ? s_.ep.tagged_recv(buf, c.tag, c.ignore, src, recv_mr_.descriptor(), &sl.ctx)
                                      : s_.ep.recv(buf, src, recv_mr_.descriptor(), &sl.ctx);
        return posted(sl, ok, false, "post receive");
    }
    /// Posts a multi-receive over the slot's buffer.
    auto multi_recv(const command& c) -> reply {
        reply r;
        auto& sl = slots_[c.slot];
        auto buf = slot_buffer(c.slot).first(c.size);
        if (c.ignore != multi_recv_min) return fail(r, loom::make_error_code(loom::errc::invalid_argument), "min");
        auto ok = s_.ep.recv_multi(buf, recv_mr_.descriptor(), &sl.ctx);
        return posted(sl, ok, true, "post multi-receive");
    }
    /// The reply to posting the slot's receive (`multi`: a multi-receive) with result `ok`.
    static auto posted(slot& sl, const loom::void_result& ok, bool multi, const char* what) -> reply {
        reply r;
        if (!ok) return fail(r, ok.error(), what);
        sl.posted = true;
        sl.multi = multi;
        return r;
    }
    /// Waits for the slot's receive; replies with its length, tag and the first bad byte (+1).
    auto wait_recv(const command& c) -> reply {
        reply r;
        auto& sl = slots_[c.slot];
        auto ev = prog_.wait_for(&sl.ctx, op_timeout);
        if (!ev) return fail(r, ev.error(), "wait");
        sl.posted = false;
        r.bytes = ev->bytes_transferred;
        r.tag = ev->tag;
        r.overflow = ev->overflow_length;
        if (ev->has_error()) {
            if (std::getenv("LOOM_TEST_DEBUG"))
                std::fprintf(stderr, "recv error: %s len %zu olen %zu text %s\n", ev->error.message().c_str(),
                             ev->bytes_transferred, ev->overflow_length, ev->error_text.c_str());
            r.status = ev->error.value();
            std::snprintf(r.text, sizeof r.text, "%s", ev->error_text.c_str());
            return r;
        }
        const auto got =
            slot_buffer(c.slot).first(std::min<std::size_t>(ev->bytes_transferred, slot_buffer(c.slot).size()));
        if (ev->bytes_transferred != c.size) {
            std::snprintf(r.text, sizeof r.text, "received %zu bytes, expected %llu", ev->bytes_transferred,
                          static_cast<unsigned long long>(c.size));
            r.status = static_cast<int>(loom::errc::message_too_long);
            return r;
        }
        if (auto bad = check_pattern(got, c.seed)) r.value = *bad + 1;
        return r;
    }
    /// Waits for c.size messages into the slot's multi-receive buffer (message k carries seed + k)
    /// and for the buffer's release. Completions for it share its context; the last one carries
    /// op_flag::multi_recv.
    auto wait_multi(const command& c) -> reply {
        reply r;
        auto& sl = slots_[c.slot];
        std::uint64_t seen = 0;
        bool released = false;
        while (seen < c.size || !released) {
            auto ev = prog_.wait_for(&sl.ctx, op_timeout);
            if (!ev) return fail(r, ev.error(), "wait multi");
            if (ev->has_error()) return fail(r, ev->error, "multi completion");
            if (std::getenv("LOOM_TEST_DEBUG"))
                std::fprintf(stderr, "multi: len %zu flags %s buf %p\n", ev->bytes_transferred,
                             loom::to_string(ev->flags).c_str(), ev->buffer);
            if (ev->flags.has(loom::op_flag::multi_recv)) released = true;
            if (ev->bytes_transferred == 0 && ev->flags.has(loom::op_flag::multi_recv)) continue;
            const auto* p = static_cast<const std::byte*>(ev->buffer);
            const auto area = slot_buffer(c.slot);
            if (p < area.data() || p + ev->bytes_transferred > area.data() + area.size())
                return fail(r, loom::make_error_code(loom::errc::bad_address), "buffer outside region");
            if (check_pattern({p, ev->bytes_transferred}, c.seed + seen)) {
                r.value = seen + 1;
            }
            r.bytes += ev->bytes_transferred;
            ++seen;
        }
        r.flags = released ? 1 : 0;
        r.tag = seen;
        sl.posted = false;
        return r;
    }
    /// Sends c.size bytes of the seed's pattern and waits for the send's completion.
    auto send_one(const command& c) -> reply {
        reply r;
        auto buf = send_area_.first(c.size);
        fill_pattern(buf, c.seed);
        loom::request_context ctx;
        const auto dst = peer_addr(c.peer);
        auto ok = prog_.retry(
            [&] {
                return c.k == kind::tagged ? s_.ep.tagged_send(buf, c.tag, dst, send_mr_.descriptor(), &ctx)
                                           : s_.ep.send(buf, dst, send_mr_.descriptor(), &ctx);
            },
            op_timeout);
        if (!ok) return fail(r, ok.error(), "send");
        auto ev = prog_.wait_for(&ctx, op_timeout);
        if (!ev) return fail(r, ev.error(), "send completion");
        if (ev->has_error()) return fail(r, ev->error, "send completion");
        return r;
    }
    /// Registers c.size bytes of the seed's pattern for remote access; replies with the remote key.
    auto expose(const command& c) -> reply {
        reply r;
        exposed_.assign(c.size, std::byte{0});
        fill_pattern(exposed_, c.seed);
        auto m = loom::memory_region::register_memory(s_.domain, std::span{exposed_},
                                                      loom::mr_access_flags::remote_read |
                                                          loom::mr_access_flags::remote_write |
                                                          loom::mr_access_flags::read | loom::mr_access_flags::write);
        if (!m) return fail(r, m.error(), "register exposed");
        exposed_mr_ = std::move(*m);
        auto rm = loom::remote_memory::from_mr(exposed_mr_);
        if (!rm) return fail(r, rm.error(), "export");
        r.value = rm->addr;
        r.tag = rm->key;
        r.bytes = rm->length;
        return r;
    }
    /// Checks the exposed bytes [c.tag, c.tag + c.size) against the seed's pattern.
    auto verify(const command& c) -> reply {
        reply r;
        if (c.tag > exposed_.size() || c.size > exposed_.size() - c.tag)
            return fail(r, loom::make_error_code(loom::errc::invalid_argument), "verify range");
        // A write's completion at the initiator may precede delivery (transmit
        // complete): wait, progressing, until the bytes are there or time runs out.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        for (;;) {
            auto bad = check_pattern(std::span{exposed_}.subspan(c.tag, c.size), c.seed);
            if (!bad) return r;
            if (std::chrono::steady_clock::now() > deadline) {
                r.value = *bad + 1;
                return r;
            }
            prog_.poll_once();
        }
    }
    /// Waits for a completion without context (remote CQ data); replies with its data.
    auto wait_data() -> reply {
        reply r;
        auto ev = prog_.wait_for(nullptr, op_timeout);
        if (!ev) return fail(r, ev.error(), "wait remote data");
        if (ev->has_error()) return fail(r, ev->error, "remote data completion");
        r.value = ev->data;
        r.bytes = ev->bytes_transferred;
        r.flags = ev->flags.has(loom::op_flag::remote_cq_data) ? 1 : 0;
        return r;
    }

    stack& s_;
    progress prog_;
    int fd_;
    std::span<std::byte> recv_area_, send_area_;
    loom::memory_region& recv_mr_;
    loom::memory_region& send_mr_;
    std::array<slot, slot_count> slots_{};
    std::vector<std::byte> exposed_;
    loom::memory_region exposed_mr_;
    std::vector<loom::fabric_addr> peers_;
};

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: loom-test-peer PROVIDER FD CAPS\n");
        return 2;
    }
    const std::string provider = argv[1];
    const int fd = std::atoi(argv[2]);
    const loom::capability caps{std::strtoull(argv[3], nullptr, 16)};
    auto s = open_stack(provider, caps, caps.any(loom::capability::multi_recv) ? multi_recv_min : 0);
    if (!s) {
        std::fprintf(stderr, "peer: cannot open %s: %s\n", provider.c_str(), s.error().message().c_str());
        const std::uint32_t hdr[2] = {0, 0};
        (void)write_all(fd, hdr, sizeof hdr);
        return 1;
    }
    const std::size_t per_slot = max_message + 4096;
    auto recv_area = std::make_unique<std::byte[]>(per_slot * slot_count);
    auto send_area = std::make_unique<std::byte[]>(max_message);
    auto recv_mr = loom::memory_region::register_memory(s->domain, std::span{recv_area.get(), per_slot * slot_count},
                                                        loom::mr_access_flags::recv);
    auto send_mr = loom::memory_region::register_memory(s->domain, std::span{send_area.get(), max_message},
                                                        loom::mr_access_flags::send);
    if (!recv_mr || !send_mr) {
        std::fprintf(stderr, "peer: registration failed\n");
        return 1;
    }
    auto me = s->ep.name();
    if (!me || !send_address(fd, *me)) return 1;
    auto them = recv_address(fd, io_timeout);
    if (!them) return 1;
    auto h = s->av.insert(*them);
    if (!h) {
        std::fprintf(stderr, "peer: av insert: %s\n", h.error().message().c_str());
        return 1;
    }
    peer p(*s, fd, {recv_area.get(), per_slot * slot_count}, {send_area.get(), max_message}, *recv_mr, *send_mr);
    p.add_peer(*h);  // handle index 0: the test's main endpoint
    return p.run();
}
