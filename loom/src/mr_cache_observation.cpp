// mr_cache_observation.cpp — what the registration cache reports about itself: its counters
// and, for tests, a full check of its invariants.
#include "mr_cache_index.hpp"

#include <loom/mr_cache.hpp>

#include <algorithm>
#include <string>

namespace loom::detail {

using namespace mr_index;

auto mr_cache_core::stats() const -> mr_cache_stats {
    std::shared_lock lk(mu_);
    std::uint64_t hits = drained_hits_.load(std::memory_order_relaxed) + retired_hits_;
    for (const auto& r : roots_) {
        const node* stack[max_depth];
        int sp = 0;
        if (r.root != nullptr) stack[sp++] = r.root;
        while (sp > 0) {
            const node* n = stack[--sp];
            hits += hits_of(n->refs.load(std::memory_order_relaxed));
            if (n->left != nullptr) stack[sp++] = n->left;
            if (n->right != nullptr) stack[sp++] = n->right;
        }
    }
    for (const node* r = retired_; r != nullptr; r = r->next) hits += hits_of(r->refs.load(std::memory_order_relaxed));
    return mr_cache_stats{
        .hits = hits,
        .misses = misses_,
        .registrations = registrations_,
        .evictions = evictions_,
        .invalidations = invalidations_,
        .registered_bytes = bytes_,
        .entries = entries_,
    };
}

auto mr_cache_core::indexed_entries() const -> std::size_t {
    std::shared_lock lk(mu_);
    return indexed_;
}

namespace {

/// What is wrong with indexed node `n` itself, its subtrees' heights given; null when nothing.
auto node_problem(const node& n, std::int32_t hl, std::int32_t hr, const memory_space& space) -> const char* {
    if (!n.indexed || (n.refs.load() & node::retired_bit) != 0) return "index holds a removed entry";
    if (n.space != space) return "entry in the tree of another memory space";
    if (n.end <= n.start) return "empty range in the index";
    if (hl - hr > 1 || hr - hl > 1) return "AVL balance violated";
    if (n.height != 1 + std::max(hl, hr)) return "stale height";
    if (n.max_end != std::max({n.end, max_end(n.left), max_end(n.right)})) return "stale subtree end bound";
    return nullptr;
}

}  // namespace

auto mr_cache_core::check_invariants() const -> std::string {
    std::unique_lock lk(mu_);
    std::string problem;
    std::size_t count = 0;
    std::size_t bytes = 0;
    std::size_t idle = 0;
    const node* prev = nullptr;
    const memory_space* space = nullptr;
    // Recursive structural check; returns the subtree height (or -1 after a problem).
    auto walk = [&](auto&& self, const node* n, int depth) -> std::int32_t {
        if (n == nullptr) return 0;
        if (depth > max_depth) {
            problem = "index deeper than " + std::to_string(max_depth);
            return -1;
        }
        const auto hl = self(self, n->left, depth + 1);
        if (hl < 0) return -1;
        if (prev != nullptr && order(prev, n) >= 0) {
            problem = "keys out of order at start " + std::to_string(n->start);
            return -1;
        }
        prev = n;
        const auto hr = self(self, n->right, depth + 1);
        if (hr < 0) return -1;
        if (const char* p = node_problem(*n, hl, hr, *space)) {
            problem = p;
            return -1;
        }
        ++count;
        bytes += static_cast<std::size_t>(n->end - n->start);
        if (count_of(n->refs.load()) == 0) ++idle;
        return n->height;
    };
    if (roots_.empty() || roots_[0].space != memory_space{}) return "host memory has no first tree";
    for (const auto& r : roots_) {
        prev = nullptr;
        space = &r.space;
        if (walk(walk, r.root, 1) < 0) return problem;
    }
    if (count != indexed_) return "indexed count " + std::to_string(indexed_) + " != " + std::to_string(count);
    std::size_t retired = 0;
    for (const node* r = retired_; r != nullptr; r = r->next) {
        if (r->indexed || (r->refs.load() & node::retired_bit) == 0 || count_of(r->refs.load()) == 0)
            return "retired list holds an indexed or unreferenced entry";
        ++retired;
        bytes += static_cast<std::size_t>(r->end - r->start);
    }
    if (entries_ != indexed_ + retired) return "entries " + std::to_string(entries_) + " != indexed + retired";
    for (const node* f = free_; f != nullptr; f = f->next)
        if (f->indexed || f->refs.load() != node::retired_bit) return "free list holds a live node";
    if (bytes_ != bytes) return "registered bytes " + std::to_string(bytes_) + " != " + std::to_string(bytes);
    if (registrations_ != evictions_ + invalidations_ + indexed_)
        return "registrations != evictions + invalidations + indexed";
    if (bounded_) {
        std::size_t lru = 0;
        const node* back = nullptr;
        for (const node* l = lru_head_; l != nullptr; l = l->next) {
            if (!l->indexed || count_of(l->refs.load()) != 0) return "LRU list holds an active or removed entry";
            if (l->prev != back) return "LRU back link broken";
            back = l;
            ++lru;
        }
        if (back != lru_tail_) return "LRU tail broken";
        if (lru != idle) return "LRU length " + std::to_string(lru) + " != idle entries " + std::to_string(idle);
    }
    return {};
}

}  // namespace loom::detail
