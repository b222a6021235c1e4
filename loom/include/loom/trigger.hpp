// loom/trigger.hpp — deferred (triggered) work: operations and counter updates that a
// provider runs once a counter reaches a threshold (fi_trigger, FI_QUEUE_WORK).
#pragma once

#include <rdma/fi_trigger.h>
#include <sys/uio.h>

#include <complex>
#include <cstddef>
#include <cstdint>
#include <loom/atomic.hpp>
#include <loom/context.hpp>
#include <loom/counter.hpp>
#include <loom/detail/fid.hpp>
#include <loom/detail/inline_vector.hpp>
#include <loom/domain.hpp>
#include <loom/endpoint.hpp>
#include <loom/memory_region.hpp>
#include <loom/msg.hpp>
#include <memory_resource>
#include <span>
#include <type_traits>

/// Deferred work that the provider starts once a counter reaches a threshold (fi_trigger).
namespace loom::trigger {

/// The work runs once `cntr` counts at least `threshold` successful completions. A threshold
/// the counter already meets (0 included) runs the work at submission.
struct threshold_condition {
    counter* cntr{nullptr};      ///< the counter watched
    std::uint64_t threshold{0};  ///< successful completions it must count
};

/// What a deferred_work runs.
enum class work_kind : int {
    none = -1,                     ///< no work: an empty (default-constructed or moved-from) deferred_work
    recv = FI_OP_RECV,             ///< FI_OP_RECV: a receive (create_recv)
    send = FI_OP_SEND,             ///< FI_OP_SEND: a send (create_send)
    tagged_recv = FI_OP_TRECV,     ///< FI_OP_TRECV: a tagged receive (create_tagged_recv)
    tagged_send = FI_OP_TSEND,     ///< FI_OP_TSEND: a tagged send (create_tagged_send)
    read = FI_OP_READ,             ///< FI_OP_READ: a one-sided RMA read (create_read)
    write = FI_OP_WRITE,           ///< FI_OP_WRITE: a one-sided RMA write (create_write)
    atomic = FI_OP_ATOMIC,         ///< FI_OP_ATOMIC: a base (non-fetching) atomic operation (create_atomic)
    counter_set = FI_OP_CNTR_SET,  ///< FI_OP_CNTR_SET: set a counter to a value (create_counter_set)
    counter_add = FI_OP_CNTR_ADD,  ///< FI_OP_CNTR_ADD: add a value to a counter (create_counter_add)
};

/// Remote segments of a deferred RMA operation; 16 are kept inline.
using remote_array = loom::detail::inline_vector<remote_memory, 16>;

/// A deferred one-sided read or write: local segments (with one descriptor each, or none),
/// the peer, and the remote segments. Local and remote byte totals must be equal.
struct rma_message {
    msg::iov_array iov{};                         ///< local segments
    msg::desc_array desc{};                       ///< their descriptors, one per segment or none
    fabric_addr addr{fabric_addrs::unspecified};  ///< the peer; unspecified on a connected endpoint
    remote_array remote{};                        ///< remote segments
    std::uint64_t data{0};                        ///< remote CQ data, sent with op_flag::remote_cq_data (writes)
};

/// The libfabric datatype of T for typed atomics: loom::atomic's deduction, as the native enum.
template <atomic::atomic_value T>
struct datatype_of {
    /// The native fi_datatype of T.
    static constexpr ::fi_datatype value = static_cast<::fi_datatype>(atomic::datatype_of<T>);
};
template <class T>
concept atomic_operand = atomic::atomic_value<T>;

/// True when the endpoint negotiated capability::trigger (false for an invalid endpoint).
[[nodiscard]] auto supports_trigger(const endpoint& ep) noexcept -> bool;
/// True when the domain's provider entry carries capability::trigger (needed for deferred
/// counter updates, which involve no endpoint).
[[nodiscard]] auto supports_trigger(const domain& dom) noexcept -> bool;

/// Asks the provider to run or discard all queued work of the domain (FI_FLUSH_WORK).
/// After success every deferred_work of the domain may be mark_completed(). not_supported
/// for a domain without capability::trigger; providers that do not implement the command
/// report not_implemented (sockets in libfabric 2.1).
auto flush_work(domain& dom) noexcept -> void_result;

namespace detail {
struct work_block;
struct layout;

// Pre-submission checks, each 0 or a positive FI_E* code (invalid_argument unless noted).
// Exposed for the unit tests; the factories run them before any native call.

/// Condition: a counter that exists and belongs to `dom` (FI_EINVAL otherwise).
[[nodiscard]] auto check_condition(const threshold_condition& cond, ::fid_domain* dom) noexcept -> int;
/// A counter to be updated or incremented: valid and of `dom`.
[[nodiscard]] auto check_counter(const counter* c, ::fid_domain* dom) noexcept -> int;
/// Per-operation flags: op_flag::inject cannot be deferred (the buffer would be reused).
[[nodiscard]] auto check_flags(op_flag flags) noexcept -> int;
/// The message's own context must be empty: the provider runs deferred work with the
/// descriptor's context and reports through the completion counter, not the CQ.
[[nodiscard]] auto check_message_context(const void* ctx) noexcept -> int;
/// Local/remote RMA segments: one descriptor per local segment or none, at most
/// `limits.tx` local and 1..`limits.rma` remote segments, equal byte totals without
/// overflow, remote ranges that do not wrap.
[[nodiscard]] auto check_rma(std::span<const ::iovec> local, std::span<void* const> desc,
                             std::span<const remote_memory> remote, const iov_limits& limits) noexcept -> int;
/// Base atomics only (min..bxor, atomic_write), a known datatype, count >= 1 and the
/// operand bytes inside the remote segment.
[[nodiscard]] auto check_atomic(::fi_op op, ::fi_datatype dt, const void* operand, std::size_t count,
                                const remote_memory& remote) noexcept -> int;
/// Bytes of one element of `dt`, 0 for an unknown datatype.
[[nodiscard]] auto datatype_size(::fi_datatype dt) noexcept -> std::size_t;
}  // namespace detail

/// One unit of deferred work. The native descriptor (struct fi_deferred_work and the IOV
/// arrays it points to) lives in one block from the memory resource, at a fixed address,
/// until the work is completed or cancelled; the deferred_work object itself may move.
///
/// The provider may reference the descriptor, the buffers, registrations, endpoint and
/// counters until the work has run *and* completed (for transfers: until the completion
/// counter counts it). Then call mark_completed(). To abandon pending work call cancel()
/// and handle its failure while keeping the work. Destroying (or assigning over) pending
/// work cancels it and calls std::terminate() if that fails: freeing a descriptor the
/// provider still references would be a use-after-free.
///
/// While work is pending it counts as an open child of its domain (domain::close() is busy).
class deferred_work {
public:
    deferred_work() noexcept = default;
    /// Takes over `o`'s work; `o` is left empty.
    deferred_work(deferred_work&& o) noexcept;
    /// Cancels this object's pending work (terminating if that fails), then takes over `o`'s.
    auto operator=(deferred_work&& o) noexcept -> deferred_work&;
    deferred_work(const deferred_work&) = delete;
    auto operator=(const deferred_work&) -> deferred_work& = delete;
    ~deferred_work();

