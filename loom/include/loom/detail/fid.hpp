// loom/detail/fid.hpp — move-only ownership of one native libfabric object.
#pragma once

#include <loom/error.hpp>

#include <rdma/fabric.h>

#include <utility>

namespace loom::detail {

/// Owns a native object (fid_fabric, fid_domain, fid_ep, ...). close() reports failures and
/// keeps the handle so the caller can retry; the destructor closes and never throws (a close
/// that fails there leaves the native object open rather than freeing memory still in use).
template <class T>
class unique_fid {
public:
    unique_fid() noexcept = default;
    explicit unique_fid(T* p) noexcept : p_(p) {}
    unique_fid(const unique_fid&) = delete;
    auto operator=(const unique_fid&) -> unique_fid& = delete;
    unique_fid(unique_fid&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
    auto operator=(unique_fid&& o) noexcept -> unique_fid& {
        if (this != &o) {
            (void)close();
            p_ = std::exchange(o.p_, nullptr);
        }
        return *this;
    }
    ~unique_fid() { (void)close(); }

    [[nodiscard]] auto get() const noexcept -> T* { return p_; }
    [[nodiscard]] auto fid() const noexcept -> ::fid_t { return p_ ? &p_->fid : nullptr; }
    explicit operator bool() const noexcept { return p_ != nullptr; }

    auto close() noexcept -> void_result {
        if (p_ == nullptr) return {};
        if (const int rc = ::fi_close(&p_->fid); rc != 0) return native_unexpected(rc);
        p_ = nullptr;
        return {};
    }

private:
    T* p_{nullptr};
};

}  // namespace loom::detail
