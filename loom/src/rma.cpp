#include "loom/rma.hpp"

#include <rdma/fi_errno.h>

namespace loom::rma::detail {

auto check(const endpoint& ep, std::span<const std::byte> local, const memory_region* mr, fabric_addr peer,
           const remote_memory& remote, context_ptr<void> ctx) noexcept -> int {
    if (const int e = ep.check_tx(capability::rma, local.size(), peer, ctx)) return e;
    if (mr != nullptr && !mr->covers(ep, local)) return FI_EINVAL;
    if (!remote.holds(local.size())) return FI_EINVAL;
    return 0;
}

auto check_vector(const endpoint& ep, std::span<const ::iovec> local, std::span<void* const> desc, fabric_addr peer,
                  std::span<const remote_memory> remote, context_ptr<void> ctx) noexcept -> int {
    if (!ep.enabled()) return FI_EOPBADSTATE;
    if (remote.empty() || remote.size() > ep.iov_limits().rma) return FI_EINVAL;
    if (local.size() > ep.iov_limits().tx || (!desc.empty() && desc.size() != local.size())) return FI_EINVAL;
    std::size_t local_total = 0, remote_total = 0;
    for (const auto& v : local) {
        if (local_total + v.iov_len < local_total) return FI_EINVAL;
        local_total += v.iov_len;
    }
    for (const auto& r : remote) {
        if (remote_total + r.length < remote_total || !r.holds(r.length)) return FI_EINVAL;
        remote_total += r.length;
    }
    if (local_total != remote_total) return FI_EINVAL;
    return ep.check_tx(capability::rma, local_total, peer, ctx);
}

auto submit_msg(endpoint& ep, bool is_read, std::span<const ::iovec> local, std::span<void* const> desc,
                fabric_addr peer, std::span<const remote_memory> remote, std::uint64_t data, op_flag flags,
                void* ctx) noexcept -> void_result {
    loom::detail::inline_vector<::fi_rma_iov, 16> rma;
    try {
        rma.resize(remote.size());
    } catch (...) {
        return make_unexpected(errc::no_memory);
    }
    for (std::size_t i = 0; i < remote.size(); ++i) rma[i] = {remote[i].addr, remote[i].length, remote[i].key};
    const ::fi_msg_rma m{local.data(), desc.empty() ? nullptr : const_cast<void**>(desc.data()),
                         local.size(), peer.get(),
                         rma.data(),   rma.size(),
                         ctx,          data};
    return check_native(is_read ? ::fi_readmsg(ep.native(), &m, flags.get())
                                : ::fi_writemsg(ep.native(), &m, flags.get()));
}

}  // namespace loom::rma::detail
