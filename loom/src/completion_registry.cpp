#include "loom/completion_registry.hpp"

#include "loom/completion_queue.hpp"

#include <algorithm>
#include <bit>
#include <mutex>
#include <utility>

namespace loom {

completion_registry::completion_registry()
    : slots_(initial_slots, nullptr), shift_(64 - std::countr_zero(initial_slots)), held_(hold_capacity) {}

namespace {
/// Fibonacci hashing of a context address (its low bits are alignment, always zero).
[[nodiscard]] auto slot_of(std::uintptr_t key, unsigned shift) noexcept -> std::size_t {
    return static_cast<std::size_t>(((key >> 4) * 0x9E3779B97F4A7C15ULL) >> shift);
}
}  // namespace

auto completion_registry::find_slot(std::uintptr_t key) const noexcept -> std::size_t {
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = slot_of(key, shift_);; i = (i + 1) & mask)
        if (slots_[i] == nullptr || slots_[i]->context_address() == key) return i;
}

void completion_registry::erase_slot(std::size_t i) noexcept {
    // Backward-shift deletion (Knuth 6.4, algorithm R): a later member whose home is not
    // cyclically within (i, j] moves into the hole, so every probe still finds its key.
    const std::size_t mask = slots_.size() - 1;
    slots_[i] = nullptr;
    for (std::size_t j = (i + 1) & mask; slots_[j] != nullptr; j = (j + 1) & mask) {
        const std::size_t home = slot_of(slots_[j]->context_address(), shift_);
        if (((j - home) & mask) < ((j - i) & mask)) continue;  // home lies between the hole and j
        slots_[i] = slots_[j];
        slots_[j] = nullptr;
        i = j;
    }
}

auto completion_registry::grow_table() noexcept -> bool {
    // Called under the lock when the table would be more than half full.
    try {
        std::vector<registered_completion*> bigger(slots_.size() * 2, nullptr);
        slots_.swap(bigger);
        --shift_;
        for (registered_completion* op : bigger)
            if (op != nullptr) slots_[find_slot(op->context_address())] = op;
        return true;
    } catch (...) {
        return false;
    }
}

auto completion_registry::add(registered_completion& op) noexcept -> bool {
    const std::lock_guard lock(m_);
    if (op.linked_ || op.deferred_) return false;
    if ((size_ + 1) * 2 > slots_.size() && !grow_table()) return false;
    const std::size_t i = find_slot(op.context_address());
    if (slots_[i] != nullptr) return false;
    slots_[i] = &op;
    op.linked_ = true;
    ++size_;
    return true;
}

auto completion_registry::take(std::uintptr_t key, bool passive_only) noexcept -> registered_completion* {
    const std::size_t i = find_slot(key);
    registered_completion* found = slots_[i];
    if (found == nullptr || (passive_only && !found->passive_)) return nullptr;
    erase_slot(i);
    found->linked_ = false;
    --size_;
    return found;
}

auto completion_registry::remove(registered_completion& op) noexcept -> bool {
    const std::lock_guard lock(m_);
    if (!op.linked_) return false;
    const std::size_t i = find_slot(op.context_address());
    if (slots_[i] != &op) return false;
    (void)take(op.context_address(), false);
    return true;
}

auto completion_registry::dispatch_if(const completion_event& ev, bool passive_only) noexcept -> bool {
    registered_completion* op = nullptr;
    {
        const std::lock_guard lock(m_);
        op = take(reinterpret_cast<std::uintptr_t>(ev.context), passive_only);
    }
    if (op == nullptr) return false;
    op->deliver_(*op, ev);
    return true;
}

auto completion_registry::dispatch(const completion_event& ev) noexcept -> bool { return dispatch_if(ev, false); }

auto completion_registry::dispatch_passive(const completion_event& ev) noexcept -> bool {
    return dispatch_if(ev, true);
}

auto completion_registry::take_deferred_owned(const void* owner) noexcept -> registered_completion* {
    registered_completion* taken = nullptr;  // chained through next_, in list order reversed
    registered_completion* prev = nullptr;
    for (registered_completion* t = deferred_head_; t != nullptr;) {
        registered_completion* next = t->next_;
        if (t->owner_ == owner) {
            (prev != nullptr ? prev->next_ : deferred_head_) = next;
            if (deferred_tail_ == t) deferred_tail_ = prev;
            t->deferred_ = false;
            --deferred_count_;
            t->next_ = taken;
            taken = t;
        } else {
            prev = t;
        }
        t = next;
    }
    return taken;
}

