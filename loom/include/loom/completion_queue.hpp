// loom/completion_queue.hpp — completion queues and typed completion events.
#pragma once

#include <loom/completion_event.hpp>
#include <loom/completion_registry.hpp>
#include <loom/context.hpp>
#include <loom/detail/fid.hpp>
#include <loom/detail/hot.hpp>
#include <loom/detail/resource_alloc.hpp>
#include <loom/domain.hpp>

#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include <algorithm>
#include <array>

#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>

namespace loom {

/// What each CQ entry carries (fi_cq_format).
enum class cq_format : int {
    context = 1,  ///< FI_CQ_FORMAT_CONTEXT: the operation context only
    msg = 2,      ///< FI_CQ_FORMAT_MSG: context, completion flags and received length
    data = 3,     ///< FI_CQ_FORMAT_DATA: msg plus the receive buffer and remote CQ data
    tagged = 4    ///< FI_CQ_FORMAT_TAGGED: data plus the tag; read_tagged needs it
};

/// What a queue's wait object is (fi_wait_obj), as completion_queue::wait_object_type reports it.
enum class wait_object : int {
    none = 0,         ///< FI_WAIT_NONE: no wait object; the queue cannot be waited on
    unspecified = 1,  ///< FI_WAIT_UNSPEC: a provider-chosen mechanism, usable only through libfabric calls
    set = 2,          ///< FI_WAIT_SET (deprecated): a wait set
    fd = 3,           ///< FI_WAIT_FD: a file descriptor for select, poll and epoll (see wait_descriptor())
    mutex_cond = 4,   ///< FI_WAIT_MUTEX_COND (deprecated): a pthread mutex and condition variable
    yield = 5,        ///< FI_WAIT_YIELD: no wait object; waiting spins and yields
    pollfd = 6        ///< FI_WAIT_POLLFD: a set of file descriptors for poll(2) that may change over time
};

/// What completion_queue::dispatch_ready did.
struct dispatch_result {
    std::size_t completed{0};                     ///< events delivered to registered operations
    std::optional<completion_event> unhandled{};  ///< the first event no operation owns
};

class xpu_context;

/// How a completion queue is opened (fi_cq_attr).
struct cq_attr {
    std::size_t size{0};                  ///< 0: provider default
    cq_format format{cq_format::tagged};  ///< what each entry carries; read_tagged needs tagged
    bool wait_obj{false};                 ///< request a wait object (enables blocking wait)
    bool want_source{false};              ///< read source addresses (needs capability::source)
    /// Device-side use through this XPU context of the same domain (FI_XPU, libfabric 2.7:
    /// not_supported before; loom/xpu.hpp). Untested on hardware.
    const xpu_context* xpu{nullptr};
};

/// A tagged completion exactly as the provider wrote it (the layout of fi_cq_tagged_entry),
/// filled without a copy by completion_queue::read_tagged. Typed accessors; native() for the
/// entry itself. The tag is defined for receives only (a send's completion leaves it open).
class tagged_completion {
public:
    /// The operation's context (op_context).
    [[nodiscard]] auto context() const noexcept -> void* { return e_.op_context; }
    /// The context as the request_context it was submitted with.
    [[nodiscard]] auto request() const noexcept -> request_context* {
        return request_context::from_native(e_.op_context);
    }
    /// What completed (op_flag::send, op_flag::recv, ...).
    [[nodiscard]] auto flags() const noexcept -> op_flag { return op_flag{e_.flags}; }
    /// Bytes received (receives).
    [[nodiscard]] auto bytes_transferred() const noexcept -> std::size_t { return e_.len; }
    /// Where the data landed (multi-receive buffers).
    [[nodiscard]] auto buffer() const noexcept -> void* { return e_.buf; }
    /// Remote CQ data (with op_flag::remote_cq_data).
    [[nodiscard]] auto data() const noexcept -> std::uint64_t { return e_.data; }
    /// The message's tag (receives only).
    [[nodiscard]] auto tag() const noexcept -> std::uint64_t { return e_.tag; }
    /// The entry as the provider wrote it.
    [[nodiscard]] auto native() const noexcept -> const ::fi_cq_tagged_entry& { return e_; }

private:
    ::fi_cq_tagged_entry e_;  // written by the provider
};
static_assert(sizeof(tagged_completion) == sizeof(::fi_cq_tagged_entry) &&
              alignof(tagged_completion) == alignof(::fi_cq_tagged_entry));

namespace detail {
/// A stand-in for a native completion queue whose reads refuse (-FI_EOPBADSTATE) without
/// touching a provider: what read() and read_tagged() go through on a queue they do not serve
/// directly (closed, moved from, another format, source addresses).
extern ::fid_cq refused_cq;
/// The native queue the fast reads go through: the queue itself when it is open with tagged
/// entries and no source addresses, else refused_cq. Decided at create and close instead of on
/// every read; a move leaves the source refusing.
class cq_read_gate {
public:
    cq_read_gate() = default;
    explicit cq_read_gate(::fid_cq* cq) noexcept : cq_(cq) {}
    cq_read_gate(cq_read_gate&& o) noexcept : cq_(std::exchange(o.cq_, &refused_cq)) {}
    auto operator=(cq_read_gate&& o) noexcept -> cq_read_gate& {
        cq_ = std::exchange(o.cq_, &refused_cq);
        return *this;
    }
    cq_read_gate(const cq_read_gate&) = delete;
    auto operator=(const cq_read_gate&) -> cq_read_gate& = delete;
    ~cq_read_gate() = default;
    [[nodiscard]] auto get() const noexcept -> ::fid_cq* { return cq_; }
    [[nodiscard]] auto refusing() const noexcept -> bool { return cq_ == &refused_cq; }

private:
    ::fid_cq* cq_{&refused_cq};
};
}  // namespace detail

/// A completion queue (fid_cq): where finished operations are reported, read by polling or waiting.
class completion_queue {
public:
    completion_queue() = default;
    /// Opens a completion queue in `dom` (fi_cq_open); `mr` holds its completion registry. In a
    /// domain opened with threading_mode::domain or completion the registry takes no lock: the
    /// application already makes every call on the queue, its endpoints and the front ends'
    /// operations on them (stop requests included) from one thread at a time.
    [[nodiscard]] static auto create(domain& dom, const cq_attr& attr = {}, std::pmr::memory_resource* mr = nullptr)
        -> result<completion_queue>;

