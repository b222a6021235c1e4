// loom/plugins/request_pool.hpp — a channel's fixed pool of requests: N entries that live as
// long as the channel and a stack of the free ones. Nothing allocates; an entry's index is what
// the wire carries (a rendezvous write's immediate data names its receive by index).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>

namespace loom::plugins {

/// A fixed pool of N requests and a stack of the free ones; nothing allocates.
template <class T, std::size_t N>
class request_pool {
    static_assert(N > 0 && N <= 65535, "indices are 16 bits");

public:
    request_pool() noexcept { reset(); }
    /// Every entry free again, index 0 first (a channel being set up).
    void reset() noexcept {
        for (std::size_t i = 0; i < N; ++i) free_[i] = static_cast<std::uint16_t>(N - 1 - i);
        free_count_ = N;
    }
    /// A free entry; nullptr when every one is taken.
    [[nodiscard]] auto take() noexcept -> T* {
        if (free_count_ == 0) return nullptr;
        return &items_[free_[--free_count_]];
    }
    /// Gives back an entry of this pool; false (nothing changed) for one not from it or when
    /// every entry is free already.
    auto put(T& t) noexcept -> bool {
        if (!owns(t) || free_count_ == N) return false;
        free_[free_count_++] = static_cast<std::uint16_t>(index_of(t));
        return true;
    }
    /// Entries free.
    [[nodiscard]] auto free_count() const noexcept -> std::size_t { return free_count_; }
    /// Entries in all (N).
    [[nodiscard]] static constexpr auto size() noexcept -> std::size_t { return N; }
    /// True when `t` is an entry of this pool.
    [[nodiscard]] auto owns(const T& t) const noexcept -> bool {
        const std::less<const T*> before;
        return !before(&t, items_.data()) && before(&t, items_.data() + N);
    }
    /// The index of entry `t` (what the wire carries).
    [[nodiscard]] auto index_of(const T& t) const noexcept -> std::uint32_t {
        return static_cast<std::uint32_t>(&t - items_.data());
    }
    /// Entry `i` (i < N), taken or not.
    [[nodiscard]] auto at(std::size_t i) noexcept -> T& { return items_[i]; }
    // Every entry, taken or not (closing a channel, checking its peer).
    /// The first entry, taken or not (closing a channel, checking its peer).
    [[nodiscard]] auto begin() noexcept { return items_.begin(); }
    /// Past the last entry.
    [[nodiscard]] auto end() noexcept { return items_.end(); }
    /// The first entry, taken or not.
    [[nodiscard]] auto begin() const noexcept { return items_.begin(); }
    /// Past the last entry.
    [[nodiscard]] auto end() const noexcept { return items_.end(); }

private:
    std::array<T, N> items_{};
    std::array<std::uint16_t, N> free_{};
    std::size_t free_count_{0};
};

}  // namespace loom::plugins
