// Opening completion queues and counters for device-side use through an XPU context
// (libfabric 2.7), for the factories that take cq_attr::xpu and counter_attr::xpu.
#pragma once

#include <loom/domain.hpp>

#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

namespace loom {
class xpu_context;
namespace detail {

/// fi_cq_open / fi_cntr_open with FI_XPU and the context in the attributes: 0 or a negative
/// FI_E* code; -FI_EINVAL for a context that is not open or belongs to another domain,
/// -FI_EOPNOTSUPP before libfabric 2.7.
[[nodiscard]] auto open_xpu_cq(domain& dom, const ::fi_cq_attr& attr, const xpu_context& ctx, ::fid_cq** out) -> int;
[[nodiscard]] auto open_xpu_counter(domain& dom, const ::fi_cntr_attr& attr, const xpu_context& ctx, ::fid_cntr** out)
    -> int;

}  // namespace detail
}  // namespace loom
