// mr_cache.cpp — registration cache: lookups, registration, LRU retention, invalidation and
// locking (the index: mr_cache_index.hpp; counters and checks: mr_cache_observation.cpp).
//
// Locking protocol (see docs/mr_cache.md):
//  * No lock: hits through the hint table (a 4-way table of page -> node, filled by the
//    locked paths). The reference is taken with a CAS that fails on a retired node (and, in
//    bounded caches, on an idle one, which must leave the LRU list under lru_mu_); the node is
//    validated (range, access) after the CAS. Nodes are type-stable (recycled through free_,
//    freed with the cache), so a stale hint is only ever a wasted CAS, never a use-after-free.
//  * mu_ exclusive: registration, index changes (insert, evict, invalidate), LRU trimming,
//    destruction of entries, hint table growth. Every counter except the hits is written only
//    here. Hits are counted in the entry's reference word by the same atomic operation that
//    takes the reference, and moved to drained_hits_ in batches or to retired_hits_ when the
//    entry is destroyed.
//  * mu_ shared: hits the hint table does not serve (tree walk). Unbounded caches take a
//    reference with one atomic increment; bounded caches do the same while the entry already
//    has references and otherwise take lru_mu_ (under the shared lock) for the idle -> active
//    transition, so the LRU list is exact. Under the shared lock a node without retired_bit is
//    indexed.
//  * Releases: unbounded caches decrement without any lock. Bounded caches decrement without a
//    lock above one reference; the last one takes the shared lock and lru_mu_ to append the
//    entry to the LRU list, then trims under the exclusive lock when a bound is exceeded.
//  * An entry removed from the index while referenced gets retired_bit; the release that
//    drops the count of a retired entry to zero destroys it under the exclusive lock. The
//    remover sets the bit with fetch_or, so exactly one side sees "retired and unreferenced".
//    Idle entries of unbounded caches are evicted with a CAS from "idle" to "retired", which
//    fails when a lock-free hit took a reference first.
#include <rdma/fi_domain.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <loom/endpoint.hpp>
#include <loom/mr_cache.hpp>
#include <new>
#include <string>
#include <type_traits>

#include "mr_cache_index.hpp"

