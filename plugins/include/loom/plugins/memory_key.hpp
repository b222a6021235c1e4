// loom/plugins/memory_key.hpp — what a peer needs to address a registration in one-sided
// operations (RMA, atomics), on the engine's first rail.
#pragma once

#include <cstdint>

namespace loom::plugins {

struct memory_key {
    /// What offsets are added to: the buffer's address where the provider uses virtual
    /// addresses, else the buffer's offset in its registration.
    std::uint64_t base{0};
    std::uint64_t length{0};
    std::uint64_t key{0};
};

}  // namespace loom::plugins
