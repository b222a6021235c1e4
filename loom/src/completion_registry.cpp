#include "loom/completion_registry.hpp"

#include "loom/completion_queue.hpp"

#include <algorithm>
#include <mutex>
#include <utility>

namespace loom {

completion_registry::completion_registry(std::pmr::memory_resource* mr, bool serialized)
    : m_(serialized),
      held_(hold_capacity,
            std::pmr::polymorphic_allocator<completion_event>(mr ? mr : std::pmr::get_default_resource())) {}

void completion_registry::splay(std::uintptr_t key) noexcept {
    if (root_ == nullptr) return;
    registered_completion header{nullptr};
    registered_completion* left_max = &header;   // right spine of the left tree
    registered_completion* right_min = &header;  // left spine of the right tree
    registered_completion* t = root_;
    for (;;) {
        if (key < t->context_address()) {
            if (t->left_ == nullptr) break;
            if (key < t->left_->context_address()) {  // zig-zig: rotate right
                registered_completion* y = t->left_;
                t->left_ = y->right_;
                y->right_ = t;
                t = y;
                if (t->left_ == nullptr) break;
            }
            right_min->left_ = t;  // link right
            right_min = t;
            t = t->left_;
        } else if (key > t->context_address()) {
            if (t->right_ == nullptr) break;
            if (key > t->right_->context_address()) {  // zig-zig: rotate left
                registered_completion* y = t->right_;
                t->right_ = y->left_;
                y->left_ = t;
                t = y;
                if (t->right_ == nullptr) break;
            }
            left_max->right_ = t;  // link left
            left_max = t;
            t = t->right_;
        } else {
            break;
        }
    }
    left_max->right_ = t->left_;  // assemble
    right_min->left_ = t->right_;
    t->left_ = header.right_;
    t->right_ = header.left_;
    root_ = t;
}

auto completion_registry::link_splaying(registered_completion& op) noexcept -> bool {
    const std::uintptr_t key = op.context_address();
    splay(key);
    if (root_->context_address() == key) return false;
    if (key < root_->context_address()) {
        op.left_ = root_->left_;
        op.right_ = root_;
        root_->left_ = nullptr;
    } else {
        op.right_ = root_->right_;
        op.left_ = root_;
        root_->right_ = nullptr;
    }
    root_ = &op;
    op.linked_ = true;
    ++size_;
    return true;
}

auto completion_registry::take_splaying(std::uintptr_t key) noexcept -> registered_completion* {
    if (root_ == nullptr) return nullptr;
    splay(key);
    registered_completion* found = root_;
    if (found->context_address() != key) return nullptr;
    if (found->left_ == nullptr) {
        root_ = found->right_;
    } else {
        registered_completion* right = found->right_;
        root_ = found->left_;
        splay(key);  // the left subtree's largest key rises to its root, which has no right child
        root_->right_ = right;
    }
    found->left_ = found->right_ = nullptr;
    found->linked_ = false;
    --size_;
    return found;
}

auto completion_registry::remove(registered_completion& op) noexcept -> bool {
    const detail::lock_unless_single_threaded lock(m_);
    if (!op.linked_) return false;
    return take(op.context_address()) == &op;
}

auto completion_registry::dispatch_passive(const completion_event& ev) noexcept -> bool {
    registered_completion* op = nullptr;
    {
        const detail::lock_unless_single_threaded lock(m_);
        const auto key = reinterpret_cast<std::uintptr_t>(ev.context);
        if (root_ == nullptr) return false;
        splay(key);
        if (root_->context_address() != key || !root_->passive_) return false;
        op = take(key);
    }
    op->deliver_(*op, ev, false);
    return true;
}

void completion_registry::flatten() noexcept {
    registered_completion head{nullptr};
    head.right_ = root_;
    registered_completion* tail = &head;
    for (registered_completion* rest = tail->right_; rest != nullptr;) {
        if (rest->left_ == nullptr) {
            tail = rest;
            rest = rest->right_;
        } else {  // rotate right around rest
            registered_completion* l = rest->left_;
            rest->left_ = l->right_;
            l->right_ = rest;
            rest = l;
            tail->right_ = l;
        }
    }
    root_ = head.right_;
}

auto completion_registry::take_deferred_owned(const void* owner) noexcept -> registered_completion* {
    registered_completion* taken = nullptr;  // chained through left_, in list order reversed
    registered_completion* prev = nullptr;
    for (registered_completion* t = deferred_head_; t != nullptr;) {
        registered_completion* next = t->left_;
        if (t->owner_ == owner) {
            (prev != nullptr ? prev->left_ : deferred_head_) = next;
            if (deferred_tail_ == t) deferred_tail_ = prev;
            t->deferred_ = false;
            --deferred_count_;
            t->left_ = taken;
            taken = t;
        } else {
            prev = t;
        }
        t = next;
    }
    return taken;
}

auto completion_registry::remove_owned(const void* owner, owned_fn fn, void* arg) noexcept -> std::size_t {
    registered_completion* linked = nullptr;  // chained through left_
    registered_completion* deferred = nullptr;
    {
        const std::lock_guard lock(m_);
        flatten();
        registered_completion head{nullptr};
        head.right_ = root_;
        for (registered_completion* prev = &head; prev->right_ != nullptr;) {
            registered_completion* t = prev->right_;
            if (t->owner_ != owner) {
                prev = t;
                continue;
            }
            prev->right_ = t->right_;
            t->right_ = nullptr;
            t->linked_ = false;
            --size_;
            t->left_ = linked;
            linked = t;
        }
        root_ = head.right_;
        deferred = take_deferred_owned(owner);
    }
    std::size_t n = 0;
    for (auto [list, was_deferred] : {std::pair{linked, false}, std::pair{deferred, true}}) {
        while (list != nullptr) {
            registered_completion* op = list;
            list = op->left_;
            op->left_ = nullptr;
            fn(*op, was_deferred, arg);
            ++n;
        }
    }
    return n;
}

auto completion_registry::visit_owned(const void* owner, owned_fn fn, void* arg) noexcept -> std::size_t {
    std::size_t n = 0;
    registered_completion* deferred = nullptr;
    {
        const std::lock_guard lock(m_);
        flatten();
        for (registered_completion* t = root_; t != nullptr; t = t->right_) {
            if (t->owner_ != owner) continue;
            fn(*t, false, arg);
            ++n;
        }
        deferred = take_deferred_owned(owner);
    }
    while (deferred != nullptr) {
        registered_completion* op = deferred;
        deferred = op->left_;
        op->left_ = nullptr;
        fn(*op, true, arg);
        ++n;
    }
    return n;
}

auto completion_registry::defer(registered_completion& op) noexcept -> bool {
    const std::lock_guard lock(m_);
    if (op.linked_ || op.deferred_ || op.retry_ == nullptr) return false;
    op.left_ = op.right_ = nullptr;
    if (deferred_tail_ != nullptr)
        deferred_tail_->left_ = &op;
    else
        deferred_head_ = &op;
    deferred_tail_ = &op;
    op.deferred_ = true;
    ++deferred_count_;
    return true;
}

auto completion_registry::withdraw_deferred(registered_completion& op) noexcept -> bool {
    const std::lock_guard lock(m_);
    if (!op.deferred_) return false;
    registered_completion* prev = nullptr;
    for (registered_completion* t = deferred_head_; t != nullptr; prev = t, t = t->left_) {
        if (t != &op) continue;
        (prev != nullptr ? prev->left_ : deferred_head_) = t->left_;
        if (deferred_tail_ == t) deferred_tail_ = prev;
        t->left_ = nullptr;
        t->deferred_ = false;
        --deferred_count_;
        return true;
    }
    return false;  // not reached: a deferred operation is always in the list
}

auto completion_registry::retry_deferred() noexcept -> std::size_t {
    // A retry may end its operation and run user code: a reader nested there is not the last.
    open_batch();
    std::size_t retried = 0;
    for (std::size_t n = deferred_count_.load(std::memory_order_acquire); n > 0;
         --n) {  // only those queued before this call
        registered_completion* op = nullptr;
        {
            const std::lock_guard lock(m_);
            op = deferred_head_;
            if (op == nullptr) break;
            deferred_head_ = op->left_;
            if (deferred_head_ == nullptr) deferred_tail_ = nullptr;
            op->left_ = nullptr;
            op->deferred_ = false;
            --deferred_count_;
        }
        ++retried;
        if (op->retry_(*op)) {  // still busy: first in line again, and nothing passes it
            const std::lock_guard lock(m_);
            op->left_ = deferred_head_;
            deferred_head_ = op;
            if (deferred_tail_ == nullptr) deferred_tail_ = op;
            op->deferred_ = true;
            ++deferred_count_;
            break;
        }
    }
    close_batch();
    return retried;
}

auto completion_registry::grow_hold(std::size_t need) noexcept -> bool {
    // Called under the lock, when the ring has less than `need` free slots.
    try {
        std::pmr::vector<completion_event> bigger(std::max(held_.size() * 2, held_count_ + need),
                                                  held_.get_allocator());
        for (std::size_t i = 0; i < held_count_; ++i) bigger[i] = std::move(held_[(held_first_ + i) % held_.size()]);
        held_.swap(bigger);
        held_first_ = 0;
        return true;
    } catch (...) {
        return false;
    }
}

auto completion_registry::hold(const completion_event& ev) noexcept -> bool {
    const std::lock_guard lock(m_);
    if (held_count_ == held_.size() && !grow_hold(1)) return false;
    completion_event& slot = held_[(held_first_ + held_count_) % held_.size()];
    try {
        slot = ev;  // completion_event declares error_text last: every other field is copied first
    } catch (...) {
        slot.error_text.clear();  // the diagnostic text only; the error itself is kept
    }
    ++held_count_;
    return true;
}

auto completion_registry::reserve_hold(std::size_t n) noexcept -> bool {
    const std::lock_guard lock(m_);
    return held_.size() - held_count_ >= n || grow_hold(n);
}

auto completion_registry::hold_room() const noexcept -> std::size_t {
    const std::lock_guard lock(m_);
    return held_.size() - held_count_;
}

auto completion_registry::dispatch_held_passive() noexcept -> std::size_t {
    std::size_t n = 0;
    for (;;) {
        registered_completion* op = nullptr;
        completion_event ev;
        {
            const std::lock_guard lock(m_);
            const std::size_t cap = held_.size();
            std::size_t i = 0;
            for (; i < held_count_; ++i) {
                const auto key = reinterpret_cast<std::uintptr_t>(held_[(held_first_ + i) % cap].context);
                if (root_ == nullptr) break;
                splay(key);
                if (root_->context_address() == key && root_->passive_) break;
            }
            if (root_ == nullptr || i == held_count_) return n;
            using std::swap;
            swap(ev, held_[(held_first_ + i) % cap]);
            for (std::size_t k = i; k + 1 < held_count_; ++k)  // close the gap, order kept
                swap(held_[(held_first_ + k) % cap], held_[(held_first_ + k + 1) % cap]);
            --held_count_;
            op = take(reinterpret_cast<std::uintptr_t>(ev.context));
        }
        op->deliver_(*op, ev, false);
        ++n;
    }
}

auto completion_registry::take_held(completion_event& out) noexcept -> bool {
    if (held_count_.load(std::memory_order_acquire) == 0) return false;
    const std::lock_guard lock(m_);
    if (held_count_ == 0) return false;
    completion_event& slot = held_[held_first_];
    held_first_ = (held_first_ + 1) % held_.size();
    --held_count_;
    using std::swap;
    swap(out, slot);
    return true;
}

auto completion_registry::owns(const void* context) const noexcept -> bool {
    const detail::lock_unless_single_threaded lock(m_);
    // A lookup without restructuring: owns() is for diagnostics and tests, not the hot path.
    const auto key = reinterpret_cast<std::uintptr_t>(context);
    for (const registered_completion* t = root_; t != nullptr;) {
        if (key == t->context_address()) return true;
        t = key < t->context_address() ? t->left_ : t->right_;
    }
    return false;
}

auto completion_registry::size() const noexcept -> std::size_t {
    const detail::lock_unless_single_threaded lock(m_);
    return size_;
}

}  // namespace loom
