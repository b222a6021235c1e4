#include "harness.hpp"

#include <poll.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace loom_test {

auto find_info(const std::string& provider, loom::capability caps, loom::threading_mode threading)
    -> loom::result<loom::fabric_info> {
    auto all = loom::query_all(
        {.capabilities = caps, .ep_type = loom::endpoint_types::rdm, .provider = provider, .threading = threading});
    if (!all) return std::unexpected(all.error());
    std::optional<loom::fabric_info> best;
    for (const auto& info : *all) {
        const bool lo = info.domain_name() == "lo" || info.provider_name() == "shm";
        const bool v4 = info.addr_format() != loom::address_format::sockaddr_in6;
        if (lo && v4) return info;
        if (!best && v4) best = info;
    }
    if (best) return *best;
    return *all->begin();
}

auto open_stack(const std::string& provider, loom::capability caps, std::size_t min_multi_recv,
                const loom::cq_attr& cq_attributes, loom::threading_mode threading) -> loom::result<stack> {
    auto info = find_info(provider, caps, threading);
    if (!info) return std::unexpected(info.error());
    return open_stack_of(*info, min_multi_recv, cq_attributes);
}

auto open_multi_recv_default_stack() -> loom::result<stack> {
    auto info = loom::query_fabric(
        {.capabilities = loom::capability::msg | loom::capability::tagged | loom::capability::multi_recv,
         .ep_type = loom::endpoint_types::rdm,
         .provider = "tcp;ofi_rxm",
         .rx_op_flags = loom::op_flag::multi_recv});
    if (!info) return std::unexpected(info.error());
    return open_stack_of(*info, 0, {.size = 16});
}

auto open_stack_of(const loom::fabric_info& info, std::size_t min_multi_recv, const loom::cq_attr& cq_attributes,
                   std::pmr::memory_resource* cq_mr) -> loom::result<stack> {
    stack s;
    s.info = info;
    auto fab = loom::fabric::create(s.info);
    if (!fab) return std::unexpected(fab.error());
    s.fabric = std::move(*fab);
    auto dom = loom::domain::create(s.fabric, s.info);
    if (!dom) return std::unexpected(dom.error());
    s.domain = std::move(*dom);
    auto cq = loom::completion_queue::create(s.domain, cq_attributes, cq_mr);
    if (!cq) return std::unexpected(cq.error());
    s.cq = std::move(*cq);
    auto av = loom::address_vector::create(s.domain);
    if (!av) return std::unexpected(av.error());
    s.av = std::move(*av);
    auto ep = loom::endpoint::create(s.domain, s.info);
    if (!ep) return std::unexpected(ep.error());
    s.ep = std::move(*ep);
    if (auto r = s.ep.bind_cq(s.cq, loom::cq_bind::transmit | loom::cq_bind::recv); !r)
        return std::unexpected(r.error());
    if (auto r = s.ep.bind_av(s.av); !r) return std::unexpected(r.error());
    if (min_multi_recv != 0) {
        if (auto r = s.ep.set_min_multi_recv(min_multi_recv); !r) return std::unexpected(r.error());
    }
    if (auto r = s.ep.enable(); !r) return std::unexpected(r.error());
    return s;
}

void fill_pattern(std::span<std::byte> buf, std::uint64_t seed) noexcept {
    for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = pattern_byte(seed, i);
}

auto check_pattern(std::span<const std::byte> buf, std::uint64_t seed) noexcept -> std::optional<std::size_t> {
    for (std::size_t i = 0; i < buf.size(); ++i)
        if (buf[i] != pattern_byte(seed, i)) return i;
    return std::nullopt;
}

auto progress::poll_once() -> std::size_t {
    // Completions of registered asynchronous operations (senders, Asio handlers) go to their
    // owners and deferred submissions are retried (dispatch_ready); the rest wait here for
    // wait_for().
    std::size_t n = 0;
    for (;;) {
        auto r = cq_->dispatch_ready();
        n += r.completed;
        if (!r.unhandled) {
            if (r.completed == 0) return n;
            continue;
        }
        const bool read_failed = r.unhandled->context == nullptr && r.unhandled->has_error();
        stash_.push_back(std::move(*r.unhandled));
        ++n;
        if (read_failed) return n;  // the queue itself: reading again would fail again
    }
}

auto progress::wait_for(const void* ctx, std::chrono::milliseconds timeout) -> loom::result<loom::completion_event> {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        for (auto it = stash_.begin(); it != stash_.end(); ++it) {
            if (it->context == ctx) {
                auto ev = std::move(*it);
                stash_.erase(it);
                return ev;
            }
        }
        if (poll_once() == 0) {
            if (std::chrono::steady_clock::now() >= deadline) return loom::make_unexpected(loom::errc::timed_out);
            ::sched_yield();
        }
    }
}

auto progress::read_fd(int fd, void* p, std::size_t n, std::chrono::milliseconds timeout) -> bool {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        ::pollfd pfd{fd, POLLIN, 0};
        const int pr = ::poll(&pfd, 1, 0);
        if (pr > 0) return read_all(fd, p, n, timeout);
        if (pr < 0 && errno != EINTR) return false;
        if (poll_once() == 0) {
            if (std::chrono::steady_clock::now() >= deadline) return false;
            ::sched_yield();
        }
    }
}

auto write_all(int fd, const void* p, std::size_t n) -> bool {
    const auto* c = static_cast<const char*>(p);
    while (n > 0) {
        const auto w = ::write(fd, c, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        c += w;
        n -= static_cast<std::size_t>(w);
    }
    return true;
}

auto read_all(int fd, void* p, std::size_t n, std::chrono::milliseconds timeout) -> bool {
    auto* c = static_cast<char*>(p);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (n > 0) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return false;
        ::pollfd pfd{fd, POLLIN, 0};
        const int pr = ::poll(&pfd, 1, static_cast<int>(left.count()));
        if (pr < 0 && errno == EINTR) continue;
        if (pr <= 0) return false;
        const auto r = ::read(fd, c, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        c += r;
        n -= static_cast<std::size_t>(r);
    }
    return true;
}

auto send_address(int fd, const loom::address& a) -> bool {
    const auto raw = loom::to_raw(a);
    const std::uint32_t hdr[2] = {static_cast<std::uint32_t>(loom::native_format(a)),
                                  static_cast<std::uint32_t>(raw.size())};
    return write_all(fd, hdr, sizeof hdr) && write_all(fd, raw.data(), raw.size());
}

auto recv_address(int fd, std::chrono::milliseconds timeout) -> std::optional<loom::address> {
    std::uint32_t hdr[2];
    if (!read_all(fd, hdr, sizeof hdr, timeout) || hdr[1] > 4096) return std::nullopt;
    std::vector<std::byte> raw(hdr[1]);
    if (!read_all(fd, raw.data(), raw.size(), timeout)) return std::nullopt;
    auto a = loom::address_from_raw(static_cast<loom::address_format>(hdr[0]), raw);
    if (!a) return std::nullopt;
    return std::move(*a);
}

}  // namespace loom_test
