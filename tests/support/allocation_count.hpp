// tests/support/allocation_count.hpp — how many times this process has called operator new,
// so a test can assert that a steady state allocates nothing. Link allocation_count.cpp into
// the test binary: it replaces the global operator new and delete (malloc and free).
#pragma once

namespace loom::test {

[[nodiscard]] auto allocations_so_far() noexcept -> long;

}  // namespace loom::test