    /// Reads one completion without blocking; nullopt when none is ready. Error entries
    /// (and failures reading the queue) come back as events with has_error().
    [[nodiscard]] auto poll() -> std::optional<completion_event>;
    /// Reads up to out.size() completions; 0 when none is ready. An error entry is returned
    /// alone (count 1, out[0].has_error()). Inline for the common queue (tagged entries, no
    /// source addresses, up to 16 per call): a poll that finds nothing costs one provider call.
    [[nodiscard]] auto read(std::span<completion_event> out) -> result<std::size_t> {
        if (out.empty()) [[unlikely]]
            return read_any(out);
        std::array<::fi_cq_tagged_entry, 16> raw;  // filled by the provider
        const ::ssize_t rc = ::fi_cq_read(fast_.get(), raw.data(), std::min(out.size(), raw.size()));
        if (rc == -FI_EAGAIN) return 0;
        if (rc < 0) [[unlikely]]
            return fast_.refusing() ? read_any(out) : read_failed(rc, out[0]);
        for (std::size_t i = 0; i < static_cast<std::size_t>(rc); ++i) refill(out[i], raw[i]);
        return static_cast<std::size_t>(rc);
    }
    /// Reads up to out.size() completions straight into `out`, as the provider writes them: no
    /// copy, no conversion per entry (the batch read for hot loops; read() builds typed events
    /// with error details instead). 0 when none is ready. When the next entry is an error entry
    /// it returns errc::error_available and reads nothing: read() or poll() then return that
    /// entry as an event with has_error(). Needs the tagged format without source addresses
    /// (invalid_argument otherwise, before the provider is called; bad_state when not open).
    LOOM_SUBMIT_INLINE auto read_tagged(std::span<tagged_completion> out) noexcept -> result<std::size_t> {
        if (out.empty()) [[unlikely]]
            return read_tagged_refused();
        const ::ssize_t rc = ::fi_cq_read(fast_.get(), out.data(), out.size());
        if (rc > 0) return static_cast<std::size_t>(rc);
        if (rc == -FI_EAGAIN || rc == 0) return 0;
        return fast_.refusing() ? read_tagged_refused() : native_unexpected(rc);
    }
    /// Waits up to `timeout` for one completion; errc::timed_out when none arrived. Uses the
    /// wait object when the queue has one, otherwise polls (driving provider progress).
    [[nodiscard]] auto wait(std::chrono::milliseconds timeout) -> result<completion_event>;

