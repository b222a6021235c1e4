#include <loom/plugins/submission_queue.hpp>

#include <rdma/fi_errno.h>

#include <algorithm>

namespace loom::plugins {

auto submission_queue::settle(op& o, int rc) noexcept -> settled {
    const bool retried = o.deferred;
    o.deferred = false;
    if (rc == 0 || rc == 1) {
        o.in_flight = rc == 0;
        return rc == 0 ? settled::in_flight : settled::complete;
    }
    if (rc == -FI_EAGAIN) {
        const auto now = now_();
        if (!retried) {
            ++refusals_;
            o.deferred_since = now;
        }
        if (now - o.deferred_since < timeout_) {
            o.deferred = true;
            deferred_.push_back(&o);
            return settled::deferred;
        }
    }
    return settled::failed;
}

void submission_queue::drop(op& o) noexcept {
    std::erase(deferred_, &o);
    o.deferred = false;
}

}  // namespace loom::plugins
