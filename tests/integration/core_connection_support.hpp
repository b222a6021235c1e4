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
inline auto msg_info(const std::string& provider, loom::capability caps = loom::capability::msg)
    -> loom::result<loom::fabric_info> {
    return loom::query_fabric(
        {.capabilities = caps, .ep_type = loom::endpoint_types::msg, .provider = provider, .domain_name = "lo"});
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

/// Two connected MSG endpoints of one process: a listener accepts the client's request.
struct connected_pair {
    loom::result<loom::fabric> fab = loom::make_unexpected(loom::errc::other);
    loom::result<loom::event_queue> listen_eq = loom::make_unexpected(loom::errc::other);
    loom::result<loom::event_queue> connect_eq = loom::make_unexpected(loom::errc::other);
    loom::result<loom::passive_endpoint> pep = loom::make_unexpected(loom::errc::other);
    connection client, server;
    /// Connects over `provider` with `caps`; the error names the step that failed.
    auto open(const std::string& provider, loom::capability caps) -> std::string {
        auto info = msg_info(provider, caps);
        if (!info) return "msg_info: " + outcome(info.error());
        fab = loom::fabric::create(*info);
        if (!fab) return "fabric: " + outcome(fab.error());
        listen_eq = loom::event_queue::create(*fab);
        connect_eq = loom::event_queue::create(*fab);
        if (!listen_eq || !connect_eq) return "event queues";
        pep = loom::passive_endpoint::create(*fab, *info);
        if (!pep) return "passive endpoint: " + outcome(pep.error());
        if (!pep->bind(*listen_eq) || !pep->listen()) return "listen";
        auto name = pep->name();
        if (!name) return "name: " + outcome(name.error());
        if (auto e = client.open(*fab, *info, *connect_eq); !e.empty()) return "client " + e;
        if (auto r = client.ep.connect(*name); !r) return "connect: " + outcome(r);
        auto req = next_of(*listen_eq, loom::cm_event_kind::connreq, 10s);
        if (!req || req->kind != loom::cm_event_kind::connreq) return "no connection request";
        if (auto e = server.open(*fab, req->info, *listen_eq); !e.empty()) return "server " + e;
        if (auto r = server.ep.accept(); !r) return "accept: " + outcome(r);
        auto up = next_of(*connect_eq, loom::cm_event_kind::connected, 10s);
        if (!up || up->kind != loom::cm_event_kind::connected) return "client not connected";
        up = next_of(*listen_eq, loom::cm_event_kind::connected, 10s);
        if (!up || up->kind != loom::cm_event_kind::connected) return "server not connected";
        return {};
    }
};

}  // namespace core_test
