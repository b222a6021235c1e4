// loom/completion_registry.hpp — operations awaiting their completion, found by context.
#pragma once

#include <loom/completion_event.hpp>
#include <loom/detail/spin_lock.hpp>

#include <rdma/fabric.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <vector>

namespace loom {

class completion_registry;

/// The part of an operation state that the registry knows: the native context the provider
/// returns in the operation's completion, and the function that delivers that completion.
/// Asynchronous front ends derive their operation states from it; the state is immovable and
/// allocates nothing to be registered.
class registered_completion {
public:
    /// Called once with the operation's completion, after the registry has let go of it: the
    /// function may destroy the state or register it again. `final_delivery`: the reader's last
    /// act (completion_registry::dispatch_final), after which it touches neither the queue nor
    /// the registry, so the function may also run code that reads, deregisters or destroys them.
    using deliver_fn = void (*)(registered_completion& self, const completion_event& ev, bool final_delivery) noexcept;
    /// Called by completion_registry::retry_deferred for an operation whose submission found the
    /// provider busy (FI_EAGAIN) and was deferred: it submits again, or ends. True when the
    /// provider is still busy: the registry keeps the operation first in line (nothing is
    /// submitted ahead of it) and stops retrying until its next call.
    using retry_fn = bool (*)(registered_completion& self) noexcept;

    /// `owner`: what the operation belongs to (an endpoint of a front end), for
    /// completion_registry::remove_owned and visit_owned; null for none.
    explicit registered_completion(deliver_fn deliver, retry_fn retry = nullptr, const void* owner = nullptr) noexcept
        : deliver_(deliver), retry_(retry), owner_(owner) {}
    registered_completion(const registered_completion&) = delete;
    auto operator=(const registered_completion&) -> registered_completion& = delete;
    ~registered_completion() = default;

    /// What the operation is submitted with (the provider stores and returns this pointer).
    [[nodiscard]] auto context() noexcept -> void* { return &native_; }
    /// context() as an integer: the key the registry files the operation under.
    [[nodiscard]] auto context_address() const noexcept -> std::uintptr_t {
        return reinterpret_cast<std::uintptr_t>(&native_);
    }
    /// What the operation belongs to; null for none.
    [[nodiscard]] auto owner() const noexcept -> const void* { return owner_; }

protected:
    /// Marks a state whose delivery runs no user code (it records the event for a waiting
    /// thread): any reader may deliver it, see completion_registry::dispatch_passive.
    void make_passive() noexcept { passive_ = true; }

private:
    friend class completion_registry;
    ::fi_context2 native_;  // the provider's; never read here, so not cleared for each operation
    registered_completion* left_{nullptr};
    registered_completion* right_{nullptr};
    deliver_fn deliver_;
    retry_fn retry_;
    const void* owner_;
    bool linked_{false};    // in the tree
    bool deferred_{false};  // in the deferred list (left_ is the next one)
    bool passive_{false};
};

/// The operations registered on one completion queue, keyed by context address. A completion
/// is matched by comparing its context pointer with registered addresses: a foreign context is
/// never dereferenced. An intrusive splay tree under the queue's lock: registration, lookup and
/// removal take amortized logarithmic time and allocate nothing. While the process has only one
/// thread, those three take no lock either (detail::process_is_single_threaded).
class completion_registry {
public:
    /// `mr`: where the held-event ring lives (null: the default resource). `serialized`: the
    /// application makes every call on the queue, its endpoints and their operations (stop
    /// requests included) from one thread at a time, as the domain's threading model
    /// (threading_mode::domain or completion) obliges it to: the registry then takes no lock.
    explicit completion_registry(std::pmr::memory_resource* mr = nullptr, bool serialized = false);
    completion_registry(const completion_registry&) = delete;
    auto operator=(const completion_registry&) -> completion_registry& = delete;
    ~completion_registry() = default;