namespace loom::detail {

using namespace mr_index;

namespace {

[[nodiscard]] constexpr auto sufficient(mr_access_flags have, mr_access_flags want) noexcept -> bool {
    return (want & ~have).empty();
}

constexpr std::uint64_t hit_ref = node::hit_unit + 1;  // one hit and one reference

[[nodiscard]] auto invalid() noexcept { return make_unexpected(errc::invalid_argument); }

// ---------------------------------------------------------------- hint table

using hint_set = mr_cache_hint_set;
static_assert(std::is_trivially_destructible_v<hint_set>);  // freed without destructor calls
using hint_table = mr_cache_hint_table;
constexpr std::size_t min_hint_sets = 16;        // 1 KiB
constexpr std::size_t max_hint_sets = 1u << 16;  // 4 MiB, 256k ways

[[nodiscard]] constexpr auto hint_hash(std::uint64_t tag) noexcept -> std::uint64_t {
    return tag * mr_cache_core::hint_multiplier;
}

[[nodiscard]] auto make_hint_table(std::size_t sets, std::pmr::memory_resource* mr) -> resource_ptr<hint_table> {
    auto t = make_in<hint_table>(mr);
    void* storage = mr->allocate(sets * sizeof(hint_set), alignof(hint_set));
    auto* set = static_cast<hint_set*>(storage);
    for (std::size_t i = 0; i < sets; ++i) ::new (&set[i]) hint_set{};  // trivially destructible
    t->set = set;
    t->mr = mr;
    t->sets = sets;
    t->shift = 64u - static_cast<unsigned>(std::countr_zero(sets));
    return t;
}

[[nodiscard]] auto set_of(const hint_table& t, std::uint64_t tag) noexcept -> hint_set& {
    return t.set[hint_hash(tag) >> t.shift];
}

/// Stores tag -> e in its set: over the way holding the tag, else an empty way, else a way
/// picked by `salt`. Callers hold mu_ (shared or exclusive); concurrent stores may tear a way,
/// which readers tolerate.
void store_hint(const hint_table& t, std::uint64_t tag, node* e, std::uint64_t salt) noexcept {
    hint_set& set = set_of(t, tag);
    mr_cache_hint* victim = nullptr;
    for (auto& w : set.way) {
        const auto wt = w.tag.load(std::memory_order_relaxed);
        if (wt == tag) {
            if (w.node.load(std::memory_order_relaxed) != e) w.node.store(e, std::memory_order_release);
            return;
        }
        if (wt == 0 && victim == nullptr) victim = &w;
    }
    if (victim == nullptr) victim = &set.way[(hint_hash(tag) ^ salt) % hint_set::ways];
    victim->node.store(e, std::memory_order_release);
    victim->tag.store(tag, std::memory_order_release);
}

}  // namespace

// ---------------------------------------------------------------- construction

mr_cache_core::mr_cache_core(mr_cache_limits limits, std::pmr::memory_resource* mr)
    : mr_(resource_or_default(mr)),
      hint_tables_(mr_),
      roots_({space_root{memory_space{}, nullptr}}, mr_),
      page_mask_(page_size() - 1),
      page_shift_(static_cast<unsigned>(std::countr_zero(page_size()))),
      limits_(limits),
      bounded_(limits.bounded()) {
    hint_tables_.push_back(make_hint_table(min_hint_sets, mr_));
    hints_.store(hint_tables_.back().get(), std::memory_order_release);
}

void mr_cache_core::grow_hints(std::size_t sets) noexcept {
    // Runs after an insertion that must not be undone: without memory the table stays as is.
    resource_ptr<hint_table> t;
    try {
        t = make_hint_table(sets, mr_);
        hint_tables_.reserve(hint_tables_.size() + 1);
    } catch (const std::bad_alloc&) {
        return;
    }
    const hint_table& old = *hint_tables_.back();
    for (std::size_t i = 0; i < old.sets; ++i)
        for (const auto& w : old.set[i].way) {
            const auto tag = w.tag.load(std::memory_order_relaxed);
            node* e = w.node.load(std::memory_order_relaxed);
            if (tag != 0 && e != nullptr) store_hint(*t, tag, e, i);
        }
    hint_tables_.push_back(std::move(t));
    hints_.store(hint_tables_.back().get(), std::memory_order_release);
}

void mr_cache_core::remember(std::uint64_t a, node* e) noexcept {
    store_hint(*hints_.load(std::memory_order_relaxed), (a >> page_shift_) + 1, e, a >> 6);
}

auto mr_cache_core::root_of(const memory_space& s) -> node*& {
    for (auto& r : roots_)
        if (r.space == s) return r.root;
    roots_.push_back(space_root{s, nullptr});
    return roots_.back().root;
}

mr_cache_core::~mr_cache_core() = default;

auto mr_cache_core::page_size() noexcept -> std::size_t {
    static const std::size_t ps = [] {
        const long v = ::sysconf(_SC_PAGESIZE);
        return v > 0 ? static_cast<std::size_t>(v) : std::size_t{4096};
    }();
    return ps;
}

void mr_cache_core::shutdown() noexcept {
    std::unique_lock lk(mu_);
    auto discard = [this](node* n) noexcept {
        do_deregister(n);
        do_free(n);
    };
    // Post-order over the index without recursion: detach children as we go.
    node* stack[max_depth];
    int sp = 0;
    for (auto& r : roots_)
        if (r.root != nullptr) stack[sp++] = std::exchange(r.root, nullptr);
    while (sp > 0) {
        node* n = stack[sp - 1];
        if (n->left != nullptr) {
            stack[sp++] = std::exchange(n->left, nullptr);
        } else if (n->right != nullptr) {
            stack[sp++] = std::exchange(n->right, nullptr);
        } else {
            --sp;
            discard(n);
        }
    }
    while (retired_ != nullptr) discard(std::exchange(retired_, retired_->next));
    while (free_ != nullptr) do_free(std::exchange(free_, free_->next));
    lru_head_ = lru_tail_ = nullptr;
    indexed_ = entries_ = bytes_ = 0;
}

// ---------------------------------------------------------------- lookup

auto mr_cache_core::lookup_slow(const void* p, std::size_t n, mr_access_flags access, bool read_only)
    -> result<mr_cache_node*> {
    if (access.empty() || !(access & ~mr_cache_known_access).empty()) return invalid();
    if (read_only && !(access & ~mr_cache_read_only_access).empty()) return invalid();
    if (p == nullptr || n == 0) return invalid();
    const auto a = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p));
    const std::uint64_t b = a + n;
    if (b < a || b > ~page_mask_) return invalid();  // wraps, or cannot be rounded up to a page
    {
        std::shared_lock lk(mu_);
        // Under the shared lock a node without retired_bit is indexed and its fields are stable:
        // an idle entry of a bounded cache (or a lost CAS race) is served without the walk.
        const std::uint64_t tag = (a >> page_shift_) + 1;
        for (const auto& w : set_of(*hints_.load(std::memory_order_relaxed), tag).way) {
            node* e = w.node.load(std::memory_order_acquire);
            if (w.tag.load(std::memory_order_relaxed) != tag || e == nullptr) continue;
            if ((e->refs.load(std::memory_order_relaxed) & node::retired_bit) == 0 && e->host && e->start <= a &&
                b <= e->end && sufficient(e->access, access)) {
                acquire_shared(e);
                return e;
            }
        }
        // roots_[0] is host memory.
        if (node* e =
                find_in(roots_[0].root, a, b, [access](const node* x) { return sufficient(x->access, access); })) {
            acquire_shared(e);
            remember(a, e);
            return e;
        }
    }
    return lookup_miss(memory_space{}, a, b, access);
}

