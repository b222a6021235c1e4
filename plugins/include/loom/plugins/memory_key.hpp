// loom/plugins/memory_key.hpp — what a peer needs to address a registration in one-sided
// operations (RMA, atomics): its length, and per rail of the owner's device what offsets are
// added to and the key.
#pragma once

#include <loom/plugins/limits.hpp>

#include <array>
#include <cstdint>

namespace loom::plugins {

/// What a peer needs to address a registration in one-sided operations: its length, and per rail its base and key.
struct memory_key {
    /// One rail's base and key.
    struct on_rail {
        /// What offsets are added to: the buffer's address where the provider uses virtual
        /// addresses, else the buffer's offset in its registration.
        std::uint64_t base{0};
        std::uint64_t key{0};  ///< the remote key on the rail
    };
    std::uint64_t length{0};                ///< bytes addressable
    int rails{1};                           ///< entries of `rail` in use (1..max_rails)
    std::array<on_rail, max_rails> rail{};  ///< [0]: the control rail (atomics, small operations)
};

}  // namespace loom::plugins