    // ------------------------------------------------------------ transfers
    // Common rules: `dom` valid, `ep` of `dom` and enabled, the condition counter and the
    // completion counter (required) of `dom`; not_supported unless supports_trigger(ep);
    // IOV counts within ep.iov_limits(); no message context; no op_flag::inject. `flags`
    // are the operation's flags (the endpoint defaults are not added).

    /// Sends `m` when the condition holds; `completion_counter` counts its completion.
    template <class Ctx>
    [[nodiscard]] static auto create_send(domain& dom, endpoint& ep, threshold_condition cond,
                                          counter* completion_counter, const msg::send_message<Ctx>& m,
                                          op_flag flags = {}, std::pmr::memory_resource* mr = nullptr)
        -> result<deferred_work> {
        return make_msg(work_kind::send, dom, ep, cond, completion_counter, m.iov, m.desc, m.addr,
                        msg::detail::to_void(m.context), m.data, 0, 0, flags, mr);
    }
    /// Posts the receive `m` when the condition holds.
    template <class Ctx>
    [[nodiscard]] static auto create_recv(domain& dom, endpoint& ep, threshold_condition cond,
                                          counter* completion_counter, const msg::receive_message<Ctx>& m,
                                          op_flag flags = {}, std::pmr::memory_resource* mr = nullptr)
        -> result<deferred_work> {
        return make_msg(work_kind::recv, dom, ep, cond, completion_counter, m.iov, m.desc, m.addr,
                        msg::detail::to_void(m.context), 0, 0, 0, flags, mr);
    }
    /// Sends the tagged message `m` when the condition holds.
    template <class Ctx>
    [[nodiscard]] static auto create_tagged_send(domain& dom, endpoint& ep, threshold_condition cond,
                                                 counter* completion_counter, const msg::tagged_send_message<Ctx>& m,
                                                 op_flag flags = {}, std::pmr::memory_resource* mr = nullptr)
        -> result<deferred_work> {
        return make_msg(work_kind::tagged_send, dom, ep, cond, completion_counter, m.iov, m.desc, m.addr,
                        msg::detail::to_void(m.context), m.data, m.tag, 0, flags, mr);
    }
    /// Posts the tagged receive `m` when the condition holds.
    template <class Ctx>
    [[nodiscard]] static auto create_tagged_recv(domain& dom, endpoint& ep, threshold_condition cond,
                                                 counter* completion_counter, const msg::tagged_receive_message<Ctx>& m,
                                                 op_flag flags = {}, std::pmr::memory_resource* mr = nullptr)
        -> result<deferred_work> {
        return make_msg(work_kind::tagged_recv, dom, ep, cond, completion_counter, m.iov, m.desc, m.addr,
                        msg::detail::to_void(m.context), 0, m.tag, m.ignore, flags, mr);
    }

