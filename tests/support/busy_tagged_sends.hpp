// Makes a provider refuse an endpoint's next tagged sends with FI_EAGAIN, as a provider whose
// transmit queue is full does: the endpoint's fid gets a copy of the provider's tagged
// operations whose send answers -FI_EAGAIN the given number of times, then passes each call on.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace loom_test {

/// One at a time (the refusals left are shared by every copy).
class busy_tagged_sends {
public:
    busy_tagged_sends(::fid_ep* ep, int refusals) noexcept : ep_(ep), provider_ops_(ep->tagged), ops_(*ep->tagged) {
        provider_ = provider_ops_;
        refusals_left_ = refusals;
        calls_ = 0;
        ops_.send = &send;
        ep_->tagged = &ops_;
    }
    busy_tagged_sends(const busy_tagged_sends&) = delete;
    auto operator=(const busy_tagged_sends&) -> busy_tagged_sends& = delete;
    ~busy_tagged_sends() { ep_->tagged = provider_ops_; }

    /// fi_tsend calls seen, refused ones included.
    [[nodiscard]] static auto calls() noexcept -> int { return calls_; }

private:
    static auto send(::fid_ep* ep, const void* buf, std::size_t len, void* desc, ::fi_addr_t dest, std::uint64_t tag,
                     void* context) -> ::ssize_t {
        ++calls_;
        if (refusals_left_ > 0) {
            --refusals_left_;
            return -FI_EAGAIN;
        }
        return provider_->send(ep, buf, len, desc, dest, tag, context);
    }

    ::fid_ep* ep_;
    ::fi_ops_tagged* provider_ops_;
    ::fi_ops_tagged ops_;
    static inline ::fi_ops_tagged* provider_{nullptr};
    static inline int refusals_left_{0};
    static inline int calls_{0};
};

}  // namespace loom_test
