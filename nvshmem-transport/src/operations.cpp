// The transport's data path: rma (put/get/p/g, blocking or not, strided), amo (every verb),
// put_signal, fence, quiet, enforce_cst and progress, each translated to the PE group.
#include "state.hpp"

#include <cstring>
#include <limits>

namespace lp = loom::plugins;

namespace loom::nvshmem {
namespace {

auto bytes_of(abi::mem_handle* h) -> std::span<const std::byte> { return std::as_bytes(std::span(h->reserved)); }

auto issue_rma(lp::pe_group& g, int pe, int q, bool is_put, const abi::rma_memdesc& remote,
               const abi::rma_memdesc& local, const abi::rma_bytesdesc& bytes, std::uint64_t max_len, bool blocking)
    -> int {
    if (remote.handle == nullptr || remote.ptr == nullptr || local.ptr == nullptr || bytes.elembytes <= 0)
        return abi::error_invalid_value;
    if (bytes.nelems == 0) return abi::success;
    const auto elem = static_cast<std::size_t>(bytes.elembytes);
    if (bytes.nelems > std::numeric_limits<std::size_t>::max() / elem) return abi::error_invalid_value;
    const std::size_t total = bytes.nelems * elem;
    auto* mine = static_cast<std::byte*>(local.ptr);
    const auto theirs = reinterpret_cast<std::uintptr_t>(remote.ptr);
    const auto desc = bytes_of(remote.handle);
    const bool contiguous = bytes.nelems == 1 || (bytes.srcstride == 1 && bytes.deststride == 1);
    if (contiguous) {
        if (max_len != 0 && total > max_len) return abi::error_invalid_value;
        const auto r = is_put ? (blocking ? g.put(pe, q, {mine, total}, desc, theirs)
                                          : g.put_nbi(pe, q, {mine, total}, desc, theirs))
                              : (blocking ? g.get(pe, q, {mine, total}, desc, theirs)
                                          : g.get_nbi(pe, q, {mine, total}, desc, theirs));
        return r ? abi::success : status_of(r.error());
    }
    // Strides count elements: put reads the source (local) with srcstride, get the remote one.
    const std::ptrdiff_t local_stride = is_put ? bytes.srcstride : bytes.deststride;
    const std::ptrdiff_t remote_stride = is_put ? bytes.deststride : bytes.srcstride;
    if (local_stride < 1 || remote_stride < 1) return abi::error_invalid_value;
    for (std::size_t i = 0; i < bytes.nelems; ++i) {
        std::byte* l = mine + i * static_cast<std::size_t>(local_stride) * elem;
        const std::uint64_t rem = theirs + i * static_cast<std::size_t>(remote_stride) * elem;
        const auto r = is_put ? g.put_nbi(pe, q, {l, elem}, desc, rem) : g.get_nbi(pe, q, {l, elem}, desc, rem);
        if (!r) return status_of(r.error());
    }
    if (!blocking) return abi::success;
    const auto r = g.quiet(pe, q);
    return r ? abi::success : status_of(r.error());
}

struct amo_mapping {
    lp::amo_op op{};
    bool fixed_one{false};  ///< inc: the operand is 1
    bool valid{false};
};

auto map_amo(int code) -> amo_mapping {
    using enum lp::amo_op;
    switch (code) {
        case abi::amo_inc: return {add, true, true};
        case abi::amo_set:
        case abi::amo_signal:
        case abi::amo_signal_set: return {set, false, true};
        case abi::amo_add:
        case abi::amo_signal_add: return {add, false, true};
        case abi::amo_and: return {bit_and, false, true};
        case abi::amo_or: return {bit_or, false, true};
        case abi::amo_xor: return {bit_xor, false, true};
        case abi::amo_fetch: return {fetch, false, true};
        case abi::amo_fetch_inc: return {fetch_add, true, true};
        case abi::amo_fetch_add: return {fetch_add, false, true};
        case abi::amo_fetch_and: return {fetch_and, false, true};
        case abi::amo_fetch_or: return {fetch_or, false, true};
        case abi::amo_fetch_xor: return {fetch_xor, false, true};
        case abi::amo_swap: return {swap, false, true};
        case abi::amo_compare_swap: return {compare_swap, false, true};
        default: return {};  // ack and unknown codes
    }
}

auto issue_amo(lp::pe_group& g, int pe, int q, void* curetptr, const abi::amo_verb& verb,
               const abi::amo_memdesc* target, const abi::amo_bytesdesc& bytes) -> int {
    if (target == nullptr || target->remote_memdesc.handle == nullptr || target->remote_memdesc.ptr == nullptr)
        return abi::error_invalid_value;
    const auto m = map_amo(verb.desc);
    if (!m.valid) return abi::error_not_supported;
    if (bytes.elembytes != 4 && bytes.elembytes != 8) return abi::error_invalid_value;
    lp::amo_request r{.op = m.op,
                      .size = static_cast<std::size_t>(bytes.elembytes),
                      .operand = m.fixed_one ? 1 : target->val,
                      .compare = target->cmp};
    if (lp::is_fetching(m.op)) {
        r.result = curetptr != nullptr ? curetptr : target->retptr;
        if (r.result == nullptr) return abi::error_invalid_value;
    }
    const auto rc = g.atomic(pe, q, r, bytes_of(target->remote_memdesc.handle),
                             reinterpret_cast<std::uintptr_t>(target->remote_memdesc.ptr));
    return rc ? abi::success : status_of(rc.error());
}

auto checked(abi::transport* t, int pe, int qp, int& q) -> lp::pe_group* {
    auto* g = group_of(t);
    if (g == nullptr || pe < 0 || pe >= g->pes()) return nullptr;
    q = queue_of(t, qp);
    return q < 0 ? nullptr : g;
}

auto rma_direction(int desc, bool& is_put) -> bool {
    if (desc >= abi::op_qp_offset) desc -= abi::op_qp_offset;
    if (desc == abi::op_put || desc == abi::op_p)
        is_put = true;
    else if (desc == abi::op_get || desc == abi::op_g)
        is_put = false;
    else
        return false;
    return true;
}

}  // namespace

auto transport_rma(abi::transport* t, int pe, abi::rma_verb verb, abi::rma_memdesc* remote, abi::rma_memdesc* local,
                   abi::rma_bytesdesc bytes, int qp) -> int {
    int q = 0;
    auto* g = checked(t, pe, qp, q);
    if (g == nullptr || remote == nullptr || local == nullptr) return abi::error_invalid_value;
    bool is_put = false;
    if (!rma_direction(verb.desc, is_put)) return abi::error_not_supported;
    return issue_rma(*g, pe, q, is_put, *remote, *local, bytes, t->max_op_len, verb.is_nbi == 0);
}

auto transport_amo(abi::transport* t, int pe, void* curetptr, abi::amo_verb verb, abi::amo_memdesc* target,
                   abi::amo_bytesdesc bytes, int qp) -> int {
    int q = 0;
    auto* g = checked(t, pe, qp, q);
    if (g == nullptr) return abi::error_invalid_value;
    return issue_amo(*g, pe, q, curetptr, verb, target, bytes);
}

auto transport_quiet(abi::transport* t, int /*pe*/, int qp) -> int {
    auto* g = group_of(t);
    if (g == nullptr) return abi::error_invalid_value;
    // Every PE: what was issued on the queue is complete; an index beyond the queues means all.
    const int q = queue_of(t, qp);
    const auto r = g->quiet(-1, q);
    return r ? abi::success : status_of(r.error());
}

#if LOOM_NVSHMEM_MAJOR >= 4
auto transport_fence(abi::transport* t, int pe, int qp, int /*is_multi*/) -> int {
#else
auto transport_fence(abi::transport* t, int pe, int qp) -> int {
#endif
    auto* g = group_of(t);
    if (g == nullptr) return abi::error_invalid_value;
    const int target = pe >= 0 && pe < g->pes() ? pe : -1;
    const auto r = g->fence(target, queue_of(t, qp));
    return r ? abi::success : status_of(r.error());
}

#if LOOM_NVSHMEM_MAJOR >= 4
auto transport_put_signal(abi::transport* t, int pe, abi::rma_verb write_verb,
                          std::vector<abi::rma_memdesc>& write_remote, std::vector<abi::rma_memdesc>& write_local,
                          std::vector<abi::rma_bytesdesc>& write_bytes, abi::amo_verb sig_verb,
                          abi::amo_memdesc* sig_target, abi::amo_bytesdesc sig_bytes, int qp) -> int {
    int q = 0;
    auto* g = checked(t, pe, qp, q);
    if (g == nullptr || write_remote.size() != write_local.size() || write_remote.size() != write_bytes.size())
        return abi::error_invalid_value;
    bool is_put = false;
    if (!rma_direction(write_verb.desc, is_put) || !is_put) return abi::error_invalid_value;
    const auto m = map_amo(sig_verb.desc);
    if (!m.valid || lp::is_fetching(m.op)) return abi::error_invalid_value;
    for (std::size_t i = 0; i < write_remote.size(); ++i)
        if (auto rc = issue_rma(*g, pe, q, true, write_remote[i], write_local[i], write_bytes[i], t->max_op_len, false);
            rc != abi::success)
            return rc;
    // The writes are delivery-complete: once quiet saw them, the data is at the target, and
    // only then may the signal leave.
    if (auto r = g->quiet(pe, q); !r) return status_of(r.error());
    return issue_amo(*g, pe, q, nullptr, sig_verb, sig_target, sig_bytes);
}
#endif

auto transport_progress(abi::transport* t) -> int {
    auto* s = state_of(t);
    if (s == nullptr) return abi::error_invalid_value;
    if (auto* g = s->group.get()) g->progress();
    return abi::success;
}

auto transport_enforce_cst(abi::transport* t) -> int {
    auto* s = state_of(t);
    if (s == nullptr) return abi::error_invalid_value;
    auto* g = s->group.get();
    if (g == nullptr || !s->has_local) return abi::success;  // nothing registered: nothing to order
    // A loopback read of our own memory: it returns after the writes that reached it before.
    auto base = lp::region_base(s->first_local, g->pe());
    if (!base) return abi::error_internal;
    std::byte probe[8];
    const auto r = g->get(g->pe(), 0, {probe, 1}, s->first_local, *base);
    return r ? abi::success : status_of(r.error());
}

}  // namespace loom::nvshmem
