// loom/detail/zero_on_move.hpp — a member that a move resets in the source.
#pragma once

#include <utility>

namespace loom::detail {

/// A value that a move leaves at T{} in the source (member-wise moves of the owning class
/// then reset it there). Reads and assigns like a T.
template <class T>
struct zero_on_move {
    T value{};
    zero_on_move() = default;
    constexpr zero_on_move(T v) noexcept : value(v) {}       // NOLINT(google-explicit-constructor)
    constexpr operator T() const noexcept { return value; }  // NOLINT(google-explicit-constructor)
    zero_on_move(zero_on_move&& o) noexcept : value(std::exchange(o.value, T{})) {}
    auto operator=(zero_on_move&& o) noexcept -> zero_on_move& {
        value = std::exchange(o.value, T{});
        return *this;
    }
    zero_on_move(const zero_on_move&) = delete;
    auto operator=(const zero_on_move&) -> zero_on_move& = delete;
    ~zero_on_move() = default;
};

}  // namespace loom::detail
