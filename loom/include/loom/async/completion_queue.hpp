// loom/async/completion_queue.hpp — the completion queue, for programs that include it
// by its asynchronous-interface path.
#pragma once

#include <loom/completion_queue.hpp>
