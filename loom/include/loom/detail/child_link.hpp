// loom/detail/child_link.hpp — one counted reference to a parent's child count, held by
// something that is not the parent's native child (an endpoint bound to a shared receive
// context, a mapped remote key of a domain).
#pragma once

#include <loom/detail/fid.hpp>
#include <utility>

namespace loom::detail {

/// Counts its holder as an open child of a parent until reset() or destruction, so the
/// parent's close() is refused with busy meanwhile. Move-only; allocation-free.
class child_link {
public:
    child_link() noexcept = default;
    explicit child_link(child_count parent) noexcept : parent_(std::move(parent)) {
        if (parent_) parent_->fetch_add(1, std::memory_order_relaxed);
    }
    child_link(const child_link&) = delete;
    auto operator=(const child_link&) -> child_link& = delete;
    child_link(child_link&& o) noexcept : parent_(std::move(o.parent_)) {}
    auto operator=(child_link&& o) noexcept -> child_link& {
        if (this != &o) {
            reset();
            parent_ = std::move(o.parent_);
        }
        return *this;
    }
    ~child_link() { reset(); }

    void reset() noexcept {
        if (parent_) {
            parent_->fetch_sub(1, std::memory_order_relaxed);
            parent_.reset();
        }
    }
    void swap(child_link& o) noexcept { parent_.swap(o.parent_); }
    /// True while it counts toward a parent.
    explicit operator bool() const noexcept { return static_cast<bool>(parent_); }
    /// The parent this link counts toward (identity comparisons).
    [[nodiscard]] auto parent() const noexcept -> const std::atomic<long>* { return parent_.get(); }

private:
    child_count parent_;
};

}  // namespace loom::detail
