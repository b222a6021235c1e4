// A registrar for loom::basic_mr_cache that registers nothing (no provider, no memory
// touched): it records every call, can be told to fail the next registration, and notices
// overlapping calls (the cache must serialize them). Shared by the MR cache's unit,
// property and concurrency tests.
#pragma once

#include <loom/domain_registrar.hpp>
#include <loom/mr_cache.hpp>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>

namespace loom_test::mr {

using loom::mr_access_flags;
using loom::mr_cache_limits;
using loom::mr_cache_stats;

inline const std::uint64_t ps = loom::detail::mr_cache_core::page_size();
// Synthetic, page-aligned addresses: the fake registrar never touches memory.
constexpr std::uint64_t base = 0x100000000000ULL;

inline auto at(std::uint64_t addr, std::size_t n) -> std::span<std::byte> {
    return {reinterpret_cast<std::byte*>(static_cast<std::uintptr_t>(addr)), n};
}

// ---------------------------------------------------------------- fake registrar

struct fake_region {
    std::uint64_t id{0};
    std::uint64_t start{0};
    std::uint64_t length{0};
    mr_access_flags access{};
};

struct fake_live {
    std::uint64_t start{0};
    std::uint64_t length{0};
    mr_access_flags access{};
    friend auto operator==(const fake_live&, const fake_live&) -> bool = default;
};

inline constexpr std::size_t max_ids = 1u << 20;

/// Shared between the test and the registrar copy inside the cache. Deliberately without a
/// lock: the cache must serialize register/deregister (TSan and `overlap` catch it if not).
struct fake_state {
    std::uint64_t next_id{1};
    std::map<std::uint64_t, fake_live> live;
    std::uint64_t register_calls{0};
    std::uint64_t deregister_calls{0};
    bool fail_next{false};
    loom::void_result config{};
    std::atomic<int> in_call{0};
    std::atomic<bool> overlap{false};
    std::unique_ptr<std::atomic<bool>[]> alive{new std::atomic<bool>[max_ids] {}};
};

struct fake_registrar {
    using region_type = fake_region;
    std::shared_ptr<fake_state> st = std::make_shared<fake_state>();

    [[nodiscard]] auto check() const -> loom::void_result { return st->config; }
    auto register_range(const loom::mr_cache_request& req) -> loom::result<fake_region> {
        if (st->in_call.exchange(1) != 0) st->overlap = true;
        ++st->register_calls;
        loom::result<fake_region> out = loom::make_unexpected(loom::errc::no_memory);
        if (!std::exchange(st->fail_next, false)) {
            const auto start = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(req.range.data()));
            const fake_region r{st->next_id++, start, req.range.size(), req.access};
            st->live[r.id] = fake_live{r.start, r.length, r.access};
            if (r.id < max_ids) st->alive[r.id].store(true);
            out = r;
        }
        st->in_call.store(0);
        return out;
    }
    void deregister(fake_region& r) noexcept {
        if (st->in_call.exchange(1) != 0) st->overlap = true;
        ++st->deregister_calls;
        st->live.erase(r.id);
        if (r.id < max_ids) st->alive[r.id].store(false);
        st->in_call.store(0);
    }
    [[nodiscard]] static auto descriptor(const fake_region& r) noexcept -> void* {
        return reinterpret_cast<void*>(static_cast<std::uintptr_t>(r.id * 16));
    }
    [[nodiscard]] static auto key(const fake_region& r) noexcept -> loom::result<std::uint64_t> {
        return r.id ^ 0x5a5a0000ULL;
    }
};
static_assert(loom::mr_cache_registrar<fake_registrar>);
static_assert(loom::mr_cache_registrar<loom::domain_registrar>);

using cache_t = loom::basic_mr_cache<fake_registrar>;
using handle_t = cache_t::handle;

inline const auto send = mr_access_flags::send;
inline const auto recv = mr_access_flags::recv;
inline const auto rread = mr_access_flags::remote_read;
inline const auto rwrite = mr_access_flags::remote_write;

inline auto err(const loom::result<handle_t>& r) -> std::string {
    return r ? std::string("ok") : loom::errc_name(static_cast<loom::errc>(r.error().value()));
}

}  // namespace loom_test::mr