    /// Events are reused in place (a temporary's string and error_code cost more than the read
    /// itself on fast providers): the error fields (error, provider_errno, overflow_length,
    /// error_text) are reset when the event held an error entry. Every event loom fills with
    /// any of them set has `error` set too, so that one test covers them all.
    static void clear_error_if_set(completion_event& ev) noexcept {
        if (ev.error) [[unlikely]]
            clear_error(ev);
    }
    /// Copies the fields a tagged entry carries (fi_cq_tagged_entry, or the same fields of an
    /// fi_cq_err_entry).
    template <class Entry>
    static void assign(completion_event& ev, const Entry& e) noexcept {
        ev.context = e.op_context;
        ev.flags = op_flag{e.flags};
        ev.bytes_transferred = e.len;
        ev.buffer = e.buf;
        ev.data = e.data;
        ev.tag = e.tag;
    }
    /// A reused event filled from a tagged entry, as read() does: the entry's fields, no source,
    /// no error left from an earlier use (for code that reads a queue natively too).
    static void refill(completion_event& ev, const ::fi_cq_tagged_entry& e) noexcept {
        clear_error_if_set(ev);
        assign(ev, e);
        ev.source = fabric_addrs::unspecified;
    }

    /// Delivers `ev` to the asynchronous operation (sender, Asio handler) registered with its
    /// context, which is unregistered first; false leaves the event with the caller (no owner:
    /// another front end's, a core operation's, a context-free or queue-level event). Reads
    /// (poll, read, read_tagged, wait) never dispatch by themselves.
    auto dispatch(const completion_event& ev) noexcept -> bool { return registry_ && registry_->dispatch(ev); }
    /// Delivers what is ready: events held for readers first, then one batch read from the
    /// queue, each to the operation registered with its context; after reading, it submits again
    /// the operations the provider had refused with FI_EAGAIN (before the last event is
    /// delivered: that delivery is the call's last use of the queue, so its operation may end
    /// the queue, see completion_registry::dispatch_final). Stops at the first event no operation
    /// owns and returns it (the rest of its batch is held, in order, for the next reader); a
    /// failed read comes back the same way, as an event with the error. What
    /// loom::execution::poll_completions and the Asio fabric service call per queue.
    auto dispatch_ready() -> dispatch_result;
    /// The operations awaiting a completion from this queue (null on a queue never created).
    /// It keeps its address when the queue is moved.
    [[nodiscard]] auto registry() const noexcept -> completion_registry* { return registry_.get(); }
    /// Where the queue's own state (its completion registry) lives.
    [[nodiscard]] auto memory_resource() const noexcept -> std::pmr::memory_resource* { return mr_; }

