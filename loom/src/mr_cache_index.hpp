// mr_cache_index.hpp (private to the library) — the index of one memory space's registrations:
// an AVL tree ordered by start, each node also holding its subtree's largest end, so that a
// walk for the entries overlapping a range skips whole subtrees (mr_cache.cpp uses it; the
// invariant check in mr_cache_observation.cpp walks it).
#pragma once

#include <loom/detail/mr_cache_core.hpp>

#include <algorithm>
#include <cstdint>

namespace loom::detail::mr_index {

using node = mr_cache_node;

// An AVL tree over at most 2^64 bytes of nodes is below 93 levels high.
constexpr int max_depth = 128;

[[nodiscard]] inline auto height(const node* n) noexcept -> std::int32_t { return n != nullptr ? n->height : 0; }
[[nodiscard]] inline auto max_end(const node* n) noexcept -> std::uint64_t { return n != nullptr ? n->max_end : 0; }

inline void update(node* n) noexcept {
    n->height = 1 + std::max(height(n->left), height(n->right));
    n->max_end = std::max({n->end, max_end(n->left), max_end(n->right)});
}

[[nodiscard]] inline auto rotate_right(node* n) noexcept -> node* {
    node* l = n->left;
    n->left = l->right;
    l->right = n;
    update(n);
    update(l);
    return l;
}

[[nodiscard]] inline auto rotate_left(node* n) noexcept -> node* {
    node* r = n->right;
    n->right = r->left;
    r->left = n;
    update(n);
    update(r);
    return r;
}

[[nodiscard]] inline auto rebalance(node* n) noexcept -> node* {
    update(n);
    const auto bf = height(n->left) - height(n->right);
    if (bf > 1) {
        if (height(n->left->left) < height(n->left->right)) n->left = rotate_left(n->left);
        return rotate_right(n);
    }
    if (bf < -1) {
        if (height(n->right->right) < height(n->right->left)) n->right = rotate_right(n->right);
        return rotate_left(n);
    }
    return n;
}

/// Total order of the nodes of one memory space's tree: start, then identity (equal ranges
/// may coexist, e.g. a replaced entry and its successor).
[[nodiscard]] inline auto order(const node* x, const node* y) noexcept -> int {
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    const auto px = reinterpret_cast<std::uintptr_t>(x);
    const auto py = reinterpret_cast<std::uintptr_t>(y);
    return px < py ? -1 : (px > py ? 1 : 0);
}

[[nodiscard]] inline auto insert(node* root, node* x) noexcept -> node* {
    if (root == nullptr) return x;
    if (order(x, root) < 0)
        root->left = insert(root->left, x);
    else
        root->right = insert(root->right, x);
    return rebalance(root);
}

[[nodiscard]] inline auto remove_min(node* n, node*& min) noexcept -> node* {
    if (n->left == nullptr) {
        min = n;
        return n->right;
    }
    n->left = remove_min(n->left, min);
    return rebalance(n);
}

[[nodiscard]] inline auto erase(node* root, node* x) noexcept -> node* {
    if (root == nullptr) return nullptr;
    const int c = order(x, root);
    if (c < 0) {
        root->left = erase(root->left, x);
    } else if (c > 0) {
        root->right = erase(root->right, x);
    } else {
        node* l = root->left;
        node* r = root->right;
        root->left = root->right = nullptr;
        if (r == nullptr) return l;
        node* m = nullptr;
        r = remove_min(r, m);
        m->left = l;
        m->right = r;
        return rebalance(m);
    }
    return rebalance(root);
}

/// A node with start <= smax, end >= emin and pred(node), found by a walk that prefers the
/// right (later-starting) side. Subtrees whose largest end is below emin, and nodes starting
/// after smax together with their right subtrees, are never visited. Allocation-free.
template <class Pred>
[[nodiscard]] auto find_in(node* root, std::uint64_t smax, std::uint64_t emin, Pred&& pred) noexcept -> node* {
    node* stack[max_depth];
    int sp = 0;
    node* n = root;
    for (;;) {
        while (n != nullptr) {
            __builtin_prefetch(n->left);
            __builtin_prefetch(n->right);
            if (n->max_end < emin) break;
            if (n->start > smax) {
                n = n->left;
                continue;
            }
            if (n->end >= emin && pred(n)) return n;
            if (n->left != nullptr) stack[sp++] = n->left;
            n = n->right;
        }
        if (sp == 0) return nullptr;
        n = stack[--sp];
    }
}

[[nodiscard]] constexpr auto count_of(std::uint64_t w) noexcept -> std::uint64_t { return node::count_of(w); }
[[nodiscard]] constexpr auto hits_of(std::uint64_t w) noexcept -> std::uint64_t { return node::hits_of(w); }
[[nodiscard]] constexpr auto state_of(std::uint64_t w) noexcept -> std::uint64_t { return node::state_of(w); }

}  // namespace loom::detail::mr_index