    /// Registers `op` before its submission; false when it (or another state with the same
    /// context) is already registered.
    auto add(registered_completion& op) noexcept -> bool;
    /// Unregisters `op` (a submission that failed, an operation given up); false when it was
    /// not registered, e.g. because its completion has already been taken.
    auto remove(registered_completion& op) noexcept -> bool;
    /// Delivers `ev` to the operation registered with its context, unlinking it first; false
    /// (and nothing changes) when no registered operation owns the event.
    auto dispatch(const completion_event& ev) noexcept -> bool;
    /// dispatch() for the last event a reader delivers in its call: after it, the reader
    /// touches neither the queue nor this registry, and the operation is told so (its
    /// deliver_fn's final_delivery), unless a batch is open (open_batch): a reader nested in
    /// another reader's delivery is not the last.
    auto dispatch_final(const completion_event& ev) noexcept -> bool;
    /// Brackets what a reader delivers or retries before its last delivery, where user code
    /// may run (a delivery or a retry that polls the queue again): until the matching
    /// close_batch(), no dispatch_final on any thread delivers as final.
    void open_batch() noexcept { open_batches_.fetch_add(1, std::memory_order_relaxed); }
    /// Ends what the matching open_batch() began.
    void close_batch() noexcept { open_batches_.fetch_sub(1, std::memory_order_relaxed); }
    /// The same for an operation whose delivery runs no user code (make_passive): what a reader
    /// that must not run other operations' completions (a blocking call) may still deliver.
    auto dispatch_passive(const completion_event& ev) noexcept -> bool;
    /// Called by remove_owned and visit_owned for each operation of an owner; `deferred`: it was
    /// waiting for resubmission, not submitted.
    using owned_fn = void (*)(registered_completion& op, bool deferred, void* arg) noexcept;
    /// Unregisters every operation (registered or deferred) whose owner is `owner` and then, out
    /// of the lock, calls `fn` for each: after a successful close of their endpoint, when no
    /// completion will come for them. Linear in the number of registered operations; allocates
    /// nothing. Returns how many.
    auto remove_owned(const void* owner, owned_fn fn, void* arg) noexcept -> std::size_t;
    /// Calls `fn` for every registered operation of `owner`, under the lock (`fn` must not call
    /// the registry; fi_cancel is what it is for); deferred ones are taken out of the deferred
    /// list first and passed with deferred = true out of the lock. Returns how many.
    auto visit_owned(const void* owner, owned_fn fn, void* arg) noexcept -> std::size_t;
    /// How a front end submits a new operation: `try_submit()` (registers and submits; true
    /// when the provider is busy, FI_EAGAIN) runs only when nothing is deferred, and `op` is
    /// deferred when something is or the provider was busy, so that operations reach the
    /// provider in the order they were started. False only when `op` could not be deferred.
    template <class TrySubmit>
    auto submit_in_order(registered_completion& op, TrySubmit&& try_submit) noexcept -> bool {
        return submit_in_order(op, static_cast<TrySubmit&&>(try_submit), [] noexcept {});
    }
    /// The same, calling `prepare_retry()` before `op` is deferred (what its retry_fn will need
    /// that the first submission took from elsewhere).
    template <class TrySubmit, class PrepareRetry>
    auto submit_in_order(registered_completion& op, TrySubmit&& try_submit, PrepareRetry&& prepare_retry) noexcept
        -> bool {
        if (deferred_count() == 0 && !try_submit()) return true;
        prepare_retry();
        return defer(op);
    }
    /// Queues `op`, which is not registered, for a later submission by retry_deferred; false
    /// when it is registered, queued, or has no retry_fn.
    auto defer(registered_completion& op) noexcept -> bool;
    /// Takes `op` out of the deferred list; false when it is not queued there (e.g. a retry has
    /// taken it already). Whoever succeeds owns its completion.
    auto withdraw_deferred(registered_completion& op) noexcept -> bool;
    /// Calls the retry_fn of the operations deferred before this call, in order (outside the
    /// lock), until one finds the provider still busy: that one goes back to the front of the
    /// line and the rest wait behind it for the next call. Returns how many were retried. Whoever
    /// polls the queue calls it after reading (loom::execution::poll_completions, the Asio
    /// service).
    auto retry_deferred() noexcept -> std::size_t;
    /// Operations waiting in the deferred list for retry_deferred.
    [[nodiscard]] auto deferred_count() const noexcept -> std::size_t {
        return deferred_count_.load(std::memory_order_acquire);
    }

