// loom/asio/detail/state_allocator.hpp — where an operation state lives when its handler names
// no allocator: a small per-thread cache of blocks of that state's exact type.
#pragma once

#include <cstddef>
#include <new>

namespace loom::asio::detail {

/// Blocks of one type T, kept by the thread that freed them for the next allocation of a T.
/// Asio's recycling allocator shares two blocks per thread among every allocation of the
/// io_context (posted handlers, timers); an operation state is larger than those, so after each
/// post it found only smaller blocks and went to the heap. A cache per state type always fits.
template <class T>
struct state_cache {
    /// Enough for a window of operations in flight on one thread (a stream keeps 16 or more):
    /// those beyond it go back to the heap, and the next window's come from there.
    static constexpr int capacity = 64;
    // Trivially destructible, constant-initialized: read without a guard, still usable while
    // the thread's other objects are destroyed (then it no longer keeps blocks). The count
    // shares its cache line with the blocks taken and kept most often.
    struct slots {
        int count;
        bool closed;
        void* block[capacity];
    };
    static thread_local constinit inline slots local{0, false, {}};

    /// Frees what the thread kept when it ends.
    struct cleaner {
        ~cleaner() {
            while (local.count > 0) free_block(local.block[--local.count]);
            local.closed = true;
        }
    };

    static auto take() noexcept -> void* { return local.count > 0 ? local.block[--local.count] : nullptr; }
    static auto keep(void* p) noexcept -> bool {
        if (local.closed || local.count == capacity) return false;
        if (local.count == 0) {  // the cleaner is registered at the first block kept
            static thread_local cleaner c;
            (void)c;
        }
        local.block[local.count++] = p;
        return true;
    }
    static void free_block(void* p) noexcept { ::operator delete(p, sizeof(T), std::align_val_t{alignof(T)}); }
};

/// The allocator of operation states whose handler names none. Single objects come from and go
/// to state_cache<T>; arrays (rebound for buffer lists) from the heap.
template <class T>
class state_allocator {
public:
    using value_type = T;
    state_allocator() noexcept = default;
    template <class U>
    state_allocator(const state_allocator<U>&) noexcept {}

    auto allocate(std::size_t n) -> T* {
        if (n == 1) {
            if (void* p = state_cache<T>::take()) return static_cast<T*>(p);
        }
        return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{alignof(T)}));
    }
    void deallocate(T* p, std::size_t n) noexcept {
        if (n == 1 && state_cache<T>::keep(p)) return;
        ::operator delete(p, n * sizeof(T), std::align_val_t{alignof(T)});
    }
    template <class U>
    friend auto operator==(const state_allocator&, const state_allocator<U>&) noexcept -> bool {
        return true;
    }
};

}  // namespace loom::asio::detail