auto completion_registry::remove_owned(const void* owner, owned_fn fn, void* arg) noexcept -> std::size_t {
    registered_completion* linked = nullptr;  // chained through next_
    registered_completion* deferred = nullptr;
    {
        const std::lock_guard lock(m_);
        for (registered_completion* op : slots_) {
            if (op == nullptr || op->owner_ != owner) continue;
            op->next_ = linked;
            linked = op;
        }
        for (registered_completion* op = linked; op != nullptr; op = op->next_)
            (void)take(op->context_address(), false);
        deferred = take_deferred_owned(owner);
    }
    std::size_t n = 0;
    for (auto [list, was_deferred] : {std::pair{linked, false}, std::pair{deferred, true}}) {
        while (list != nullptr) {
            registered_completion* op = list;
            list = op->next_;
            op->next_ = nullptr;
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
        for (registered_completion* op : slots_) {
            if (op == nullptr || op->owner_ != owner) continue;
            fn(*op, false, arg);
            ++n;
        }
        deferred = take_deferred_owned(owner);
    }
    while (deferred != nullptr) {
        registered_completion* op = deferred;
        deferred = op->next_;
        op->next_ = nullptr;
        fn(*op, true, arg);
        ++n;
    }
    return n;
}

auto completion_registry::defer(registered_completion& op) noexcept -> bool {
    const std::lock_guard lock(m_);
    if (op.linked_ || op.deferred_ || op.retry_ == nullptr) return false;
    op.next_ = nullptr;
    if (deferred_tail_ != nullptr) deferred_tail_->next_ = &op;
    else deferred_head_ = &op;
    deferred_tail_ = &op;
    op.deferred_ = true;
    ++deferred_count_;
    return true;
}

auto completion_registry::withdraw_deferred(registered_completion& op) noexcept -> bool {
    const std::lock_guard lock(m_);
    if (!op.deferred_) return false;
    registered_completion* prev = nullptr;
    for (registered_completion* t = deferred_head_; t != nullptr; prev = t, t = t->next_) {
        if (t != &op) continue;
        (prev != nullptr ? prev->next_ : deferred_head_) = t->next_;
        if (deferred_tail_ == t) deferred_tail_ = prev;
        t->next_ = nullptr;
        t->deferred_ = false;
        --deferred_count_;
        return true;
    }
    return false;  // not reached: a deferred operation is always in the list
}

auto completion_registry::retry_deferred() noexcept -> std::size_t {
    std::size_t retried = 0;
    for (std::size_t n = deferred_count_.load(std::memory_order_acquire); n > 0; --n) {  // only those queued before this call
        registered_completion* op = nullptr;
        {
            const std::lock_guard lock(m_);
            op = deferred_head_;
            if (op == nullptr) break;
            deferred_head_ = op->next_;
            if (deferred_head_ == nullptr) deferred_tail_ = nullptr;
            op->next_ = nullptr;
            op->deferred_ = false;
            --deferred_count_;
        }
        op->retry_(*op);
        ++retried;
    }
    return retried;
}

auto completion_registry::grow_hold(std::size_t need) noexcept -> bool {
    // Called under the lock, when the ring has less than `need` free slots.
    try {
        std::vector<completion_event> bigger(std::max(held_.size() * 2, held_count_ + need));
        for (std::size_t i = 0; i < held_count_; ++i)
            bigger[i] = std::move(held_[(held_first_ + i) % held_.size()]);
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
                const registered_completion* op_at = slots_[find_slot(key)];
                if (op_at != nullptr && op_at->passive_) break;
            }
            if (i == held_count_) return n;
            using std::swap;
            swap(ev, held_[(held_first_ + i) % cap]);
            for (std::size_t k = i; k + 1 < held_count_; ++k)  // close the gap, order kept
                swap(held_[(held_first_ + k) % cap], held_[(held_first_ + k + 1) % cap]);
            --held_count_;
            op = take(reinterpret_cast<std::uintptr_t>(ev.context), true);
        }
        op->deliver_(*op, ev);
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
    const std::lock_guard lock(m_);
    return slots_[find_slot(reinterpret_cast<std::uintptr_t>(context))] != nullptr;
}

auto completion_registry::size() const noexcept -> std::size_t {
    const std::lock_guard lock(m_);
    return size_;
}

}  // namespace loom