auto mr_cache_core::lookup_space(const memory_space& space, std::uint64_t a, std::uint64_t n, mr_access_flags access)
    -> result<mr_cache_node*> {
    if (space.kind == memory_kind::host) return invalid();
    if (access.empty() || !(access & ~mr_cache_known_access).empty()) return invalid();
    if (n == 0 || a + n < a) return invalid();
    if (space.kind == memory_kind::hmem && a == 0) return invalid();
    const std::uint64_t b = a + n;
    {
        std::shared_lock lk(mu_);
        for (const auto& r : roots_) {
            if (r.space != space) continue;
            if (node* e = find_in(r.root, a, b, [access](const node* x) { return sufficient(x->access, access); })) {
                acquire_shared(e);
                return e;
            }
            break;
        }
    }
    return lookup_miss(space, a, b, access);
}

void mr_cache_core::give_back(node* e) noexcept {
    // The node was reused for another range since the hint was stored, or serves less access:
    // the hit moves out of the total again (the sum is modular) and the reference is dropped.
    drained_hits_.fetch_sub(1, std::memory_order_relaxed);
    release(e);
}

auto mr_cache_core::lookup_miss(const memory_space& space, std::uint64_t a, std::uint64_t b, mr_access_flags access)
    -> result<node*> {
    std::unique_lock lk(mu_);
    node*& root = root_of(space);
    // Another thread may have registered the range since the shared search.
    if (node* e = find_in(root, a, b, [access](const node* x) { return sufficient(x->access, access); })) {
        const auto old = e->refs.fetch_add(hit_ref, std::memory_order_acq_rel);
        if (count_of(old) == 0 && bounded_) lru_unlink(e);
        note_hit(e, old);
        if (space.kind == memory_kind::host) remember(a, e);
        return e;
    }
    if (auto ok = do_check(); !ok) return std::unexpected(ok.error());
    ++misses_;
    // Host ranges are page-rounded; device and DMA-BUF ranges are registered exactly.
    const bool host = space.kind == memory_kind::host;
    const std::uint64_t ra = host ? a & ~page_mask_ : a;
    const std::uint64_t rb = host ? (b + page_mask_) & ~page_mask_ : b;
    const auto bytes = static_cast<std::size_t>(rb - ra);

    // Permission upgrade: entries containing the range (page-aligned, so they contain the
    // rounded range too) lack some requested access. Register the union, so one entry serves
    // both, and drop the entries of the same range it replaces.
    mr_access_flags want = access;
    (void)find_in(root, a, b, [&want](const node* x) {
        want |= x->access;
        return false;
    });

    // The oldest idle entries make room first, even if the registration then fails.
    if (bounded_) trim(1, bytes);

    const mr_cache_request req{
        .space = space,
        // NOLINTNEXTLINE(performance-no-int-to-ptr): device and DMA-BUF ranges are kept as integers
        .range = {reinterpret_cast<std::byte*>(static_cast<std::uintptr_t>(ra)), bytes},
        .access = want,
    };
    node* const shell = free_;
    auto r = do_register(req, shell);
    if (!r) return std::unexpected(r.error());
    node* e = *r;
    if (e == shell) free_ = shell->next;
    e->space = space;
    e->host = space.kind == memory_kind::host;
    e->start = ra;
    e->end = rb;
    e->access = want;
    e->left = e->right = nullptr;
    e->prev = e->next = nullptr;
    e->height = 1;
    e->max_end = rb;
    e->indexed = true;
    // Publishes the fields above to lock-free hits that CAS a recycled node.
    e->refs.store(1, std::memory_order_release);
    root = insert(root, e);
    ++indexed_;
    ++entries_;
    bytes_ += bytes;
    ++registrations_;
    if (e->host) {
        if (const auto sets = hint_tables_.back()->sets; indexed_ > 2 * sets && sets < max_hint_sets)
            grow_hints(2 * sets);
        remember(a, e);
    }

    while (node* old = find_in(root, ra, rb, [e, ra, rb, want](const node* x) {
               return x != e && x->start == ra && x->end == rb && sufficient(want, x->access);
           }))
        unindex(old, false);
    return e;
}

