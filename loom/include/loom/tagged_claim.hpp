// loom/tagged_claim.hpp — tagged message reservations (FI_PEEK | FI_CLAIM, then FI_CLAIM or
// FI_CLAIM | FI_DISCARD) with one stable native context.
#pragma once

#include <cstddef>
#include <cstdint>
#include <loom/completion_queue.hpp>
#include <loom/context.hpp>
#include <loom/endpoint.hpp>
#include <optional>
#include <span>

namespace loom::msg {

/// What observe() made of a completion.
enum class claim_state {
    no_match,   ///< the probe found no matching message (FI_ENOMSG); probe again later
    reserved,   ///< the probe matched and claimed a message: receive() or discard() it
    completed,  ///< the claimed message was received into the buffer
    discarded,  ///< the claimed message was discarded
};

/// Where a claim stands between calls.
enum class claim_phase {
    idle,        ///< nothing outstanding: probe() may be called
    probing,     ///< a probe was accepted; its completion is awaited
    reserved,    ///< a message is claimed; receive() or discard() may be called
    receiving,   ///< a claimed receive was accepted; its completion is awaited
    discarding,  ///< a claimed discard was accepted; its completion is awaited
};

/// One tagged reservation on an endpoint, keeping the same native context from the probe
/// through its claimed receive or discard (providers keep the claimed message in it).
///
/// probe() posts FI_PEEK | FI_CLAIM; route every CQ event whose context equals context() to
/// observe() exactly once. After `reserved`, receive() (FI_CLAIM) or discard()
/// (FI_CLAIM | FI_DISCARD), then observe the terminal completion. Every submission requests
/// a completion and replaces the endpoint's default receive flags. Duplicate or out-of-order
/// submissions and observations report bad_state; a rejected submission keeps the
/// reservation for a retry.
///
/// Not copyable or movable: the endpoint wrapper must outlive the claim and stay in place.
/// Destroying an active claim (phase() != idle) calls std::terminate unless the endpoint has
/// been closed successfully; then retire_after_close() clears the claim. The receive buffer
/// and its registration stay borrowed until the terminal completion or a successful endpoint
/// close. No implicit discard, no blocking wait; not thread-safe.
class tagged_claim {
public:
    /// An idle claim on `ep`.
    explicit tagged_claim(endpoint& ep) noexcept : ep_(&ep) {}
    tagged_claim(const tagged_claim&) = delete;
    auto operator=(const tagged_claim&) -> tagged_claim& = delete;
    tagged_claim(tagged_claim&&) = delete;
    auto operator=(tagged_claim&&) -> tagged_claim& = delete;
    ~tagged_claim();

    /// Looks for an unexpected message whose tag equals `tag` in every bit not set in
    /// `ignore` (from `source` only when given; that needs capability::directed_recv) and
    /// claims it. bad_state unless idle or when the endpoint is not enabled; provider errors
    /// (not_supported for providers without FI_PEEK/FI_CLAIM, again) leave the claim idle.
    auto probe(std::uint64_t tag, std::uint64_t ignore = 0, fabric_addr source = fabric_addrs::unspecified) noexcept
        -> void_result;
    /// Consumes the completion of the outstanding operation. invalid_argument when the
    /// event's context is not context(); bad_state when nothing is outstanding (an event
    /// observed twice). A probe gives no_match or reserved; a receive completed; a discard
    /// discarded; any other completion error is returned as the error (the operation has
    /// retired and the claim is idle again). completion() keeps the event.
    auto observe(const completion_event& ev) -> result<claim_state>;
    /// Receives the reserved message into `buffer` (FI_CLAIM). bad_state unless reserved;
    /// invalid_argument for a null buffer with a non-zero size. Rejected: still reserved.
    auto receive(std::span<std::byte> buffer, void* desc = nullptr) noexcept -> void_result;
    /// Drops the reserved message (FI_CLAIM | FI_DISCARD). bad_state unless reserved.
    auto discard() noexcept -> void_result;
    /// After a successful endpoint close: forgets the outstanding operation (the provider
    /// may have dropped its completion). bad_state while the endpoint is still open.
    auto retire_after_close() noexcept -> void_result;

    /// The native context every submission uses; compare completion_event::context with it.
    [[nodiscard]] auto context() const noexcept -> void* { return const_cast<request_context*>(&ctx_); }
    /// Application data carried in the context (completion_event::request()->user_data), for
    /// dispatching events of a shared CQ; kept across probes.
    void set_user_data(void* p) noexcept { ctx_.user_data = p; }
    /// The application data set with set_user_data().
    [[nodiscard]] auto user_data() const noexcept -> void* { return ctx_.user_data; }
    /// The last observed event (the probe's carries length, tag, source, data and errors).
    [[nodiscard]] auto completion() const noexcept -> const std::optional<completion_event>& { return last_; }
    /// Where the claim stands.
    [[nodiscard]] auto phase() const noexcept -> claim_phase { return phase_; }
    /// True unless idle.
    [[nodiscard]] auto active() const noexcept -> bool { return phase_ != claim_phase::idle; }
    /// The tag of the last probe.
    [[nodiscard]] auto tag() const noexcept -> std::uint64_t { return tag_; }
    /// The ignore mask of the last probe.
    [[nodiscard]] auto ignore() const noexcept -> std::uint64_t { return ignore_; }
    /// The source filter of the last probe (unspecified: any).
    [[nodiscard]] auto source() const noexcept -> fabric_addr { return source_; }

private:
    auto submit(std::span<std::byte> buffer, void* desc, std::uint64_t flags) noexcept -> void_result;

    request_context ctx_{};
    endpoint* ep_;
    claim_phase phase_{claim_phase::idle};
    std::uint64_t tag_{0};
    std::uint64_t ignore_{0};
    fabric_addr source_{fabric_addrs::unspecified};
    std::optional<completion_event> last_;
};

}  // namespace loom::msg
