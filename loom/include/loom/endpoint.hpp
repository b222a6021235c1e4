// loom/endpoint.hpp — endpoints (fi_endpoint): binding, options, messaging and tagged messaging.
#pragma once

#include <loom/address.hpp>
#include <loom/context.hpp>
#include <loom/detail/child_link.hpp>
#include <loom/detail/fid.hpp>
#include <loom/detail/hot.hpp>
#include <loom/detail/op_gates.hpp>
#include <loom/detail/receive_submission.hpp>
#include <loom/detail/zero_on_move.hpp>
#include <loom/domain.hpp>
#include <loom/endpoint_options.hpp>

#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <sys/uio.h>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

namespace loom {

class completion_queue;
class address_vector;
class counter;
class memory_region;
class shared_rx_context;
class event_queue;

/// Negotiated IOV bounds: transmit, receive and remote (RMA) entries per operation.
struct iov_limits {
    /// Transmit entries per operation.
    std::size_t tx{0};
    /// Receive entries per operation.
    std::size_t rx{0};
    /// Remote (RMA) entries per operation.
    std::size_t rma{0};
};

/// Something receives can be posted to: an endpoint or a shared receive context. It exposes
/// its native fid_ep, the gate receives go through, its receive default flags and the receive
/// checks.
template <class T>
concept receive_target =
    !std::is_const_v<T> && requires(const T& t, capability family, fabric_addr addr, context_ptr<void> ctx,
                                    std::span<const ::iovec> iov, std::span<void* const> desc) {
        { t.native() } noexcept -> std::same_as<::fid_ep*>;
        { t.receive_gate(family) } noexcept -> std::same_as<::fid_ep*>;
        { t.rx_op_flags() } noexcept -> std::same_as<op_flag>;
        { t.check_rx(family, addr, ctx) } noexcept -> std::same_as<int>;
        { t.check_rx_iov(family, iov, desc, addr, ctx) } noexcept -> std::same_as<int>;
    };

/// An endpoint (fid_ep): sends, receives, RMA and atomics, after its queues and address vector are bound and it is
/// enabled.
class endpoint {
public:
    endpoint() = default;
    /// Opens an endpoint in `dom` for a discovery result (fi_endpoint).
    [[nodiscard]] static auto create(domain& dom, const fabric_info& info, std::pmr::memory_resource* mr = nullptr)
        -> result<endpoint>;
    /// Takes ownership of a native endpoint-class object (a scalable endpoint's transmit or
    /// receive context, a shared context, ...) opened from `dom` with attributes `info`
    /// (tx/rx attributes may be the context's own). Counts as a child of `dom`.
    [[nodiscard]] static auto adopt_native(::fid_ep* native, const ::fi_info& info, domain& dom) -> endpoint;
    /// The same for a context owned by another loom object (a scalable endpoint's slot):
    /// `owner` counts it as open until it is closed; `av_bound` when the owner's address
    /// vector serves it (contexts cannot bind one themselves); it records `mr`.
    [[nodiscard]] static auto adopt_native(::fid_ep* native, const ::fi_info& info, domain& dom,
                                           detail::child_link owner, bool av_bound, std::pmr::memory_resource* mr)
        -> endpoint;
    /// Known defects of the provider behind this endpoint that loom steers around by refusing
    /// the affected operations (not_supported) instead of letting them hang or corrupt data.
    struct provider_quirks {
        bool getopt_needs_enable{false};   ///< shm: fi_getopt before fi_enable crashes
        bool broken_fetch_atomics{false};  ///< udp;ofi_rxd <= 2.1: fetch/compare atomics
        bool broken_atomic_inject{false};  ///< udp;ofi_rxd <= 2.1: fi_inject_atomic
        bool broken_self_insert{false};    ///< *;ofi_rxm: inserting its own address into an AV with peers crashes
    };
    /// The provider defects this endpoint works around.
    [[nodiscard]] auto quirks() const noexcept -> const provider_quirks& { return quirks_; }
    /// The quirks an endpoint opened from `info` will report.
    [[nodiscard]] static auto quirks_for(const fabric_info& info) noexcept -> provider_quirks;
    /// The owner count this context is linked to (identity checks), or nullptr.
    [[nodiscard]] auto owner() const noexcept -> const std::atomic<long>* { return owner_link_.parent(); }
    /// Marks an adopted context as enabled (contexts of a scalable endpoint are enabled by
    /// their parent or by fi_enable on the context itself).
    void mark_enabled() noexcept {
        enabled_ = true;
        refresh_gates();
    }
    /// True when sends (send, senddata, tagged_send, tagged_senddata) to a peer_addr reach the
    /// provider with no check in between: enabled, and a provider that needs neither a context
    /// nor a size check per send (shm, tcp, tcp;ofi_rxm, udp;ofi_rxd here).
    [[nodiscard]] auto direct_sends() const noexcept -> bool {
        return enabled_ && (tx_msg() == h_.get() || tx_tagged() == h_.get());
    }
    /// The same for receives (recv, tagged_recv) without a source filter.
    [[nodiscard]] auto direct_receives() const noexcept -> bool {
        const auto* ep = h_.get();
        return enabled_ && (gates_.recv(capability::msg) == ep || gates_.recv(capability::tagged) == ep);
    }
    /// The native endpoint receives of `family` go through (see op_gates).
    [[nodiscard]] auto receive_gate(capability family) const noexcept -> ::fid_ep* { return gates_.recv(family); }
    /// The native endpoint sends of `family` (msg, tagged), RMA reads and writes
    /// (capability::rma) or atomics with a completion (capability::atomic) go through.
    [[nodiscard]] auto send_gate(capability family) const noexcept -> ::fid_ep* { return gates_.send(family); }

