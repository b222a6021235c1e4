#include "loom/atomic.hpp"

#include <rdma/fi_atomic.h>
#include <rdma/fi_errno.h>

namespace loom::atomic {
namespace {

auto valid(const endpoint& ep, family f, operation op, datatype dt, std::size_t* count) noexcept -> bool {
    if (!ep.valid() || count == nullptr || !is_known(dt) || !in_family(op, f)) return false;
    if (f != family::base && ep.quirks().broken_fetch_atomics) return false;
    std::size_t n = 0;
    const auto fop = static_cast<::fi_op>(op);
    const auto fdt = static_cast<::fi_datatype>(dt);
    int rc = 0;
    switch (f) {
        case family::base: rc = ::fi_atomicvalid(ep.native(), fdt, fop, &n); break;
        case family::fetch: rc = ::fi_fetch_atomicvalid(ep.native(), fdt, fop, &n); break;
        case family::compare: rc = ::fi_compare_atomicvalid(ep.native(), fdt, fop, &n); break;
    }
    if (rc != 0 || n == 0) return false;
    *count = n;
    return true;
}

auto buffer_ok(const buffer_ref& b, const endpoint& ep) noexcept -> bool {
    if (b.data == nullptr && b.bytes != 0) return false;
    if (b.mr == nullptr) return true;
    return b.mr->covers(ep, b.data, b.bytes);
}

/// 0 or an FI_E* code.
auto check(const endpoint& ep, const detail::request& r) noexcept -> int {
    if (!is_known(r.op) || !is_known(r.dt) || !in_family(r.op, r.fam)) return FI_EINVAL;
    if (r.count == 0) return FI_EINVAL;
    const std::size_t bytes = r.count * r.element_size;
    if (bytes / r.element_size != r.count) return FI_EINVAL;
    if (const int e = ep.check_tx(capability::atomic, bytes, r.peer, r.context)) return e;
    // Atomic reads ignore the source operand; everything else needs it.
    if (r.op != operation::atomic_read) {
        if (r.operand.data == nullptr || r.operand.bytes != bytes || !buffer_ok(r.operand, ep)) return FI_EINVAL;
    }
    if (r.fam != family::base) {
        if (r.result.data == nullptr || r.result.bytes != bytes || !buffer_ok(r.result, ep)) return FI_EINVAL;
    }
    if (r.fam == family::compare) {
        if (r.compare.data == nullptr || r.compare.bytes != bytes || !buffer_ok(r.compare, ep)) return FI_EINVAL;
    }
    if (!r.remote.holds(bytes)) return FI_EINVAL;
    return 0;
}

}  // namespace

using detail::desc_of;

auto is_valid(const endpoint& ep, operation op, datatype dt, std::size_t* count) noexcept -> bool {
    return valid(ep, family::base, op, dt, count);
}
auto is_fetch_valid(const endpoint& ep, operation op, datatype dt, std::size_t* count) noexcept -> bool {
    return valid(ep, family::fetch, op, dt, count);
}
auto is_compare_valid(const endpoint& ep, operation op, datatype dt, std::size_t* count) noexcept -> bool {
    return valid(ep, family::compare, op, dt, count);
}

auto detail::submit(endpoint& ep, const request& r, const op_flag* flags) noexcept -> void_result {
    if (const int e = check(ep, r)) return std::unexpected(native_error(e));
    if (r.fam != family::base && ep.quirks().broken_fetch_atomics) return make_unexpected(errc::not_supported);
    const auto fop = static_cast<::fi_op>(r.op);
    const auto fdt = static_cast<::fi_datatype>(r.dt);
    // Atomic reads have no source operand, but providers still read the pointer: use the result.
    const void* src = r.op == operation::atomic_read ? r.result.data : r.operand.data;
    void* src_desc = r.op == operation::atomic_read ? desc_of(r.result) : desc_of(r.operand);
    if (flags == nullptr) {
        switch (r.fam) {
            case family::base:
                return check_native(::fi_atomic(ep.native(), src, r.count, src_desc, r.peer.get(), r.remote.addr,
                                                r.remote.key, fdt, fop, r.context));
            case family::fetch:
                return check_native(::fi_fetch_atomic(ep.native(), src, r.count, src_desc,
                                                      const_cast<void*>(r.result.data), desc_of(r.result), r.peer.get(),
                                                      r.remote.addr, r.remote.key, fdt, fop, r.context));
            case family::compare:
                return check_native(::fi_compare_atomic(ep.native(), src, r.count, src_desc, r.compare.data,
                                                        desc_of(r.compare), const_cast<void*>(r.result.data),
                                                        desc_of(r.result), r.peer.get(), r.remote.addr, r.remote.key,
                                                        fdt, fop, r.context));
        }
        return make_unexpected(errc::invalid_argument);
    }
    ::fi_ioc src_ioc{const_cast<void*>(src), r.count};
    ::fi_rma_ioc rma{r.remote.addr, r.count, r.remote.key};
    const ::fi_msg_atomic m{&src_ioc, &src_desc, 1, r.peer.get(), &rma, 1, fdt, fop, r.context, 0};
    ::fi_ioc res{const_cast<void*>(r.result.data), r.count};
    void* res_desc = desc_of(r.result);
    switch (r.fam) {
        case family::base: return check_native(::fi_atomicmsg(ep.native(), &m, flags->get()));
        case family::fetch:
            return check_native(::fi_fetch_atomicmsg(ep.native(), &m, &res, &res_desc, 1, flags->get()));
        case family::compare: {
            ::fi_ioc cmp{const_cast<void*>(r.compare.data), r.count};
            void* cmp_desc = desc_of(r.compare);
            return check_native(
                ::fi_compare_atomicmsg(ep.native(), &m, &cmp, &cmp_desc, 1, &res, &res_desc, 1, flags->get()));
        }
    }
    return make_unexpected(errc::invalid_argument);
}

auto detail::submit_inject(endpoint& ep, const request& r) noexcept -> void_result {
    // Inject has no context and no completion.
    if (!is_known(r.op) || !is_known(r.dt) || !in_family(r.op, family::base) || r.count == 0)
        return make_unexpected(errc::invalid_argument);
    const std::size_t bytes = r.count * r.element_size;
    if (const int e = ep.check_inject(capability::atomic, bytes, r.peer)) return std::unexpected(native_error(e));
    if (r.operand.data == nullptr || !r.remote.holds(bytes)) return make_unexpected(errc::invalid_argument);
    if (ep.quirks().broken_atomic_inject) return make_unexpected(errc::not_supported);
    return check_native(::fi_inject_atomic(ep.native(), r.operand.data, r.count, r.peer.get(), r.remote.addr,
                                           r.remote.key, static_cast<::fi_datatype>(r.dt), static_cast<::fi_op>(r.op)));
}

}  // namespace loom::atomic
