// loom/detail/op_gates.hpp — the native endpoint each family of operations goes through: the
// endpoint itself, or a stand-in that refuses or checks (decided when the endpoint is enabled
// or closed, not per operation).
#pragma once

#include <loom/flags.hpp>

#include <rdma/fi_endpoint.h>

#include <cstddef>

namespace loom::detail {

/// Stand-ins for a native endpoint that sends and receives reach instead of the provider when
/// they must be refused: their data operations (msg and tagged) return -FI_EOPBADSTATE (endpoint
/// not enabled, closed or moved from; SRX closed) or -FI_EINVAL (no such capability).
extern ::fid_ep refused_not_enabled;
extern ::fid_ep refused_no_capability;
/// A stand-in that checks what the provider needs checked per operation (the context, for
/// providers whose mode asks for one; the length of a send, read or write, for providers with a
/// finite max_msg_size) and forwards to `target`.
struct gate_checker {
    ::fid_ep gate{};  ///< first: handed to fi_send / fi_trecv / ... in place of the endpoint
    ::fid_ep* target{nullptr};
    std::size_t max_msg_size{0};
    bool needs_context{false};
    bool broken_fetch_atomics{false};  ///< fetch and compare atomics: not_supported
};
/// The native endpoint each operation family goes through (send and receive, msg and tagged;
/// RMA reads and writes; atomics):
/// the endpoint itself when it is enabled with the capability and its provider needs no check
/// per operation, else a refusing or checking stand-in. State, capability, context requirement
/// and size limit are thereby decided once, when the endpoint is enabled or closed, not on every
/// operation. A move leaves the source refusing (not enabled) and keeps the gates that lead to
/// the checker pointing at the new copy's.
class op_gates {
public:
    op_gates() = default;
    op_gates(op_gates&& o) noexcept { take(o); }
    auto operator=(op_gates&& o) noexcept -> op_gates& {
        if (this != &o) take(o);
        return *this;
    }
    op_gates(const op_gates&) = delete;
    auto operator=(const op_gates&) -> op_gates& = delete;
    ~op_gates() = default;

    /// Gates for an enabled endpoint or open SRX `ep` (defined in endpoint.cpp).
    /// `broken_fetch_atomics`: the provider's fetch and compare atomics must be refused
    /// (endpoint::provider_quirks).
    void open(::fid_ep* ep, capability caps, std::size_t max_msg_size, bool needs_context,
              bool broken_fetch_atomics = false) noexcept;
    void shut() noexcept {
        send_msg_ = send_tagged_ = recv_msg_ = recv_tagged_ = rma_ = atomic_ = &refused_not_enabled;
    }
    /// Sends of msg or tagged, RMA reads and writes (capability::rma) or atomics
    /// (capability::atomic); refused_no_capability for any other family.
    [[nodiscard]] auto send(capability family) const noexcept -> ::fid_ep* {
        return family == capability::msg      ? send_msg_
               : family == capability::tagged ? send_tagged_
               : family == capability::rma    ? rma_
               : family == capability::atomic ? atomic_
                                              : &refused_no_capability;
    }
    [[nodiscard]] auto recv(capability family) const noexcept -> ::fid_ep* {
        return family == capability::tagged ? recv_tagged_ : recv_msg_;
    }

private:
    ::fid_ep* send_msg_{&refused_not_enabled};
    ::fid_ep* send_tagged_{&refused_not_enabled};
    ::fid_ep* recv_msg_{&refused_not_enabled};
    ::fid_ep* recv_tagged_{&refused_not_enabled};
    ::fid_ep* rma_{&refused_not_enabled};
    ::fid_ep* atomic_{&refused_not_enabled};
    gate_checker checker_{};
    void take(op_gates& o) noexcept {
        checker_ = o.checker_;
        auto moved = [&](::fid_ep* g) { return g == &o.checker_.gate ? &checker_.gate : g; };
        send_msg_ = moved(o.send_msg_);
        send_tagged_ = moved(o.send_tagged_);
        recv_msg_ = moved(o.recv_msg_);
        recv_tagged_ = moved(o.recv_tagged_);
        rma_ = moved(o.rma_);
        atomic_ = moved(o.atomic_);
        o.shut();
    }
};

}  // namespace loom::detail