    // ------------------------------------------------------------ set-up
    /// Binds a completion queue of the same domain for transmit and/or receive completions; before enable().
    auto bind_cq(completion_queue& cq, cq_bind flags) noexcept -> void_result;
    /// Binds an address vector of the same domain (not for msg endpoints); before enable().
    auto bind_av(address_vector& av) noexcept -> void_result;
    /// Binds a counter of the same domain for the events `flags` name; before enable().
    auto bind_counter(counter& c, counter_bind flags = counter_bind::send | counter_bind::recv | counter_bind::read |
                                                       counter_bind::write) noexcept -> void_result;
    /// Receives through `srx` (fi_ep_bind with the SRX): before enable(), same domain. The
    /// endpoint counts as an open child of the SRX until it is closed, so srx.close() is
    /// refused with busy meanwhile. bad_state after enable() or when already bound.
    auto bind_srx(shared_rx_context& srx) noexcept -> void_result;
    /// Enables the endpoint (fi_enable); no_address_vector when it needs one and none is bound.
    auto enable() noexcept -> void_result;

    // ------------------------------------------------------------ MSG connection setup
    // (connection.cpp). The queue reports connected and shutdown events for this endpoint.
    /// Before enable(); MSG endpoints only; the queue must belong to the endpoint's fabric.
    auto bind_eq(event_queue& eq) noexcept -> void_result;
    /// Asks the listener at `peer` for a connection, sending `data` (at most the provider's
    /// FI_OPT_CM_DATA_SIZE); a connected or an error event follows. After enable().
    auto connect(const address& peer, std::span<const std::byte> data = {}) -> void_result;
    /// connect() with the listener's native address bytes.
    auto connect_raw(std::span<const std::byte> native_address, std::span<const std::byte> data = {}) noexcept
        -> void_result;
    /// Accepts the request this endpoint was created from (endpoint::create with a connreq
    /// event's info), sending `data`; a connected event follows. After enable().
    auto accept(std::span<const std::byte> data = {}) noexcept -> void_result;
    /// Ends the connection; the peer gets a shutdown event.
    auto shutdown() noexcept -> void_result;

    /// This endpoint's own address, to hand to peers.
    [[nodiscard]] auto name() const -> result<address>;
    /// Cancels an operation posted with this context (its completion reports canceled).
    auto cancel(context_ptr<void> ctx) noexcept -> void_result;
    /// Sets the multi-receive threshold (FI_OPT_MIN_MULTI_RECV).
    auto set_min_multi_recv(std::size_t bytes) noexcept -> void_result;

