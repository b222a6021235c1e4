// tests/support/allocation_count.hpp — how many times this process has called operator new,
// and apart from that aligned operator new and aligned_alloc, so a test can assert that a
// steady state allocates nothing. Link allocation_count.cpp into the test binary: it replaces
// the global operator new and delete (malloc and free) and aligned_alloc.
#pragma once

namespace loom::test {

[[nodiscard]] auto allocations_so_far() noexcept -> long;
/// Aligned operator new and aligned_alloc calls (Asio's handler memory falls back to the
/// latter; C libraries call it too, so these are counted apart from operator new).
[[nodiscard]] auto aligned_allocations_so_far() noexcept -> long;

}  // namespace loom::test
