// loom/asio/detail/op_count.hpp — a count that operations change at their start and end.
#pragma once

#include <loom/detail/single_threaded.hpp>

#include <atomic>

namespace loom::asio::detail {

/// A count of outstanding operations. Changed by atomic read-modify-writes; by a plain load and
/// store where nothing runs concurrently: the io_context's concurrency hint has its I/O objects
/// used from one thread at a time (ASIO_CONCURRENCY_HINT_UNSAFE or _UNSAFE_IO, under which Asio
/// itself takes no lock), or the process has only one thread (process_is_single_threaded).
class op_count {
public:
    op_count(long initial, bool one_thread) noexcept : n_(initial), one_thread_(one_thread) {}
    op_count(const op_count&) = delete;
    auto operator=(const op_count&) -> op_count& = delete;
    ~op_count() = default;

    /// Adds `d` (negative: subtracts); returns the count before.
    auto add(long d, std::memory_order order) noexcept -> long {
        if (!one_thread_ && !loom::detail::process_is_single_threaded()) return n_.fetch_add(d, order);
        const long before = n_.load(std::memory_order_relaxed);
        n_.store(before + d, std::memory_order_relaxed);
        return before;
    }
    [[nodiscard]] auto load(std::memory_order order = std::memory_order_acquire) const noexcept -> long {
        return n_.load(order);
    }
    [[nodiscard]] auto one_thread() const noexcept -> bool { return one_thread_; }

private:
    std::atomic<long> n_;
    bool one_thread_;
};

}  // namespace loom::asio::detail
