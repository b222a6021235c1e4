// What every install consumer opens first: shm (RDM, messages and tagged messages), fabric,
// domain, a completion queue and an address vector.
#pragma once

#include <loom/loom.hpp>

#include <cstdio>
#include <optional>

struct shm_chain {
    loom::fabric_info info;
    loom::fabric fabric;
    loom::domain domain;
    loom::completion_queue cq;
    loom::address_vector av;
};

inline auto open_shm_chain() -> std::optional<shm_chain> {
    using namespace loom;
    auto info = query_fabric(
        {.capabilities = capability::msg | capability::tagged, .ep_type = endpoint_types::rdm, .provider = "shm"});
    if (!info) {
        std::fprintf(stderr, "no provider: %s\n", info.error().message().c_str());
        return std::nullopt;
    }
    shm_chain c{*info, {}, {}, {}, {}};
    c.fabric = fabric::create(c.info).value();
    c.domain = domain::create(c.fabric, c.info).value();
    c.cq = completion_queue::create(c.domain, {.size = 16}).value();
    c.av = address_vector::create(c.domain).value();
    return c;
}