    // ------------------------------------------------------------ queries
    /// The negotiated iovec bounds.
    [[nodiscard]] auto iov_limits() const noexcept -> loom::iov_limits { return limits_; }
    /// Largest message inject() takes.
    [[nodiscard]] auto inject_size() const noexcept -> std::size_t { return inject_size_; }
    /// Largest message a send takes.
    [[nodiscard]] auto max_msg_size() const noexcept -> std::size_t { return max_msg_size_; }
    /// The capabilities it was opened with.
    [[nodiscard]] auto capabilities() const noexcept -> capability { return caps_; }
    /// Its type.
    [[nodiscard]] auto type() const noexcept -> endpoint_types { return type_; }
    /// Flags transmit operations get by default.
    [[nodiscard]] auto tx_op_flags() const noexcept -> op_flag { return tx_flags_; }
    /// Flags receive operations get by default.
    [[nodiscard]] auto rx_op_flags() const noexcept -> op_flag { return rx_flags_; }
    /// True when every operation needs a context (the provider's mode asks for one).
    [[nodiscard]] auto context_required() const noexcept -> bool { return needs_context_; }
    /// True when a queue was bound for that direction with cq_bind::selective_completion
    /// (operations without FI_COMPLETION then leave no entry).
    [[nodiscard]] auto transmit_completion_is_selective() const noexcept -> bool { return selective_tx_; }
    /// The same for receives.
    [[nodiscard]] auto receive_completion_is_selective() const noexcept -> bool { return selective_rx_; }
    /// True once enable() succeeded (until close).
    [[nodiscard]] auto enabled() const noexcept -> bool { return enabled_; }
    /// True once bind_srx() succeeded (until close).
    [[nodiscard]] auto bound_to_srx() const noexcept -> bool { return static_cast<bool>(srx_link_); }
    /// The native address format.
    [[nodiscard]] auto addr_format() const noexcept -> address_format { return format_; }
    /// The resource the factory was given (the endpoint allocates no state of its own).
    [[nodiscard]] auto memory_resource() const noexcept -> std::pmr::memory_resource* { return mr_; }
    /// True when it was opened in `dom`.
    [[nodiscard]] auto belongs_to(const domain& dom) const noexcept -> bool {
        return domain_ != nullptr && domain_ == dom.native();
    }
    /// The native fid_ep; null once closed.
    [[nodiscard]] auto native() const noexcept -> ::fid_ep* { return h_.get(); }
    /// The native domain it was opened in.
    [[nodiscard]] auto domain_native() const noexcept -> ::fid_domain* { return domain_; }
    /// True while the endpoint is open.
    [[nodiscard]] auto valid() const noexcept -> bool { return static_cast<bool>(h_); }
    /// Closes the native endpoint now; on failure it stays open and the call can be retried.
    auto close() noexcept -> void_result {
        auto r = h_.close();
        if (r) {
            enabled_ = false;
            refresh_gates();
            srx_link_.reset();
            eq_link_.reset();
            owner_link_.reset();
        }
        return r;
    }

