// loom/execution/rma_senders.hpp — senders of RMA and atomic operations: loom::rma_async(ep).
#pragma once

#include <loom/execution/detail/rma_descriptions.hpp>

namespace loom {

/// Senders of an endpoint's one-sided operations. Reads and writes complete with
/// set_value(std::size_t bytes), atomics with set_value(T remote_value_before); failures with
/// set_error(std::error_code), cancellation with set_stopped(). The endpoint, the queue, the
/// buffers, the objects and the registrations stay borrowed until completion; descriptors and
/// remote metadata are copied. Progress: loom::execution::poll_completions(cq).
class rma_senders {
public:
    /// The senders of `ep` (borrowed).
    explicit rma_senders(endpoint& ep) noexcept : ep_(&ep) {}

    // ------------------------------------------------------------ registered, explicit peer
    /// Reads local.size() bytes (which must fit remote.length) from `peer`.
    [[nodiscard]] auto read_from(std::span<std::byte> local, const memory_region& local_mr, fabric_addr peer,
                                 const remote_memory& remote, completion_queue* cq) const {
        return sender_of(execution::detail::rma_description{local, &local_mr, peer, remote, true}, cq);
    }
    /// Writes `local` to the start of `remote` (which must be at least that long) at `peer`.
    [[nodiscard]] auto write_to(std::span<const std::byte> local, const memory_region& local_mr, fabric_addr peer,
                                const remote_memory& remote, completion_queue* cq) const {
        return sender_of(execution::detail::rma_description{writable(local), &local_mr, peer, remote, false}, cq);
    }

    // ------------------------------------------------------------ original forms
    /// The connected peer and no local descriptor: for configurations where both are valid.
    [[nodiscard]] auto read(std::span<std::byte> local, std::uint64_t remote_addr, std::uint64_t key,
                            completion_queue* cq) const {
        return sender_of(
            execution::detail::rma_description{
                local, nullptr, fabric_addrs::unspecified, {remote_addr, key, local.size()}, true},
            cq);
    }
    /// write_to the connected peer without a local descriptor.
    [[nodiscard]] auto write(std::span<const std::byte> local, std::uint64_t remote_addr, std::uint64_t key,
                             completion_queue* cq) const {
        return sender_of(
            execution::detail::rma_description{
                writable(local), nullptr, fabric_addrs::unspecified, {remote_addr, key, local.size()}, false},
            cq);
    }

    // ------------------------------------------------------------ atomics, borrowed objects
    /// Adds `operand` to the remote value; the value before lands in `result` and set_value.
    template <atomic::atomic_value T>
    [[nodiscard]] auto fetch_add_to(const T& operand, const memory_region* operand_mr, T& result,
                                    const memory_region* result_mr, fabric_addr peer, const remote_memory& remote,
                                    completion_queue* cq) const {
        return sender_of(execution::detail::atomic_description<T>{atomic::operation::sum, &operand, operand_mr, nullptr,
                                                                  nullptr, &result, result_mr, peer, remote},
                         cq);
    }
    template <atomic::atomic_value T>
    auto fetch_add_to(const T&&, const memory_region*, T&, const memory_region*, fabric_addr, const remote_memory&,
                      completion_queue*) const = delete;
    /// Replaces the remote value with `replacement` when it equals `expected`.
    template <atomic::atomic_value T>
    [[nodiscard]] auto compare_swap_to(const T& expected, const memory_region* expected_mr, const T& replacement,
                                       const memory_region* replacement_mr, T& result, const memory_region* result_mr,
                                       fabric_addr peer, const remote_memory& remote, completion_queue* cq) const {
        // fi_compare_atomic: the operand is the value written, the compare buffer the expected one.
        return sender_of(
            execution::detail::atomic_description<T>{atomic::operation::cswap, &replacement, replacement_mr, &expected,
                                                     expected_mr, &result, result_mr, peer, remote},
            cq);
    }
    template <atomic::atomic_value T>
    auto compare_swap_to(const T&&, const memory_region*, const T&, const memory_region*, T&, const memory_region*,
                         fabric_addr, const remote_memory&, completion_queue*) const = delete;

    // ------------------------------------------------------------ atomics, copied inputs
    /// The inputs are copied into the operation (the provider must accept unregistered inputs);
    /// the result is written at the start of `result_mr`'s memory (host memory, >= sizeof(T)).
    template <atomic::atomic_value T>
    [[nodiscard]] auto fetch_add(std::uint64_t remote_addr, T value, std::uint64_t key, const memory_region& result_mr,
                                 completion_queue* cq) const {
        auto d = copied<T>(atomic::operation::sum, remote_addr, key, result_mr);
        d.copies[0] = value;
        return sender_of(d, cq);
    }
    /// Compare-and-swap with copied inputs; the value before lands at the start of `result_mr`'s memory.
    template <atomic::atomic_value T>
    [[nodiscard]] auto compare_swap(std::uint64_t remote_addr, T expected, T replacement, std::uint64_t key,
                                    const memory_region& result_mr, completion_queue* cq) const {
        auto d = copied<T>(atomic::operation::cswap, remote_addr, key, result_mr);
        d.copies[0] = replacement;
        d.copies[1] = expected;
        return sender_of(d, cq);
    }

private:
    static auto writable(std::span<const std::byte> s) noexcept -> std::span<std::byte> {
        return {const_cast<std::byte*>(s.data()), s.size()};  // writes only read it
    }
    template <class T>
    static auto copied(atomic::operation op, std::uint64_t addr, std::uint64_t key, const memory_region& result_mr)
        -> execution::detail::atomic_description<T> {
        T* result = result_mr.size() >= sizeof(T) ? reinterpret_cast<T*>(result_mr.address()) : nullptr;
        execution::detail::atomic_description<T> d{op,
                                                   nullptr,
                                                   nullptr,
                                                   nullptr,
                                                   nullptr,
                                                   result,
                                                   &result_mr,
                                                   fabric_addrs::unspecified,
                                                   {addr, key, sizeof(T)}};
        d.copied = true;
        return d;
    }
    template <class D>
    [[nodiscard]] auto sender_of(const D& d, completion_queue* cq) const -> execution::detail::fabric_sender<D> {
        return {d, ep_, cq};
    }
    endpoint* ep_;
};

/// The one-sided senders of `ep` (borrowed).
[[nodiscard]] inline auto rma_async(endpoint& ep) noexcept -> rma_senders { return rma_senders{ep}; }

}  // namespace loom