void mr_cache_core::acquire_shared(node* n) noexcept {
    if (!bounded_) {
        note_hit(n, n->refs.fetch_add(hit_ref, std::memory_order_relaxed));
        return;
    }
    auto cur = n->refs.load(std::memory_order_relaxed);
    while (count_of(cur) != 0) {
        if (n->refs.compare_exchange_weak(cur, cur + hit_ref, std::memory_order_relaxed, std::memory_order_relaxed)) {
            note_hit(n, cur);
            return;
        }
    }
    // idle -> active: the entry leaves the LRU list.
    std::lock_guard g(lru_mu_);
    const auto old = n->refs.fetch_add(hit_ref, std::memory_order_acq_rel);
    if (count_of(old) == 0) lru_unlink(n);
    note_hit(n, old);
}

void mr_cache_core::drain(node* n) noexcept {
    drained_hits_.fetch_add(drain_at_, std::memory_order_relaxed);
    n->refs.fetch_sub(drain_at_ << node::hit_shift, std::memory_order_relaxed);
}

// ---------------------------------------------------------------- release

void mr_cache_core::release_bounded(node* n) noexcept {
    auto cur = n->refs.load(std::memory_order_relaxed);
    while (count_of(cur) > 1) {
        if (n->refs.compare_exchange_weak(cur, cur - 1, std::memory_order_acq_rel, std::memory_order_relaxed)) return;
    }
    if ((cur & node::retired_bit) != 0) {
        // Retired entries gain no references: this is the last one.
        (void)n->refs.fetch_sub(1, std::memory_order_acq_rel);
        destroy_retired(n);
        return;
    }
    bool retired_last = false;
    bool trim_needed = false;
    {
        std::shared_lock lk(mu_);
        std::lock_guard g(lru_mu_);
        const auto old = state_of(n->refs.fetch_sub(1, std::memory_order_acq_rel));
        if (old == (node::retired_bit | 1)) {
            retired_last = true;  // invalidated or replaced since the load above
        } else if (old == 1) {
            lru_push_back(n);
            trim_needed = over_limits(0, 0);
        }
    }
    if (retired_last) {
        destroy_retired(n);
    } else if (trim_needed) {
        std::unique_lock lk(mu_);
        trim(0, 0);
    }
}

// ---------------------------------------------------------------- removal

void mr_cache_core::destroy(node* n) noexcept {
    // Retired and unreferenced: no reference (and no hit) can be added any more.
    retired_hits_ += hits_of(n->refs.load(std::memory_order_relaxed));
    n->refs.store(node::retired_bit, std::memory_order_relaxed);
    --entries_;
    bytes_ -= static_cast<std::size_t>(n->end - n->start);
    do_deregister(n);
    n->indexed = false;
    n->left = n->right = n->prev = nullptr;
    n->next = free_;
    free_ = n;
}

void mr_cache_core::destroy_retired(node* n) noexcept {
    std::unique_lock lk(mu_);
    if (n->prev != nullptr)
        n->prev->next = n->next;
    else
        retired_ = n->next;
    if (n->next != nullptr) n->next->prev = n->prev;
    destroy(n);
}

void mr_cache_core::unindex(node* n, bool invalidation) noexcept {
    node*& root = root_of(n->space);
    root = erase(root, n);
    n->indexed = false;
    --indexed_;
    if (invalidation)
        ++invalidations_;
    else
        ++evictions_;
    // Under the exclusive lock lock-free hits may still take a reference and releases drop
    // one; fetch_or decides which side destroys, and no reference is taken after it.
    const auto old = n->refs.fetch_or(node::retired_bit, std::memory_order_acq_rel);
    if (count_of(old) == 0) {
        if (bounded_) lru_unlink(n);
        destroy(n);
        return;
    }
    n->prev = nullptr;
    n->next = retired_;
    if (retired_ != nullptr) retired_->prev = n;
    retired_ = n;
}