    // ------------------------------------------------------------ messages
    // Sends to a peer_addr (what address_vector::insert returns) go straight to the provider
    // through the family's gate (op_gates: not enabled, no capability, a missing context or
    // an oversized message are refused there, and on shm/tcp nothing stands in between). Sends
    // to a plain fabric_addr check first only that it is not fabric_addrs::unspecified where a
    // destination is needed. Each instruction before the provider call showed on shm streams of
    // 8-256 B (about 2.5 % of the bandwidth per compare, docs/bench.md).
    /// Sends on a connected endpoint (no destination).
    auto send(std::span<const std::byte> data, context_ptr<void> ctx = {}) noexcept -> void_result {
        return send(data, fabric_addrs::unspecified, nullptr, ctx);
    }
    /// Sends `data` to `dest`, described by `desc` (a registration's descriptor, or null).
    LOOM_SUBMIT_INLINE auto send(std::span<const std::byte> data, fabric_addr dest, void* desc = nullptr,
                                 context_ptr<void> ctx = {}) noexcept -> void_result {
        if (dest == fabric_addrs::unspecified) [[unlikely]]
            if (const int e = check_tx_full(capability::msg, data.size(), dest, ctx)) return fail(e);
        return check_native(::fi_send(tx_msg(), data.data(), data.size(), desc, dest.get(), ctx.get()));
    }
    /// The same to a peer_addr, straight to the provider.
    LOOM_SUBMIT_INLINE auto send(std::span<const std::byte> data, peer_addr dest, void* desc = nullptr,
                                 context_ptr<void> ctx = {}) noexcept -> void_result {
        return check_native(::fi_send(tx_msg(), data.data(), data.size(), desc, dest.get(), ctx.get()));
    }
    /// Sends from registered memory; invalid_argument when `mr` does not cover `data`.
    auto send(std::span<const std::byte> data, const memory_region& mr, fabric_addr dest,
              context_ptr<void> ctx = {}) noexcept -> void_result;
    /// Sends with remote CQ data `imm`.
    LOOM_SUBMIT_INLINE auto senddata(std::span<const std::byte> data, std::uint64_t imm, fabric_addr dest,
                                     void* desc = nullptr, context_ptr<void> ctx = {}) noexcept -> void_result {
        if (dest == fabric_addrs::unspecified) [[unlikely]]
            if (const int e = check_tx_full(capability::msg, data.size(), dest, ctx)) return fail(e);
        return check_native(::fi_senddata(tx_msg(), data.data(), data.size(), desc, imm, dest.get(), ctx.get()));
    }
    /// The same to a peer_addr, straight to the provider.
    LOOM_SUBMIT_INLINE auto senddata(std::span<const std::byte> data, std::uint64_t imm, peer_addr dest,
                                     void* desc = nullptr, context_ptr<void> ctx = {}) noexcept -> void_result {
        return check_native(::fi_senddata(tx_msg(), data.data(), data.size(), desc, imm, dest.get(), ctx.get()));
    }
    /// Sends the gathered `iov` (descriptors in `desc`, one per entry, or none).
    auto sendv(std::span<const ::iovec> iov, std::span<void* const> desc, fabric_addr dest,
               context_ptr<void> ctx = {}) noexcept -> void_result {
        if (const int e = check_tx_iov(capability::msg, iov, desc, dest, ctx)) [[unlikely]]
            return fail(e);
        return check_native(::fi_sendv(h_.get(), iov.data(), desc.empty() ? nullptr : const_cast<void**>(desc.data()),
                                       iov.size(), dest.get(), ctx.get()));
    }
    /// Sends without a completion; the buffer is reusable on return. invalid_argument above
    /// inject_size().
    auto inject(std::span<const std::byte> data, fabric_addr dest = fabric_addrs::unspecified) noexcept -> void_result {
        if (const int e = check_inject(capability::msg, data.size(), dest)) [[unlikely]]
            return fail(e);
        return check_native(::fi_inject(h_.get(), data.data(), data.size(), dest.get()));
    }
    /// inject() with remote CQ data `imm`.
    auto injectdata(std::span<const std::byte> data, std::uint64_t imm,
                    fabric_addr dest = fabric_addrs::unspecified) noexcept -> void_result {
        if (const int e = check_inject(capability::msg, data.size(), dest)) [[unlikely]]
            return fail(e);
        return check_native(::fi_injectdata(h_.get(), data.data(), data.size(), imm, dest.get()));
    }
    /// Receives on a connected endpoint, or from anyone.
    auto recv(std::span<std::byte> buffer, context_ptr<void> ctx = {}) noexcept -> void_result {
        return recv(buffer, fabric_addrs::unspecified, nullptr, ctx);
    }
    /// Receives into `buffer` from `src` (fabric_addrs::unspecified: anyone).
    auto recv(std::span<std::byte> buffer, fabric_addr src, void* desc = nullptr, context_ptr<void> ctx = {}) noexcept
        -> void_result {
        return detail::post_recv(*this, buffer, src, desc, ctx);
    }
    /// Receives into registered memory; invalid_argument when `mr` does not cover `buffer`.
    auto recv(std::span<std::byte> buffer, const memory_region& mr, fabric_addr src,
              context_ptr<void> ctx = {}) noexcept -> void_result;
    /// Receives into the scattered `iov`.
    auto recvv(std::span<const ::iovec> iov, std::span<void* const> desc, fabric_addr src,
               context_ptr<void> ctx = {}) noexcept -> void_result {
        return detail::post_recvv(*this, iov, desc, src, ctx);
    }
    /// Posts a multi-receive buffer: several messages land in it back to back; the last
    /// completion for it carries op_flag::multi_recv.
    auto recv_multi(std::span<std::byte> buffer, void* desc, context_ptr<void> ctx,
                    fabric_addr src = fabric_addrs::unspecified) noexcept -> void_result;