    /// The kind of wait object the provider gave the queue (fi_control FI_GETWAITOBJ, asked once
    /// at creation): wait_object::none for a queue created without one; the provider's error
    /// when it cannot tell (shm). Ask before wait_descriptor() and try_wait().
    [[nodiscard]] auto wait_object_type() const noexcept -> result<wait_object> {
        if (!h_) return make_unexpected(errc::bad_state);
        return wait_kind_;
    }
    /// The queue's wait descriptor (fi_control FI_GETWAIT), still owned by the queue: for a
    /// queue whose wait_object_type() is wait_object::fd; not_supported for any other.
    [[nodiscard]] auto wait_descriptor() const noexcept -> result<int>;
    /// fi_trywait on this queue: success when it is safe to block on its wait descriptor;
    /// errc::again when completions (or progress) are pending and the queue must be read
    /// first; not_supported unless the queue has a descriptor wait object (fd or pollfd) and a
    /// recorded fabric (libfabric 2.1's shm crashes in fi_trywait otherwise).
    [[nodiscard]] auto try_wait() noexcept -> void_result;

    /// The entry format it was opened with.
    [[nodiscard]] auto format() const noexcept -> cq_format { return attr_.format; }
    /// The attributes it was opened with.
    [[nodiscard]] auto attributes() const noexcept -> const cq_attr& { return attr_; }
    /// The native fid_cq; null once closed.
    [[nodiscard]] auto native() const noexcept -> ::fid_cq* { return h_.get(); }
    /// The native domain the queue was opened in.
    [[nodiscard]] auto domain_native() const noexcept -> ::fid_domain* { return domain_; }
    /// The fabric the queue was opened under (what fi_trywait needs); null for a queue not
    /// created by create().
    [[nodiscard]] auto fabric_native() const noexcept -> ::fid_fabric* { return fabric_; }
    /// True while the queue is open.
    [[nodiscard]] auto valid() const noexcept -> bool { return static_cast<bool>(h_); }
    /// Closes the native queue now; on failure it stays open and the call can be retried.
    auto close() noexcept -> void_result {
        auto r = h_.close();
        if (r) fast_ = detail::cq_read_gate{};
        return r;
    }

private:
    /// dispatch_ready() when events are held, the queue is not read natively or has no registry.
    auto dispatch_held_then_read(completion_registry* reg) -> dispatch_result;
    void read_held_then_queue(completion_registry& reg, dispatch_result& out);
    /// One batch read as the provider writes it, delivered; the rest kept after an unowned event.
    /// Resubmits the deferred operations too (before the last delivery).
    auto read_native(completion_registry& reg) -> dispatch_result;
    /// dispatch_ready() when the next entry is an error entry.
    void dispatch_error_entry(completion_registry& reg, dispatch_result& out);
    [[nodiscard]] auto read_error(completion_event& ev) -> bool;
    [[nodiscard]] static auto query_wait_object(::fid_cq* cq) noexcept -> result<wait_object>;
    /// read_tagged() on a queue it does not serve (why), or into an empty span (0).
    [[nodiscard]] auto read_tagged_refused() const noexcept -> result<std::size_t>;
    /// read() for every other queue (other formats, source addresses).
    [[nodiscard]] auto read_any(std::span<completion_event> out) -> result<std::size_t>;
    /// read() after fi_cq_read failed with `rc` (< 0, not -FI_EAGAIN): the error entry, or the error.
    [[nodiscard]] auto read_failed(::ssize_t rc, completion_event& first) -> result<std::size_t>;
    static void clear_error(completion_event& ev) noexcept;
    detail::unique_fid<::fid_cq> h_;
    detail::cq_read_gate fast_{};  // what read() and read_tagged() read from
    cq_attr attr_{};
    ::fid_domain* domain_{nullptr};
    ::fid_fabric* fabric_{nullptr};
    result<wait_object> wait_kind_{wait_object::none};
    detail::resource_ptr<completion_registry> registry_;
    std::pmr::memory_resource* mr_{nullptr};
};

}  // namespace loom