    /// Events a reader took from the queue but may not deliver (those read in one batch after an
    /// event it hands back unhandled; those a blocking call reads for others): kept here, in
    /// order, for the next reader that asks (so none is lost and the order holds). Room for
    /// hold_capacity events is allocated with the registry; hold() grows it when full and is
    /// false only when that allocation fails.
    static constexpr std::size_t hold_capacity = 16;
    /// Keeps `ev` for the next reader, after those already held.
    auto hold(const completion_event& ev) noexcept -> bool;
    /// Makes room for `n` more held events without a later allocation; false when the memory
    /// cannot be had (a reader that must not lose events then reads no more than hold_room()).
    auto reserve_hold(std::size_t n) noexcept -> bool;
    /// Events that can be held before hold() must allocate.
    [[nodiscard]] auto hold_room() const noexcept -> std::size_t;
    /// Delivers the held events that belong to passive operations (make_passive), keeping the
    /// others in order: what a blocking call does first, in case another reader held its
    /// completion. Returns how many were delivered.
    auto dispatch_held_passive() noexcept -> std::size_t;
    /// The oldest held event into `out` (reusing its storage); false when none is held.
    auto take_held(completion_event& out) noexcept -> bool;
    /// Events held for readers.
    [[nodiscard]] auto held_count() const noexcept -> std::size_t {
        return held_count_.load(std::memory_order_acquire);
    }
    /// True when an operation is registered with `context` (compared, not dereferenced).
    [[nodiscard]] auto owns(const void* context) const noexcept -> bool;
    /// Operations registered (deferred ones not counted).
    [[nodiscard]] auto size() const noexcept -> std::size_t;
    /// True when the registry takes no lock (constructed serialized).
    [[nodiscard]] auto serialized() const noexcept -> bool { return m_.serialized(); }

private:
    /// Top-down splay of the tree rooted at root_ around `key`; the new root is the closest node.
    void splay(std::uintptr_t key) noexcept;
    /// Under the lock: unlinks and returns the operation registered with `key`, or null. A root
    /// that matches is unlinked without a splay (it is where a splay would leave it).
    [[nodiscard]] auto take(std::uintptr_t key) noexcept -> registered_completion*;
    /// take() and add() where the tree must be restructured first.
    [[nodiscard]] auto take_splaying(std::uintptr_t key) noexcept -> registered_completion*;
    [[nodiscard]] auto link_splaying(registered_completion& op) noexcept -> bool;
    /// Under the lock: take() for the event's context.
    [[nodiscard]] auto take_owner(const completion_event& ev) noexcept -> registered_completion*;
    /// Day-Stout-Warren: the tree as a chain of right children, in key order (still a valid
    /// splay tree), so that it can be walked without a stack.
    void flatten() noexcept;
    [[nodiscard]] auto take_deferred_owned(const void* owner) noexcept -> registered_completion*;
    [[nodiscard]] auto grow_hold(std::size_t need) noexcept -> bool;
    mutable detail::spin_lock_unless_serialized m_;
    registered_completion* root_{nullptr};
    std::size_t size_{0};
    std::atomic<unsigned> open_batches_{0};  // read by dispatch_final, beside what it writes
    registered_completion* deferred_head_{nullptr};
    registered_completion* deferred_tail_{nullptr};
    // Read without the lock by the polls that find nothing deferred or held (the common case).
    std::atomic<std::size_t> deferred_count_{0};
    std::pmr::vector<completion_event> held_;  // a ring: held_count_ events from held_first_
    std::size_t held_first_{0};
    std::atomic<std::size_t> held_count_{0};
};

}  // namespace loom

#include <loom/impl/completion_registry.hpp>
