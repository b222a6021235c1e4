// The replaced global operator new counts; aligned allocations (aligned operator new, and
// aligned_alloc, which Asio's handler memory falls back to and C libraries such as libfabric
// call too) count apart. delete frees what malloc gave.
#include "allocation_count.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<long> allocations{0};
std::atomic<long> aligned_allocations{0};
}  // namespace

void* operator new(std::size_t n) {
    allocations.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {
auto aligned_block(std::size_t alignment, std::size_t n) noexcept -> void* {
    aligned_allocations.fetch_add(1, std::memory_order_relaxed);
    void* p = nullptr;
    return ::posix_memalign(&p, alignment < sizeof(void*) ? sizeof(void*) : alignment, n == 0 ? 1 : n) == 0 ? p
                                                                                                            : nullptr;
}
}  // namespace

void* operator new(std::size_t n, std::align_val_t a) {
    if (void* p = aligned_block(static_cast<std::size_t>(a), n)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
extern "C" void* aligned_alloc(std::size_t alignment, std::size_t n) noexcept { return aligned_block(alignment, n); }

auto loom::test::allocations_so_far() noexcept -> long { return allocations.load(std::memory_order_relaxed); }
auto loom::test::aligned_allocations_so_far() noexcept -> long {
    return aligned_allocations.load(std::memory_order_relaxed);
}
