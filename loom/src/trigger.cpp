// Deferred work (fi_trigger): descriptor storage, pre-submission checks, FI_QUEUE_WORK,
// FI_CANCEL_WORK and FI_FLUSH_WORK.
#include "loom/trigger.hpp"

#include <rdma/fi_atomic.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <new>
#include <utility>

namespace loom::trigger {

namespace detail {

/// The native descriptor and the operation structure it points to. Trailing storage after
/// it (same allocation) holds the IOV, remote-IOV and descriptor arrays the operation uses.
struct work_block {
    ::fi_deferred_work work;
    union operation {
        ::fi_op_msg msg;
        ::fi_op_tagged tagged;
        ::fi_op_rma rma;
        ::fi_op_atomic atomic;
        ::fi_op_cntr cntr;
    } op;
};

/// Offsets of the trailing arrays inside one block.
struct layout {
    std::size_t iov{0};
    std::size_t remote{0};
    std::size_t desc{0};
    std::size_t bytes{0};
};

namespace {

constexpr std::size_t block_align = alignof(std::max_align_t);

constexpr auto align_up(std::size_t n, std::size_t a) noexcept -> std::size_t { return (n + a - 1) / a * a; }

auto plan(std::size_t iov_bytes, std::size_t remote_bytes, std::size_t desc_bytes) noexcept -> layout {
    layout l;
    l.iov = align_up(sizeof(work_block), block_align);
    l.remote = l.iov + align_up(iov_bytes, block_align);
    l.desc = l.remote + align_up(remote_bytes, block_align);
    l.bytes = l.desc + desc_bytes;
    return l;
}

template <class T>
auto at(work_block* b, std::size_t offset) noexcept -> T* {
    return reinterpret_cast<T*>(reinterpret_cast<unsigned char*>(b) + offset);
}

/// Copies `src` into the block at `offset` (nullptr for an empty array).
template <class T>
auto place(work_block* b, std::size_t offset, std::span<const T> src) noexcept -> T* {
    if (src.empty()) return nullptr;
    T* dst = at<T>(b, offset);
    std::memcpy(static_cast<void*>(dst), src.data(), src.size_bytes());
    return dst;
}

auto fail(int code) -> std::unexpected<std::error_code> { return std::unexpected(native_error(code)); }

auto is_tagged(work_kind k) noexcept -> bool { return k == work_kind::tagged_send || k == work_kind::tagged_recv; }
auto is_receive(work_kind k) noexcept -> bool { return k == work_kind::recv || k == work_kind::tagged_recv; }

}  // namespace

auto check_condition(const threshold_condition& cond, ::fid_domain* dom) noexcept -> int {
    return check_counter(cond.cntr, dom);
}

auto check_counter(const counter* c, ::fid_domain* dom) noexcept -> int {
    if (c == nullptr || !c->valid()) return FI_EINVAL;
    if (dom == nullptr || c->domain_native() != dom) return FI_EINVAL;
    return 0;
}

auto check_flags(op_flag flags) noexcept -> int { return flags.any(op_flag::inject) ? FI_EINVAL : 0; }

auto check_message_context(const void* ctx) noexcept -> int { return ctx != nullptr ? FI_EINVAL : 0; }

auto check_rma(std::span<const ::iovec> local, std::span<void* const> desc, std::span<const remote_memory> remote,
               const iov_limits& limits) noexcept -> int {
    if (!desc.empty() && desc.size() != local.size()) return FI_EINVAL;
    if (local.size() > limits.tx) return FI_EINVAL;
    if (remote.empty() || remote.size() > limits.rma) return FI_EINVAL;
    std::size_t local_total = 0;
    for (const auto& v : local) {
        if (local_total + v.iov_len < local_total) return FI_EINVAL;
        local_total += v.iov_len;
    }
    std::size_t remote_total = 0;
    for (const auto& r : remote) {
        if (remote_total + r.length < remote_total || !r.holds(r.length)) return FI_EINVAL;
        remote_total += r.length;
    }
    return local_total == remote_total ? 0 : FI_EINVAL;
}

auto datatype_size(::fi_datatype dt) noexcept -> std::size_t {
    switch (dt) {
        case FI_INT8:
        case FI_UINT8:
        case FI_FLOAT8_E4M3:
        case FI_FLOAT8_E5M2: return 1;
        case FI_INT16:
        case FI_UINT16:
        case FI_FLOAT16:
        case FI_BFLOAT16: return 2;
        case FI_INT32:
        case FI_UINT32:
        case FI_FLOAT: return 4;
        case FI_INT64:
        case FI_UINT64:
        case FI_DOUBLE:
        case FI_FLOAT_COMPLEX: return 8;
        case FI_DOUBLE_COMPLEX:
        case FI_INT128:
        case FI_UINT128: return 16;
        case FI_LONG_DOUBLE: return sizeof(long double);
        case FI_LONG_DOUBLE_COMPLEX: return 2 * sizeof(long double);
        case FI_VOID: return 0;
    }
    return 0;
}

auto check_atomic(::fi_op op, ::fi_datatype dt, const void* operand, std::size_t count,
                  const remote_memory& remote) noexcept -> int {
    const int o = static_cast<int>(op);
    const bool base = (o >= FI_MIN && o <= FI_BXOR) || o == FI_ATOMIC_WRITE;
    if (!base) return FI_EINVAL;
    const std::size_t size = datatype_size(dt);
    if (size == 0) return FI_EINVAL;
    if (operand == nullptr || count == 0) return FI_EINVAL;
    if (count > remote.length / size) return FI_EINVAL;
    if (!remote.holds(count * size)) return FI_EINVAL;
    return 0;
}

/// A block of `l.bytes` from `mr` (the default resource when null), zeroed; nullptr when
/// the resource cannot provide it.
auto allocate_block(std::pmr::memory_resource* mr, const layout& l) noexcept -> work_block* {
    void* p = nullptr;
    try {
        p = mr->allocate(l.bytes, block_align);
    } catch (...) {
        return nullptr;
    }
    std::memset(p, 0, l.bytes);
    return ::new (p) work_block{};
}

}  // namespace detail

// ---------------------------------------------------------------- support
auto supports_trigger(const endpoint& ep) noexcept -> bool {
    return ep.valid() && ep.capabilities().any(capability::trigger);
}

auto supports_trigger(const domain& dom) noexcept -> bool {
    return dom.valid() && dom.info().valid() && dom.info().capabilities().any(capability::trigger);
}

auto flush_work(domain& dom) noexcept -> void_result {
    if (!dom.valid()) return make_unexpected(errc::invalid_argument);
    if (!supports_trigger(dom)) return make_unexpected(errc::not_supported);
    const int rc = ::fi_control(&dom.native()->fid, FI_FLUSH_WORK, nullptr);
    if (rc < 0) return native_unexpected(rc);
    return {};
}

// ---------------------------------------------------------------- lifetime
deferred_work::deferred_work(deferred_work&& o) noexcept
    : block_(std::exchange(o.block_, nullptr)),
      bytes_(std::exchange(o.bytes_, 0)),
      mr_(std::exchange(o.mr_, nullptr)),
      domain_(std::exchange(o.domain_, nullptr)),
      domain_children_(std::move(o.domain_children_)),
      kind_(std::exchange(o.kind_, work_kind::none)),
      threshold_(std::exchange(o.threshold_, 0)),
      pending_(std::exchange(o.pending_, false)) {}

auto deferred_work::operator=(deferred_work&& o) noexcept -> deferred_work& {
    if (this != &o) {
        abandon_or_terminate();
        release();
        block_ = std::exchange(o.block_, nullptr);
        bytes_ = std::exchange(o.bytes_, 0);
        mr_ = std::exchange(o.mr_, nullptr);
        domain_ = std::exchange(o.domain_, nullptr);
        domain_children_ = std::move(o.domain_children_);
        o.domain_children_.reset();
        kind_ = std::exchange(o.kind_, work_kind::none);
        threshold_ = std::exchange(o.threshold_, 0);
        pending_ = std::exchange(o.pending_, false);
    }
    return *this;
}

deferred_work::~deferred_work() {
    abandon_or_terminate();
    release();
}

void deferred_work::abandon_or_terminate() noexcept {
    if (!pending_) return;
    // The provider may still reference the descriptor: it can only be freed once withdrawn.
    if (!cancel()) std::terminate();
}

void deferred_work::release() noexcept {
    if (pending_) {
        pending_ = false;
        if (domain_children_) domain_children_->fetch_sub(1, std::memory_order_relaxed);
    }
    domain_children_.reset();
    if (block_ != nullptr) {
        block_->~work_block();
        mr_->deallocate(block_, bytes_, detail::block_align);
        block_ = nullptr;
        bytes_ = 0;
    }
}

void deferred_work::mark_completed() noexcept { release(); }

auto deferred_work::cancel() noexcept -> void_result {
    if (!pending_) return {};
    const int rc = ::fi_control(&domain_->fid, FI_CANCEL_WORK, &block_->work);
    if (rc < 0) return native_unexpected(rc);
    release();
    return {};
}

auto deferred_work::native() const noexcept -> const ::fi_deferred_work* {
    return pending_ && block_ != nullptr ? &block_->work : nullptr;
}

auto deferred_work::submit(domain& dom) noexcept -> void_result {
    const int rc = ::fi_control(&dom.native()->fid, FI_QUEUE_WORK, &block_->work);
    if (rc < 0) {
        release();  // not queued: the provider keeps no reference
        return native_unexpected(rc);
    }
    pending_ = true;
    domain_children_ = dom.child_tracker();
    if (domain_children_) domain_children_->fetch_add(1, std::memory_order_relaxed);
    return {};
}

// ---------------------------------------------------------------- factories
auto deferred_work::prepare(work_kind kind, domain& dom, threshold_condition cond, const detail::layout& l,
                            std::pmr::memory_resource* mr) -> result<deferred_work> {
    deferred_work w;
    w.mr_ = mr != nullptr ? mr : std::pmr::get_default_resource();
    w.block_ = detail::allocate_block(w.mr_, l);
    if (w.block_ == nullptr) return make_unexpected(errc::no_memory);
    w.bytes_ = l.bytes;
    w.domain_ = dom.native();
    w.kind_ = kind;
    w.threshold_ = cond.threshold;
    w.block_->work.threshold = cond.threshold;
    w.block_->work.triggering_cntr = cond.cntr->native();
    w.block_->work.completion_cntr = nullptr;
    w.block_->work.op_type = static_cast<::fi_op_type>(kind);
    return w;
}

namespace {
/// What every transfer factory checks first: objects of one domain, trigger support, the
/// condition and completion counters, deferrable flags.
auto check_transfer(domain& dom, endpoint& ep, const threshold_condition& cond, const counter* completion_counter,
                    op_flag flags) noexcept -> void_result {
    if (!dom.valid() || !ep.valid() || !ep.belongs_to(dom)) return make_unexpected(errc::invalid_argument);
    if (!supports_trigger(ep)) return make_unexpected(errc::not_supported);
    if (const int e = detail::check_condition(cond, dom.native())) return detail::fail(e);
    if (const int e = detail::check_counter(completion_counter, dom.native())) return detail::fail(e);
    if (const int e = detail::check_flags(flags)) return detail::fail(e);
    return {};
}
}  // namespace

auto deferred_work::make_msg(work_kind kind, domain& dom, endpoint& ep, threshold_condition cond,
                             counter* completion_counter, std::span<const ::iovec> iov, std::span<void* const> desc,
                             fabric_addr addr, const void* msg_ctx, std::uint64_t data, std::uint64_t tag,
                             std::uint64_t ignore, op_flag flags, std::pmr::memory_resource* mr)
    -> result<deferred_work> {
    if (auto ok = check_transfer(dom, ep, cond, completion_counter, flags); !ok) return std::unexpected(ok.error());
    if (const int e = detail::check_message_context(msg_ctx)) return detail::fail(e);
    // The descriptor's own context is the operation context; any non-null pointer stands in
    // for it in the endpoint's context requirement.
    const void* stand_in = &cond;
    const capability family = detail::is_tagged(kind) ? capability::tagged : capability::msg;
    const int e = detail::is_receive(kind) ? ep.check_rx_iov(family, iov, desc, addr, const_cast<void*>(stand_in))
                                           : ep.check_tx_iov(family, iov, desc, addr, const_cast<void*>(stand_in));
    if (e != 0) return detail::fail(e);
    if (detail::is_receive(kind) && flags.any(op_flag::remote_cq_data)) return make_unexpected(errc::invalid_argument);

    const auto l = detail::plan(iov.size_bytes(), 0, desc.size_bytes());
    auto prepared = prepare(kind, dom, cond, l, mr);
    if (!prepared) return std::unexpected(prepared.error());
    deferred_work& w = *prepared;
    auto* b = w.block_;
    const ::iovec* iov_store = detail::place(b, l.iov, iov);
    void** desc_store = detail::place<void*>(b, l.desc, desc);
    b->work.completion_cntr = completion_counter->native();
    void* ctx = &b->work.context;
    if (detail::is_tagged(kind)) {
        b->op.tagged.ep = ep.native();
        b->op.tagged.msg = ::fi_msg_tagged{iov_store, desc_store, iov.size(), addr.get(), tag, ignore, ctx, data};
        b->op.tagged.flags = flags.get();
        b->work.op.tagged = &b->op.tagged;
    } else {
        b->op.msg.ep = ep.native();
        b->op.msg.msg = ::fi_msg{iov_store, desc_store, iov.size(), addr.get(), ctx, data};
        b->op.msg.flags = flags.get();
        b->work.op.msg = &b->op.msg;
    }
    if (auto r = w.submit(dom); !r) return std::unexpected(r.error());
    return std::move(w);
}

auto deferred_work::make_rma(work_kind kind, domain& dom, endpoint& ep, threshold_condition cond,
                             counter* completion_counter, std::span<const ::iovec> iov, std::span<void* const> desc,
                             fabric_addr addr, std::span<const remote_memory> remote, std::uint64_t data, op_flag flags,
                             std::pmr::memory_resource* mr) -> result<deferred_work> {
    if (auto ok = check_transfer(dom, ep, cond, completion_counter, flags); !ok) return std::unexpected(ok.error());
    if (kind == work_kind::read && flags.any(op_flag::remote_cq_data)) return make_unexpected(errc::invalid_argument);
    if (!ep.enabled()) return make_unexpected(errc::bad_state);
    if (const int e = detail::check_rma(iov, desc, remote, ep.iov_limits())) return detail::fail(e);
    const void* stand_in = &cond;
    if (const int e = ep.check_tx(capability::rma, endpoint::total_length(iov), addr, const_cast<void*>(stand_in)))
        return detail::fail(e);

    const auto l = detail::plan(iov.size_bytes(), remote.size() * sizeof(::fi_rma_iov), desc.size_bytes());
    auto prepared = prepare(kind, dom, cond, l, mr);
    if (!prepared) return std::unexpected(prepared.error());
    deferred_work& w = *prepared;
    auto* b = w.block_;
    const ::iovec* iov_store = detail::place(b, l.iov, iov);
    void** desc_store = detail::place<void*>(b, l.desc, desc);
    auto* rma_store = detail::at<::fi_rma_iov>(b, l.remote);
    for (std::size_t i = 0; i < remote.size(); ++i) rma_store[i] = {remote[i].addr, remote[i].length, remote[i].key};
    b->work.completion_cntr = completion_counter->native();
    b->op.rma.ep = ep.native();
    b->op.rma.msg = ::fi_msg_rma{iov_store, desc_store,    iov.size(),       addr.get(),
                                 rma_store, remote.size(), &b->work.context, kind == work_kind::write ? data : 0};
    b->op.rma.flags = flags.get();
    b->work.op.rma = &b->op.rma;
    if (auto r = w.submit(dom); !r) return std::unexpected(r.error());
    return std::move(w);
}

auto deferred_work::create_write(domain& dom, endpoint& ep, threshold_condition cond, counter* completion_counter,
                                 const rma_message& m, op_flag flags, std::pmr::memory_resource* mr)
    -> result<deferred_work> {
    return make_rma(work_kind::write, dom, ep, cond, completion_counter, m.iov, m.desc, m.addr, m.remote, m.data, flags,
                    mr);
}

auto deferred_work::create_read(domain& dom, endpoint& ep, threshold_condition cond, counter* completion_counter,
                                const rma_message& m, op_flag flags, std::pmr::memory_resource* mr)
    -> result<deferred_work> {
    return make_rma(work_kind::read, dom, ep, cond, completion_counter, m.iov, m.desc, m.addr, m.remote, 0, flags, mr);
}

auto deferred_work::create_write(domain& dom, endpoint& ep, threshold_condition cond, counter* completion_counter,
                                 std::span<const std::byte> local, void* desc, fabric_addr peer,
                                 const remote_memory& remote, op_flag flags, std::pmr::memory_resource* mr)
    -> result<deferred_work> {
    const ::iovec iov{const_cast<std::byte*>(local.data()), local.size()};
    return make_rma(work_kind::write, dom, ep, cond, completion_counter, {&iov, 1},
                    desc != nullptr ? std::span<void* const>{&desc, 1} : std::span<void* const>{}, peer, {&remote, 1},
                    0, flags, mr);
}

auto deferred_work::create_read(domain& dom, endpoint& ep, threshold_condition cond, counter* completion_counter,
                                std::span<std::byte> local, void* desc, fabric_addr peer, const remote_memory& remote,
                                op_flag flags, std::pmr::memory_resource* mr) -> result<deferred_work> {
    const ::iovec iov{local.data(), local.size()};
    return make_rma(work_kind::read, dom, ep, cond, completion_counter, {&iov, 1},
                    desc != nullptr ? std::span<void* const>{&desc, 1} : std::span<void* const>{}, peer, {&remote, 1},
                    0, flags, mr);
}

auto deferred_work::create_atomic(domain& dom, endpoint& ep, threshold_condition cond, counter* completion_counter,
                                  ::fi_op op, ::fi_datatype dt, const void* operand, std::size_t count, void* desc,
                                  fabric_addr peer, const remote_memory& remote, op_flag flags,
                                  std::pmr::memory_resource* mr) -> result<deferred_work> {
    if (auto ok = check_transfer(dom, ep, cond, completion_counter, flags); !ok) return std::unexpected(ok.error());
    if (const int e = detail::check_atomic(op, dt, operand, count, remote)) return detail::fail(e);
    const void* stand_in = &cond;
    if (const int e =
            ep.check_tx(capability::atomic, count * detail::datatype_size(dt), peer, const_cast<void*>(stand_in)))
        return detail::fail(e);
    std::size_t max_count = 0;
    if (::fi_atomicvalid(ep.native(), dt, op, &max_count) != 0) return make_unexpected(errc::not_supported);
    if (count > max_count) return make_unexpected(errc::invalid_argument);

    const auto l = detail::plan(sizeof(::fi_ioc), sizeof(::fi_rma_ioc), sizeof(void*));
    auto prepared = prepare(work_kind::atomic, dom, cond, l, mr);
    if (!prepared) return std::unexpected(prepared.error());
    deferred_work& w = *prepared;
    auto* b = w.block_;
    auto* ioc = detail::at<::fi_ioc>(b, l.iov);
    *ioc = ::fi_ioc{const_cast<void*>(operand), count};
    auto* rioc = detail::at<::fi_rma_ioc>(b, l.remote);
    *rioc = ::fi_rma_ioc{remote.addr, count, remote.key};
    auto* desc_store = detail::at<void*>(b, l.desc);
    *desc_store = desc;
    b->work.completion_cntr = completion_counter->native();
    b->op.atomic.ep = ep.native();
    b->op.atomic.msg = ::fi_msg_atomic{ioc, desc_store, 1, peer.get(), rioc, 1, dt, op, &b->work.context, 0};
    b->op.atomic.flags = flags.get();
    b->work.op.atomic = &b->op.atomic;
    if (auto r = w.submit(dom); !r) return std::unexpected(r.error());
    return std::move(w);
}

auto deferred_work::make_counter(work_kind kind, domain& dom, threshold_condition cond, counter& target,
                                 std::uint64_t value, std::pmr::memory_resource* mr) -> result<deferred_work> {
    if (!dom.valid()) return make_unexpected(errc::invalid_argument);
    if (!supports_trigger(dom)) return make_unexpected(errc::not_supported);
    if (const int e = detail::check_condition(cond, dom.native())) return detail::fail(e);
    if (const int e = detail::check_counter(&target, dom.native())) return detail::fail(e);

    const auto l = detail::plan(0, 0, 0);
    auto prepared = prepare(kind, dom, cond, l, mr);
    if (!prepared) return std::unexpected(prepared.error());
    deferred_work& w = *prepared;
    auto* b = w.block_;
    b->op.cntr = ::fi_op_cntr{target.native(), value};
    b->work.op.cntr = &b->op.cntr;
    if (auto r = w.submit(dom); !r) return std::unexpected(r.error());
    return std::move(w);
}

auto deferred_work::create_counter_add(domain& dom, threshold_condition cond, counter& target, std::uint64_t value,
                                       std::pmr::memory_resource* mr) -> result<deferred_work> {
    return make_counter(work_kind::counter_add, dom, cond, target, value, mr);
}

auto deferred_work::create_counter_set(domain& dom, threshold_condition cond, counter& target, std::uint64_t value,
                                       std::pmr::memory_resource* mr) -> result<deferred_work> {
    return make_counter(work_kind::counter_set, dom, cond, target, value, mr);
}

}  // namespace loom::trigger
