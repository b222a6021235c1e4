// loom/plugins/stripe_plan.hpp — how a rendezvous write is split over the rails both sides
// have: a pure function, so every remainder and page case is tested without a provider.
#pragma once

#include <loom/plugins/limits.hpp>

#include <array>
#include <cstddef>

namespace loom::plugins {

/// One rail's share of a write: [offset, offset + length) of the data.
struct stripe {
    std::size_t offset{0};  ///< first byte of the share
    std::size_t length{0};  ///< bytes in it
};

/// How a write is split over the rails (plan_stripes).
struct stripe_plan {
    int count{0};                             ///< stripes used (rail k writes stripes[k]); 0 for nothing to write
    std::array<stripe, max_rails> stripes{};  ///< the shares, in order
};

/// Stripes `bytes` over up to `rails` rails: one stripe unless every rail gets at least
/// `min_share`; otherwise shares of ceil(bytes / rails) rounded up to `page`, the last one
/// taking whatever is left (so the stripes cover [0, bytes) exactly, in order).
[[nodiscard]] constexpr auto plan_stripes(std::size_t bytes, int rails, std::size_t min_share = stripe_min,
                                          std::size_t page = 4096) noexcept -> stripe_plan {
    stripe_plan p;
    if (bytes == 0) return p;
    std::size_t n = rails < 1 ? 1 : rails > max_rails ? max_rails : static_cast<std::size_t>(rails);
    if (n > 1 && bytes < min_share * n) n = 1;
    const std::size_t per = (bytes + n - 1) / n;
    const std::size_t share = page == 0 ? per : (per + page - 1) / page * page;
    std::size_t off = 0;
    for (std::size_t k = 0; k < n && off < bytes; ++k) {
        const std::size_t len = k == n - 1 ? bytes - off : (share < bytes - off ? share : bytes - off);
        p.stripes[k] = {off, len};
        off += len;
        ++p.count;
    }
    return p;
}

}  // namespace loom::plugins
