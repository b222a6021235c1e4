// loom/src/refusal.hpp — what the stand-in native objects (endpoint and CQ gates) share; internal.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

namespace loom::detail {

/// Any native operation answered with -Code without touching a provider. R is the table slot's
/// return type; the arguments are deduced from the slot's signature.
template <int Code, class R, class... Args>
auto refuse(Args...) noexcept -> R {
    return static_cast<R>(-Code);
}

/// The fid operations of every stand-in: a stand-in is never opened, so closing, binding or
/// controlling it is refused too.
inline constinit ::fi_ops refusing_fid_ops{
    .size = sizeof(::fi_ops),
    .close = refuse<FI_EINVAL, int>,
    .bind = refuse<FI_EINVAL, int>,
    .control = refuse<FI_EINVAL, int>,
    .ops_open = refuse<FI_EINVAL, int>,
    .tostr = nullptr,
    .ops_set = refuse<FI_EINVAL, int>,
};

}  // namespace loom::detail