    // ------------------------------------------------------------ tagged messages
    /// Sends a tagged message on a connected endpoint.
    auto tagged_send(std::span<const std::byte> data, std::uint64_t tag, context_ptr<void> ctx = {}) noexcept
        -> void_result {
        return tagged_send(data, tag, fabric_addrs::unspecified, nullptr, ctx);
    }
    /// Sends a tagged message to `dest`.
    LOOM_SUBMIT_INLINE auto tagged_send(std::span<const std::byte> data, std::uint64_t tag, fabric_addr dest,
                                        void* desc = nullptr, context_ptr<void> ctx = {}) noexcept -> void_result {
        if (dest == fabric_addrs::unspecified) [[unlikely]]
            if (const int e = check_tx_full(capability::tagged, data.size(), dest, ctx)) return fail(e);
        return check_native(::fi_tsend(tx_tagged(), data.data(), data.size(), desc, dest.get(), tag, ctx.get()));
    }
    /// The same to a peer_addr, straight to the provider.
    LOOM_SUBMIT_INLINE auto tagged_send(std::span<const std::byte> data, std::uint64_t tag, peer_addr dest,
                                        void* desc = nullptr, context_ptr<void> ctx = {}) noexcept -> void_result {
        return check_native(::fi_tsend(tx_tagged(), data.data(), data.size(), desc, dest.get(), tag, ctx.get()));
    }
    /// Sends a tagged message from registered memory; invalid_argument when `mr` does not cover `data`.
    auto tagged_send(std::span<const std::byte> data, const memory_region& mr, std::uint64_t tag, fabric_addr dest,
                     context_ptr<void> ctx = {}) noexcept -> void_result;
    /// Sends a tagged message with remote CQ data `imm`.
    LOOM_SUBMIT_INLINE auto tagged_senddata(std::span<const std::byte> data, std::uint64_t tag, std::uint64_t imm,
                                            fabric_addr dest, void* desc = nullptr, context_ptr<void> ctx = {}) noexcept
        -> void_result {
        if (dest == fabric_addrs::unspecified) [[unlikely]]
            if (const int e = check_tx_full(capability::tagged, data.size(), dest, ctx)) return fail(e);
        return check_native(
            ::fi_tsenddata(tx_tagged(), data.data(), data.size(), desc, imm, dest.get(), tag, ctx.get()));
    }
    /// The same to a peer_addr, straight to the provider.
    LOOM_SUBMIT_INLINE auto tagged_senddata(std::span<const std::byte> data, std::uint64_t tag, std::uint64_t imm,
                                            peer_addr dest, void* desc = nullptr, context_ptr<void> ctx = {}) noexcept
        -> void_result {
        return check_native(
            ::fi_tsenddata(tx_tagged(), data.data(), data.size(), desc, imm, dest.get(), tag, ctx.get()));
    }
    /// Sends the gathered `iov` as one tagged message.
    auto tagged_sendv(std::span<const ::iovec> iov, std::span<void* const> desc, std::uint64_t tag, fabric_addr dest,
                      context_ptr<void> ctx = {}) noexcept -> void_result {
        if (const int e = check_tx_iov(capability::tagged, iov, desc, dest, ctx)) [[unlikely]]
            return fail(e);
        return check_native(::fi_tsendv(h_.get(), iov.data(), desc.empty() ? nullptr : const_cast<void**>(desc.data()),
                                        iov.size(), dest.get(), tag, ctx.get()));
    }
    /// Sends a tagged message without a completion; the buffer is reusable on return.
    auto tagged_inject(std::span<const std::byte> data, std::uint64_t tag,
                       fabric_addr dest = fabric_addrs::unspecified) noexcept -> void_result {
        if (const int e = check_inject(capability::tagged, data.size(), dest)) [[unlikely]]
            return fail(e);
        return check_native(::fi_tinject(h_.get(), data.data(), data.size(), dest.get(), tag));
    }
    /// tagged_inject() with remote CQ data `imm`.
    auto tagged_injectdata(std::span<const std::byte> data, std::uint64_t tag, std::uint64_t imm,
                           fabric_addr dest = fabric_addrs::unspecified) noexcept -> void_result {
        if (const int e = check_inject(capability::tagged, data.size(), dest)) [[unlikely]]
            return fail(e);
        return check_native(::fi_tinjectdata(h_.get(), data.data(), data.size(), imm, dest.get(), tag));
    }
    /// Matches messages whose tag equals `tag` in every bit not set in `ignore`.
    auto tagged_recv(std::span<std::byte> buffer, std::uint64_t tag, std::uint64_t ignore = 0,
                     context_ptr<void> ctx = {}) noexcept -> void_result {
        return tagged_recv(buffer, tag, ignore, fabric_addrs::unspecified, nullptr, ctx);
    }
    /// Directed form: only messages from `src` match (needs capability::directed_recv).
    auto tagged_recv(std::span<std::byte> buffer, std::uint64_t tag, std::uint64_t ignore, fabric_addr src,
                     void* desc = nullptr, context_ptr<void> ctx = {}) noexcept -> void_result {
        return detail::post_tagged_recv(*this, buffer, tag, ignore, src, desc, ctx);
    }
    /// Receives a tagged message into registered memory; invalid_argument when `mr` does not cover `buffer`.
    auto tagged_recv(std::span<std::byte> buffer, const memory_region& mr, std::uint64_t tag, std::uint64_t ignore,
                     fabric_addr src, context_ptr<void> ctx = {}) noexcept -> void_result;
    /// Receives a tagged message into the scattered `iov`.
    auto tagged_recvv(std::span<const ::iovec> iov, std::span<void* const> desc, std::uint64_t tag,
                      std::uint64_t ignore, fabric_addr src, context_ptr<void> ctx = {}) noexcept -> void_result {
        return detail::post_tagged_recvv(*this, iov, desc, tag, ignore, src, ctx);
    }

