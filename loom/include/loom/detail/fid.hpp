// loom/detail/fid.hpp — move-only ownership of one native libfabric object.
#pragma once

#include <loom/error.hpp>

#include <rdma/fabric.h>

#include <atomic>
#include <memory>
#include <memory_resource>
#include <utility>

namespace loom::detail {

/// Number of open native objects created from a parent (domains of a fabric; endpoints,
/// queues, vectors, counters and registrations of a domain).
using child_count = std::shared_ptr<std::atomic<long>>;

[[nodiscard]] inline auto make_child_count(std::pmr::memory_resource* mr) -> child_count {
    return std::allocate_shared<std::atomic<long>>(
        std::pmr::polymorphic_allocator<std::atomic<long>>(mr ? mr : std::pmr::get_default_resource()), 0);
}

/// Owns a native object (fid_fabric, fid_domain, fid_ep, ...).
///
/// close() reports failures and keeps the handle so the caller can retry; the destructor
/// closes and never throws (a close that fails there leaves the native object open rather
/// than freeing memory still in use). A parent with open children is refused with busy
/// *without* calling fi_close: several providers (rxm, rxd) free internal state on a refused
/// close and crash on the retry, and sockets closes a fabric whose domains are still open.
template <class T>
class unique_fid {
public:
    unique_fid() noexcept = default;
    explicit unique_fid(T* p) noexcept : p_(p) {}
    unique_fid(const unique_fid&) = delete;
    auto operator=(const unique_fid&) -> unique_fid& = delete;
    unique_fid(unique_fid&& o) noexcept
        : p_(std::exchange(o.p_, nullptr)), parent_(std::move(o.parent_)), children_(std::move(o.children_)) {}
    auto operator=(unique_fid&& o) noexcept -> unique_fid& {
        if (this != &o) {
            (void)close();
            p_ = std::exchange(o.p_, nullptr);
            parent_ = std::move(o.parent_);
            children_ = std::move(o.children_);
        }
        return *this;
    }
    ~unique_fid() { (void)close(); }

    /// Counts this object as an open child of `parent` until it is closed.
    void set_parent(child_count parent) noexcept {
        parent_ = std::move(parent);
        if (parent_) parent_->fetch_add(1, std::memory_order_relaxed);
    }
    /// Enables child tracking for this (parent) object.
    void track_children(std::pmr::memory_resource* mr) { children_ = make_child_count(mr); }
    [[nodiscard]] auto children() const noexcept -> const child_count& { return children_; }
    [[nodiscard]] auto open_children() const noexcept -> long {
        return children_ ? children_->load(std::memory_order_relaxed) : 0;
    }

    [[nodiscard]] auto get() const noexcept -> T* { return p_; }
    [[nodiscard]] auto fid() const noexcept -> ::fid_t { return p_ ? &p_->fid : nullptr; }
    explicit operator bool() const noexcept { return p_ != nullptr; }

    auto close() noexcept -> void_result {
        if (p_ == nullptr) return {};
        if (open_children() > 0) return make_unexpected(errc::busy);
        if (const int rc = ::fi_close(&p_->fid); rc != 0) return native_unexpected(rc);
        p_ = nullptr;
        if (parent_) {
            parent_->fetch_sub(1, std::memory_order_relaxed);
            parent_.reset();
        }
        return {};
    }

private:
    T* p_{nullptr};
    child_count parent_;
    child_count children_;
};

}  // namespace loom::detail