void mr_cache_core::evict_one(node* n) noexcept {
    // An idle entry of a bounded cache (on the LRU list): lock-free hits do not take idle
    // entries of bounded caches, and the shared-lock paths are excluded.
    (void)n->refs.fetch_or(node::retired_bit, std::memory_order_acq_rel);
    node*& root = root_of(n->space);
    root = erase(root, n);
    n->indexed = false;
    --indexed_;
    ++evictions_;
    if (bounded_) lru_unlink(n);
    destroy(n);
}

auto mr_cache_core::try_evict_idle(node* n) noexcept -> bool {
    // Unbounded caches: a lock-free hit may take a reference at any time; the CAS decides.
    auto cur = n->refs.load(std::memory_order_relaxed);
    do {
        if (state_of(cur) != 0) return false;
    } while (!n->refs.compare_exchange_weak(cur, cur | node::retired_bit, std::memory_order_acq_rel,
                                            std::memory_order_relaxed));
    node*& root = root_of(n->space);
    root = erase(root, n);
    n->indexed = false;
    --indexed_;
    ++evictions_;
    destroy(n);
    return true;
}

auto mr_cache_core::over_limits(std::size_t extra_entries, std::size_t extra_bytes) const noexcept -> bool {
    const auto& l = limits_;
    const bool entries_over = extra_entries > l.max_entries || entries_ > l.max_entries - extra_entries;
    const bool bytes_over = extra_bytes > l.max_registered_bytes || bytes_ > l.max_registered_bytes - extra_bytes;
    return entries_over || bytes_over;
}

void mr_cache_core::trim(std::size_t extra_entries, std::size_t extra_bytes) noexcept {
    while (lru_head_ != nullptr && over_limits(extra_entries, extra_bytes)) evict_one(lru_head_);
}

void mr_cache_core::lru_push_back(node* n) noexcept {
    n->next = nullptr;
    n->prev = lru_tail_;
    if (lru_tail_ != nullptr)
        lru_tail_->next = n;
    else
        lru_head_ = n;
    lru_tail_ = n;
}

void mr_cache_core::lru_unlink(node* n) noexcept {
    if (n->prev != nullptr)
        n->prev->next = n->next;
    else
        lru_head_ = n->next;
    if (n->next != nullptr)
        n->next->prev = n->prev;
    else
        lru_tail_ = n->prev;
    n->prev = n->next = nullptr;
}

auto mr_cache_core::invalidate_host(const void* p, std::size_t n) -> std::size_t {
    if (n == 0) return 0;
    const auto a = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p));
    if (a == ~std::uint64_t{0}) return 0;
    const std::uint64_t last = a + n - 1 < a ? ~std::uint64_t{0} : a + n - 1;  // inclusive, clamped
    std::unique_lock lk(mu_);
    std::size_t removed = 0;
    // Overlap with [a, last]: start <= last and end > a (end >= a + 1). roots_[0] is host memory.
    while (node* x = find_in(roots_[0].root, last, a + 1, [](const node*) { return true; })) {
        unindex(x, true);
        ++removed;
    }
    return removed;
}

auto mr_cache_core::invalidate_fd(std::uint64_t fd) -> std::size_t {
    std::unique_lock lk(mu_);
    std::size_t removed = 0;
    for (auto& r : roots_) {
        if (r.space.kind != memory_kind::dmabuf || r.space.fd_identity != fd) continue;
        while (r.root != nullptr) {
            unindex(r.root, true);
            ++removed;
        }
    }
    return removed;
}

auto mr_cache_core::evict_unreferenced() -> std::size_t {
    std::unique_lock lk(mu_);
    std::size_t evicted = 0;
    if (bounded_) {
        while (lru_head_ != nullptr) {
            evict_one(lru_head_);
            ++evicted;
        }
        return evicted;
    }
    // Unbounded caches keep no LRU list: collect the idle entries through their (unused)
    // `next` links first, then remove those still idle (lock-free hits may take some).
    node* doomed = nullptr;
    for (const auto& r : roots_) {
        node* stack[max_depth];
        int sp = 0;
        node* n = r.root;
        while (n != nullptr || sp > 0) {
            while (n != nullptr) {
                stack[sp++] = n;
                n = n->left;
            }
            n = stack[--sp];
            if (count_of(n->refs.load(std::memory_order_acquire)) == 0) {
                n->next = doomed;
                doomed = n;
            }
            n = n->right;
        }
    }
    while (doomed != nullptr) {
        node* next = doomed->next;
        doomed->next = nullptr;
        if (try_evict_idle(doomed)) ++evicted;
        doomed = next;
    }
    return evicted;
}

}  // namespace loom::detail
