// loom/detail/resource_alloc.hpp — objects a loom object owns, allocated from the
// std::pmr::memory_resource its factory was given.
#pragma once

#include <cstddef>
#include <memory>
#include <memory_resource>
#include <new>
#include <utility>

namespace loom::detail {

/// The resource a factory's argument names (null: the default resource).
[[nodiscard]] inline auto resource_or_default(std::pmr::memory_resource* mr) noexcept -> std::pmr::memory_resource* {
    return mr != nullptr ? mr : std::pmr::get_default_resource();
}

/// Destroys an object and returns its storage to the resource it came from.
template <class T>
struct resource_delete {
    std::pmr::memory_resource* mr{nullptr};
    void operator()(T* p) const noexcept {
        p->~T();
        mr->deallocate(p, sizeof(T), alignof(T));
    }
};

template <class T>
using resource_ptr = std::unique_ptr<T, resource_delete<T>>;

/// Constructs a T in storage from `mr` (null: the default resource). Throws what allocation
/// or the constructor throws.
template <class T, class... Args>
[[nodiscard]] auto make_in(std::pmr::memory_resource* mr, Args&&... args) -> resource_ptr<T> {
    mr = resource_or_default(mr);
    void* p = mr->allocate(sizeof(T), alignof(T));
    try {
        return resource_ptr<T>(::new (p) T(std::forward<Args>(args)...), resource_delete<T>{mr});
    } catch (...) {
        mr->deallocate(p, sizeof(T), alignof(T));
        throw;
    }
}

}  // namespace loom::detail