    /// One-sided write of the local segments to the remote segments of `m.addr`.
    [[nodiscard]] static auto create_write(domain& dom, endpoint& ep, threshold_condition cond,
                                           counter* completion_counter, const rma_message& m, op_flag flags = {},
                                           std::pmr::memory_resource* mr = nullptr) -> result<deferred_work>;
    /// One-sided read of the remote segments of `m.addr` into the local segments.
    [[nodiscard]] static auto create_read(domain& dom, endpoint& ep, threshold_condition cond,
                                          counter* completion_counter, const rma_message& m, op_flag flags = {},
                                          std::pmr::memory_resource* mr = nullptr) -> result<deferred_work>;
    /// Single-segment forms: `local` (registered with `desc`, may be null) and one remote segment.
    [[nodiscard]] static auto create_write(domain& dom, endpoint& ep, threshold_condition cond,
                                           counter* completion_counter, std::span<const std::byte> local, void* desc,
                                           fabric_addr peer, const remote_memory& remote, op_flag flags = {},
                                           std::pmr::memory_resource* mr = nullptr) -> result<deferred_work>;
    /// Single-segment read: one remote segment into `local` (registered with `desc`, may be null).
    [[nodiscard]] static auto create_read(domain& dom, endpoint& ep, threshold_condition cond,
                                          counter* completion_counter, std::span<std::byte> local, void* desc,
                                          fabric_addr peer, const remote_memory& remote, op_flag flags = {},
                                          std::pmr::memory_resource* mr = nullptr) -> result<deferred_work>;

    /// A base (non-fetching) atomic: `count` elements of `dt` at `operand` applied with `op`
    /// to `remote` at `peer`. Needs capability::atomic; the provider's limit for (op, dt) is
    /// queried (fi_atomicvalid) after the other checks: not_supported when it has none,
    /// invalid_argument when `count` exceeds it.
    [[nodiscard]] static auto create_atomic(domain& dom, endpoint& ep, threshold_condition cond,
                                            counter* completion_counter, ::fi_op op, ::fi_datatype dt,
                                            const void* operand, std::size_t count, void* desc, fabric_addr peer,
                                            const remote_memory& remote, op_flag flags = {},
                                            std::pmr::memory_resource* mr = nullptr) -> result<deferred_work>;
    /// Typed form: the datatype follows from T.
    template <atomic_operand T>
    [[nodiscard]] static auto create_atomic(domain& dom, endpoint& ep, threshold_condition cond,
                                            counter* completion_counter, ::fi_op op, std::span<const T> operand,
                                            void* desc, fabric_addr peer, const remote_memory& remote,
                                            op_flag flags = {}, std::pmr::memory_resource* mr = nullptr)
        -> result<deferred_work> {
        return create_atomic(dom, ep, cond, completion_counter, op, datatype_of<std::remove_cv_t<T>>::value,
                             operand.data(), operand.size(), desc, peer, remote, flags, mr);
    }

