#include "loom/execution/poll.hpp"

#include <array>

namespace loom::execution {
namespace {
/// Delivers `ev` or makes it the unhandled event; true when polling may go on.
auto route(completion_queue& cq, completion_event& ev, poll_result& out) -> bool {
    if (cq.dispatch(ev)) {
        ++out.completed;
        return true;
    }
    out.unhandled.emplace(std::move(ev));
    return false;
}
}  // namespace

auto poll_completions(completion_queue& cq) -> poll_result {
    poll_result out;
    completion_registry* reg = cq.registry();
    if (reg == nullptr) {  // a queue never created: no operation can be waiting on it
        completion_event ev{};
        ev.error = make_error_code(errc::bad_state);
        out.unhandled.emplace(std::move(ev));
        return out;
    }
    thread_local std::array<completion_event, 16> batch;  // reused: reading allocates nothing
    completion_event& first = batch[0];
    while (reg->take_held(first))  // what an earlier call read after its unhandled event
        if (!route(cq, first, out)) return out;
    const auto n = cq.read(batch);
    if (!n) {
        completion_event ev{};
        ev.error = n.error();
        out.unhandled.emplace(std::move(ev));
        return out;
    }
    for (std::size_t i = 0; i < *n; ++i) {
        if (route(cq, batch[i], out)) continue;
        for (std::size_t k = i + 1; k < *n; ++k) (void)reg->hold(batch[k]);  // room: a batch is <= capacity
        return out;
    }
    reg->retry_deferred();
    return out;
}

}  // namespace loom::execution
