// loom/execution.hpp — the P2300 sender front end.
//
//   auto messages = loom::async(ep);             // send, recv, send_to, recv_from, tagged_...
//   auto one_sided = loom::rma_async(ep);        // read_from, write_to, fetch_add_to, ...
//   auto s = messages.send(buffer, &cq) | loom::execution::then([] { ... });
//   ... loom::execution::poll_completions(cq) from the progress loop ...
//
// Senders complete through the endpoint's completion queue: whoever reads it delivers events
// with poll_completions(cq) (or cq.dispatch(event)). The algorithms and protocol names in
// loom::execution are the selected backend's (loom/execution/backend.hpp).
#pragma once

#include <loom/execution/backend.hpp>
#include <loom/execution/message_senders.hpp>
#include <loom/execution/poll.hpp>
#include <loom/execution/rma_senders.hpp>
#include <loom/execution/scheduler.hpp>