    // ------------------------------------------------------------ pre-submission checks
    // Each returns 0 or a positive FI_E* code; used by the msg:: helpers too.
    /// Checks a send of `len` bytes before the provider sees it; cheap when the family's gate is the endpoint itself.
    [[nodiscard]] auto check_tx(capability family, std::size_t len, fabric_addr dest,
                                context_ptr<void> ctx) const noexcept -> int {
        // A family whose gate is the endpoint itself is enabled, has the capability, needs no
        // context and takes any length: only the destination is left to check. Everything else,
        // and every refusal, takes the full checks. (The gated sends, one-buffer RMA and typed
        // atomics do not come here; sendv, the msg:: helpers and the other forms do.)
        if (gates_.send(family) == h_.get() && !(dest == fabric_addrs::unspecified && needs_dest_)) [[likely]]
            return 0;
        return check_tx_full(family, len, dest, ctx);
    }
    /// Every check of a send: enabled, capability, context, destination, size.
    [[nodiscard]] auto check_tx_full(capability family, std::size_t len, fabric_addr dest,
                                     context_ptr<void> ctx) const noexcept -> int {
        if (!enabled_) return FI_EOPBADSTATE;
        if (!caps_.any(family)) return FI_EINVAL;  // wrong endpoint type for this operation
        if (needs_context_ && !ctx) return FI_EINVAL;
        if (needs_dest_ && dest == fabric_addrs::unspecified) return FI_EINVAL;
        if (len > max_msg_size_) return FI_EINVAL;
        return 0;
    }
    /// Checks an inject of `len` bytes (size against inject_size()).
    [[nodiscard]] auto check_inject(capability family, std::size_t len, fabric_addr dest) const noexcept -> int {
        if (!enabled_) return FI_EOPBADSTATE;
        if (!caps_.any(family)) return FI_EINVAL;
        if (needs_dest_ && dest == fabric_addrs::unspecified) return FI_EINVAL;
        if (len > inject_size_) return FI_EINVAL;
        return 0;
    }
    /// Checks a receive.
    [[nodiscard]] auto check_rx(capability family, fabric_addr src, context_ptr<void> ctx) const noexcept -> int {
        return detail::check_receive(enabled_, caps_, needs_context_, family, src, ctx);
    }
    /// Checks a gathered send (descriptor count, iovec bound, total length).
    [[nodiscard]] auto check_tx_iov(capability family, std::span<const ::iovec> iov, std::span<void* const> desc,
                                    fabric_addr dest, context_ptr<void> ctx) const noexcept -> int {
        if (!desc.empty() && desc.size() != iov.size()) return FI_EINVAL;
        if (!enabled_) return FI_EOPBADSTATE;
        if (iov.size() > limits_.tx) return FI_EINVAL;
        return check_tx(family, total_length(iov), dest, ctx);
    }
    /// Checks a scattered receive.
    [[nodiscard]] auto check_rx_iov(capability family, std::span<const ::iovec> iov, std::span<void* const> desc,
                                    fabric_addr src, context_ptr<void> ctx) const noexcept -> int {
        return detail::check_receive_iov(enabled_, caps_, needs_context_, limits_.rx, family, iov, desc, src, ctx);
    }
    /// Total bytes of `iov`; all ones when the sum overflows.
    [[nodiscard]] static auto total_length(std::span<const ::iovec> iov) noexcept -> std::size_t {
        std::size_t n = 0;
        for (const auto& v : iov) {
            if (n + v.iov_len < n) return ~std::size_t{0};  // overflow: fails the size check
            n += v.iov_len;
        }
        return n;
    }
    /// A check's FI_E* code as an error result.
    [[nodiscard]] static auto fail(int code) noexcept -> void_result { return detail::fail_code(code); }

private:
    detail::child_link srx_link_;    // declared first: destroyed after the native endpoint closes
    detail::child_link eq_link_;     // likewise
    detail::child_link owner_link_;  // likewise
    detail::unique_fid<::fid_ep> h_;
    // What operations read, together (64 bytes with the first four gates): a stream's copies
    // evict the endpoint between operations, and each line it spans costs a miss.
    ::fid_domain* domain_{nullptr};  // memory_region::usable_with
    op_flag tx_flags_{};
    op_flag rx_flags_{};
    bool selective_tx_{false};
    bool selective_rx_{false};
    /// Stays with the handle: a moved-from endpoint is not enabled, so every check refuses it
    /// (bad_state) instead of handing the provider a null handle.
    detail::zero_on_move<bool> enabled_{false};
    detail::op_gates gates_{};
    [[nodiscard]] auto tx_msg() const noexcept -> ::fid_ep* { return gates_.send(capability::msg); }
    [[nodiscard]] auto tx_tagged() const noexcept -> ::fid_ep* { return gates_.send(capability::tagged); }
    ::fid_fabric* fabric_{nullptr};
    std::pmr::memory_resource* mr_{nullptr};
    capability caps_{};
    endpoint_types type_{endpoint_types::unspecified};
    address_format format_{address_format::unspecified};
    loom::iov_limits limits_{};
    std::size_t inject_size_{0};
    std::size_t max_msg_size_{0};
    bool needs_context_{false};
    bool needs_dest_{false};
    bool has_av_{false};
    provider_quirks quirks_{};
    /// The gates, derived from enabled_, caps_, max_msg_size_, needs_context_ and the quirks
    /// whenever enabled_ changes (a move takes them along and leaves the source refusing).
    void refresh_gates() noexcept {
        if (enabled_ && h_)
            gates_.open(h_.get(), caps_, max_msg_size_, needs_context_, quirks_.broken_fetch_atomics);
        else
            gates_.shut();
    }
    friend auto get_native_endpoint_option(const endpoint&, int, int, void*, std::size_t*) noexcept -> void_result;
};

namespace detail {
/// fi_getname on any endpoint-class fid, decoded as `format` (buffer grown as the provider asks).
[[nodiscard]] auto native_name(::fid_t fid, address_format format) -> result<address>;
}  // namespace detail

// ---------------------------------------------------------------- endpoint options
/// Reads option `name` into `value` (`*length` bytes of room; set to the size read); invalid_argument for an unknown
/// option or too little room.
auto get_endpoint_option(const endpoint& ep, ep_opt::level level, ep_opt::option name, void* value,
                         std::size_t* length) noexcept -> void_result;
/// Sets option `name` from `value` (`length` must be its size); invalid_argument for an unknown option or another size.
auto set_endpoint_option(endpoint& ep, ep_opt::level level, ep_opt::option name, const void* value,
                         std::size_t length) noexcept -> void_result;
/// Native FI_OPT_* (or provider extension) identifiers, forwarded unchanged.
auto get_native_endpoint_option(const endpoint& ep, int level, int name, void* value, std::size_t* length) noexcept
    -> void_result;
/// The same as set_endpoint_option, unchecked.
auto set_native_endpoint_option(endpoint& ep, int level, int name, const void* value, std::size_t length) noexcept
    -> void_result;

// ---------------------------------------------------------------- free-function spellings
/// ep.send(data, dest, desc, ctx).
inline auto send(endpoint& ep, std::span<const std::byte> data, fabric_addr dest, void* desc,
                 context_ptr<void> ctx = {}) noexcept -> void_result {
    return ep.send(data, dest, desc, ctx);
}
/// ep.tagged_send(data, tag, dest, desc, ctx).
inline auto tagged_send(endpoint& ep, std::span<const std::byte> data, std::uint64_t tag, fabric_addr dest, void* desc,
                        context_ptr<void> ctx = {}) noexcept -> void_result {
    return ep.tagged_send(data, tag, dest, desc, ctx);
}
/// ep.send(data, dest, desc, ctx), to a peer_addr.
inline auto send(endpoint& ep, std::span<const std::byte> data, peer_addr dest, void* desc,
                 context_ptr<void> ctx = {}) noexcept -> void_result {
    return ep.send(data, dest, desc, ctx);
}
/// ep.tagged_send(data, tag, dest, desc, ctx), to a peer_addr.
inline auto tagged_send(endpoint& ep, std::span<const std::byte> data, std::uint64_t tag, peer_addr dest, void* desc,
                        context_ptr<void> ctx = {}) noexcept -> void_result {
    return ep.tagged_send(data, tag, dest, desc, ctx);
}
// Receives accept an endpoint or a shared receive context (receive_target). Source filters,
// descriptors, contexts and tag masks go to the provider unchanged.
/// Receives into `buffer` on an endpoint or a shared receive context.
template <receive_target T>
auto recv(T& target, std::span<std::byte> buffer, fabric_addr src, void* desc, context_ptr<void> ctx = {}) noexcept
    -> void_result {
    return detail::post_recv(target, buffer, src, desc, ctx);
}
/// Receives into the scattered `iov` on an endpoint or a shared receive context.
template <receive_target T>
auto recvv(T& target, std::span<const ::iovec> iov, std::span<void* const> desc, fabric_addr src,
           context_ptr<void> ctx = {}) noexcept -> void_result {
    return detail::post_recvv(target, iov, desc, src, ctx);
}
/// Receives a tagged message on an endpoint or a shared receive context.
template <receive_target T>
auto tagged_recv(T& target, std::span<std::byte> buffer, std::uint64_t tag, std::uint64_t ignore, fabric_addr src,
                 void* desc, context_ptr<void> ctx = {}) noexcept -> void_result {
    return detail::post_tagged_recv(target, buffer, tag, ignore, src, desc, ctx);
}
/// Receives a tagged message into `iov` on an endpoint or a shared receive context.
template <receive_target T>
auto tagged_recvv(T& target, std::span<const ::iovec> iov, std::span<void* const> desc, std::uint64_t tag,
                  std::uint64_t ignore, fabric_addr src, context_ptr<void> ctx = {}) noexcept -> void_result {
    return detail::post_tagged_recvv(target, iov, desc, tag, ignore, src, ctx);
}
static_assert(receive_target<endpoint>);
static_assert(!receive_target<const endpoint>);

}  // namespace loom
