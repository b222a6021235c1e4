// Connection set-up shared by the MSG-endpoint tests: discovery, a connected endpoint's
// objects, and waiting on event and completion queues.
#pragma once

#include <loom/loom.hpp>

#include "core_support.hpp"

#include <chrono>
#include <optional>
#include <string>

namespace core_test {

/// A MSG discovery entry of `provider` on the loopback interface.
inline auto msg_info(const std::string& provider, loom::capability caps = loom::capability::msg) -> loom::result<loom::fabric_info> {
    return loom::query_fabric({.capabilities = caps, .ep_type = loom::endpoint_types::msg,
                               .provider = provider, .domain_name = "lo"});
}

/// The next event of `kind` (others are skipped), or nullopt after `timeout`.
inline auto next_of(loom::event_queue& eq, loom::cm_event_kind kind, std::chrono::milliseconds timeout)
    -> std::optional<loom::cm_event> {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        auto ev = eq.wait(100ms);
        if (!ev) return std::nullopt;
        if (*ev && ((*ev)->kind == kind || (*ev)->kind == loom::cm_event_kind::error)) return std::move(**ev);
    }
    return std::nullopt;
}

/// The completion of `ctx` on `cq` (reading drives the provider), or false after 5 s.
inline auto completes(loom::completion_queue& cq, const void* ctx, std::size_t* bytes = nullptr) -> bool {
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (std::chrono::steady_clock::now() < deadline) {
        if (auto ev = cq.poll()) {
            if (ev->context != ctx) continue;
            if (bytes) *bytes = ev->bytes_transferred;
            return !ev->has_error();
        }
    }
    return false;
}

/// An endpoint with its own domain and completion queue, bound to `eq`, enabled.
struct connection {
    loom::domain dom;
    loom::completion_queue cq;
    loom::endpoint ep;
    auto open(loom::fabric& fab, const loom::fabric_info& info, loom::event_queue& eq) -> std::string {
        auto d = loom::domain::create(fab, info);
        if (!d) return "domain: " + outcome(d.error());
        dom = std::move(*d);
        auto c = loom::completion_queue::create(dom, {.size = 16});
        if (!c) return "cq: " + outcome(c.error());
        cq = std::move(*c);
        auto e = loom::endpoint::create(dom, info);
        if (!e) return "endpoint: " + outcome(e.error());
        ep = std::move(*e);
        if (auto r = ep.bind_eq(eq); !r) return "bind_eq: " + outcome(r);
        if (auto r = ep.bind_cq(cq, loom::cq_bind::transmit | loom::cq_bind::recv); !r) return "bind_cq: " + outcome(r);
        if (auto r = ep.enable(); !r) return "enable: " + outcome(r);
        return {};
    }
};

}  // namespace core_test
