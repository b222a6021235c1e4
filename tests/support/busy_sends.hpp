// Makes a provider refuse an endpoint's next sends with FI_EAGAIN, as a provider whose transmit
// queue is full does: the endpoint's fid gets copies of the provider's message and tagged
// operations whose send answers -FI_EAGAIN the given number of times (fi_send and fi_tsend
// together), then passes each call on.
#pragma once

#include "ops_swap.hpp"

#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace loom_test {

/// One at a time (the refusals left are shared by every copy).
class busy_sends {
public:
    busy_sends(::fid_ep* ep, int refusals) noexcept : msg_(ep->msg), tagged_(ep->tagged) {
        msg_.copy().send = &send;
        tagged_.copy().send = &tagged_send;
        refusals_left_ = refusals;
        calls_ = 0;
        active_ = this;
    }
    busy_sends(const busy_sends&) = delete;
    auto operator=(const busy_sends&) -> busy_sends& = delete;
    ~busy_sends() { active_ = nullptr; }

    /// fi_send and fi_tsend calls seen, refused ones included.
    [[nodiscard]] static auto calls() noexcept -> int { return calls_; }

private:
    static auto refuse() noexcept -> bool {
        ++calls_;
        if (refusals_left_ == 0) return false;
        --refusals_left_;
        return true;
    }
    static auto send(::fid_ep* ep, const void* buf, std::size_t len, void* desc, ::fi_addr_t dest, void* context)
        -> ::ssize_t {
        return refuse() ? -FI_EAGAIN : active_->msg_.provider()->send(ep, buf, len, desc, dest, context);
    }
    static auto tagged_send(::fid_ep* ep, const void* buf, std::size_t len, void* desc, ::fi_addr_t dest,
                            std::uint64_t tag, void* context) -> ::ssize_t {
        return refuse() ? -FI_EAGAIN : active_->tagged_.provider()->send(ep, buf, len, desc, dest, tag, context);
    }

    ops_swap<::fi_ops_msg> msg_;
    ops_swap<::fi_ops_tagged> tagged_;
    static inline busy_sends* active_{nullptr};
    static inline int refusals_left_{0};
    static inline int calls_{0};
};

}  // namespace loom_test
