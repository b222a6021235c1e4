// loom/execution/poll.hpp — progress for fabric senders: read a queue, deliver its events.
#pragma once

#include <loom/completion_queue.hpp>

namespace loom::execution {

/// What one poll_completions call did: `completed` events delivered to registered operations,
/// and `unhandled`, the first event no operation owns.
using poll_result = dispatch_result;

/// Reads `cq` once (a batch), delivers each event to the operation registered with its
/// context, and submits again the operations the provider had refused with FI_EAGAIN. Stops
/// at the first event no operation owns and returns it: handle it before polling again (it may
/// belong to another front end, or be a remote notification or a queue error). Events read in
/// the same batch after it are kept, in order, for the next call. (completion_queue::dispatch_ready)
auto poll_completions(completion_queue& cq) -> poll_result;

}  // namespace loom::execution
