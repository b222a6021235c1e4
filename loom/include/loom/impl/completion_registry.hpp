// loom/impl/completion_registry.hpp — the registry's per-operation calls, inline: every
// asynchronous operation registers once and is taken once, and in the common case (a root hit,
// a tree of a few operations) that is a handful of loads and stores.
#pragma once

#include <mutex>

namespace loom {

inline auto completion_registry::add(registered_completion& op) noexcept -> bool {
    const detail::lock_unless_single_threaded lock(m_);
    if (op.linked_ || op.deferred_) return false;
    const std::uintptr_t key = op.context_address();
    registered_completion* const r = root_;
    // The new operation becomes the root; where the old root has no subtree on the new key's
    // side, splitting the tree around the key needs no splay.
    if (r == nullptr) {
        op.left_ = op.right_ = nullptr;
    } else if (key < r->context_address() && r->left_ == nullptr) {
        op.left_ = nullptr;
        op.right_ = r;
    } else if (key > r->context_address() && r->right_ == nullptr) {
        op.left_ = r;
        op.right_ = nullptr;
    } else {
        return link_splaying(op);
    }
    root_ = &op;
    op.linked_ = true;
    ++size_;
    return true;
}

inline auto completion_registry::take(std::uintptr_t key) noexcept -> registered_completion* {
    registered_completion* const found = root_;
    if (found == nullptr || found->context_address() != key) return take_splaying(key);
    registered_completion* const left = found->left_;
    if (left == nullptr) {
        root_ = found->right_;
    } else if (left->right_ == nullptr) {  // the left subtree's largest key is its root
        left->right_ = found->right_;
        root_ = left;
    } else {
        return take_splaying(key);
    }
    found->left_ = found->right_ = nullptr;
    found->linked_ = false;
    --size_;
    return found;
}

inline auto completion_registry::take_owner(const completion_event& ev) noexcept -> registered_completion* {
    const detail::lock_unless_single_threaded lock(m_);
    return take(reinterpret_cast<std::uintptr_t>(ev.context));
}

inline auto completion_registry::dispatch(const completion_event& ev) noexcept -> bool {
    registered_completion* op = take_owner(ev);
    if (op == nullptr) return false;
    op->deliver_(*op, ev, false);
    return true;
}

inline auto completion_registry::dispatch_final(const completion_event& ev) noexcept -> bool {
    registered_completion* op = take_owner(ev);
    if (op == nullptr) return false;
    // May end the registry: nothing of it is touched after.
    op->deliver_(*op, ev, open_batches_.load(std::memory_order_relaxed) == 0);
    return true;
}

}  // namespace loom