    // ------------------------------------------------------------ counter updates
    /// Adds `value` to `target` when the condition holds (no endpoint involved; the domain
    /// must support triggers). The update is complete as soon as `target` shows it.
    [[nodiscard]] static auto create_counter_add(domain& dom, threshold_condition cond, counter& target,
                                                 std::uint64_t value, std::pmr::memory_resource* mr = nullptr)
        -> result<deferred_work>;
    /// Sets `target` to `value` when the condition holds.
    [[nodiscard]] static auto create_counter_set(domain& dom, threshold_condition cond, counter& target,
                                                 std::uint64_t value, std::pmr::memory_resource* mr = nullptr)
        -> result<deferred_work>;

    // ------------------------------------------------------------ lifetime
    /// Records that the provider no longer references the work (its completion was observed,
    /// or flush_work() succeeded) and releases the descriptor. No native call.
    void mark_completed() noexcept;
    /// Withdraws pending work (FI_CANCEL_WORK). Success releases the descriptor; failure keeps
    /// the work pending and untouched. Work that is not pending: success, no native call.
    /// No libfabric 2.1 provider implements the command: sockets reports not_implemented.
    auto cancel() noexcept -> void_result;

    /// Submitted and neither completed nor cancelled.
    [[nodiscard]] auto pending() const noexcept -> bool { return pending_; }
    /// What the work runs.
    [[nodiscard]] auto kind() const noexcept -> work_kind { return kind_; }
    /// The condition's threshold.
    [[nodiscard]] auto threshold() const noexcept -> std::uint64_t { return threshold_; }
    /// The native descriptor while pending (nullptr otherwise).
    [[nodiscard]] auto native() const noexcept -> const ::fi_deferred_work*;
    /// The native domain the work was queued in.
    [[nodiscard]] auto domain_native() const noexcept -> ::fid_domain* { return domain_; }

private:
    [[nodiscard]] static auto make_msg(work_kind kind, domain& dom, endpoint& ep, threshold_condition cond,
                                       counter* completion_counter, std::span<const ::iovec> iov,
                                       std::span<void* const> desc, fabric_addr addr, const void* msg_ctx,
                                       std::uint64_t data, std::uint64_t tag, std::uint64_t ignore, op_flag flags,
                                       std::pmr::memory_resource* mr) -> result<deferred_work>;
    [[nodiscard]] static auto make_rma(work_kind kind, domain& dom, endpoint& ep, threshold_condition cond,
                                       counter* completion_counter, std::span<const ::iovec> iov,
                                       std::span<void* const> desc, fabric_addr addr,
                                       std::span<const remote_memory> remote, std::uint64_t data, op_flag flags,
                                       std::pmr::memory_resource* mr) -> result<deferred_work>;
    [[nodiscard]] static auto make_counter(work_kind kind, domain& dom, threshold_condition cond, counter& target,
                                           std::uint64_t value, std::pmr::memory_resource* mr) -> result<deferred_work>;
    /// Allocates the native work block and fills the fields every kind shares.
    [[nodiscard]] static auto prepare(work_kind kind, domain& dom, threshold_condition cond, const detail::layout& l,
                                      std::pmr::memory_resource* mr) -> result<deferred_work>;
    auto submit(domain& dom) noexcept -> void_result;
    void release() noexcept;
    void abandon_or_terminate() noexcept;

    detail::work_block* block_{nullptr};
    std::size_t bytes_{0};
    std::pmr::memory_resource* mr_{nullptr};
    ::fid_domain* domain_{nullptr};
    loom::detail::child_count domain_children_;
    work_kind kind_{work_kind::none};
    std::uint64_t threshold_{0};
    bool pending_{false};
};

}  // namespace loom::trigger
