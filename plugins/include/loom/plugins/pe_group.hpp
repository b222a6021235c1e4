// loom/plugins/pe_group.hpp — one-sided traffic between the processing elements (PEs) of a
// symmetric job: what a partitioned-global-address-space library's remote transport needs,
// over one endpoint manager.
//
//   auto g = pe_group::create({.pe = me, .pes = n}).value();
//   auto all = allgather(g->address());                    // the job's bootstrap
//   g->connect(all).value();                               // one connection per PE and queue
//   auto* heap = g->register_memory(heap_bytes).value();
//   auto mine = g->describe(heap).value();                 // position-independent: allgather it
//   g->put(pe, 0, source, theirs[pe], remote_address).value();
//   g->atomic(pe, 0, {.op = amo_op::fetch_add, .size = 8, .operand = 1, .result = &old},
//             theirs[pe], counter_address).value();
//   g->quiet(any_pe, 0).value();                           // everything issued before is done
//
// Atomics are performed natively where the provider has them and `atomics` allows it, else
// staged: a record to the target, whose group performs the read-modify-write and answers.
// Every call may be made from any thread; none blocks past LOOM_PEER_TIMEOUT_MS.
#pragma once

#include <loom/plugins/config.hpp>
#include <loom/plugins/region_descriptor.hpp>
#include <loom/plugins/wire.hpp>

#include <loom/error.hpp>
#include <loom/gpu/memory.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>

namespace loom::plugins {

/// How atomics travel: staged (the target's group performs them), native (the provider's
/// atomics: fetch-add and compare-swap on 8 bytes, the other verbs as compare-swap loops), or
/// native where the provider validates both, else staged.
enum class atomic_path : std::uint8_t {
    automatic,  ///< native where the provider validates 8-byte fetch-add and compare-swap, else staged
    staged,     ///< the target PE's group performs the atomics
    native      ///< the provider's atomics; verbs other than fetch-add and compare-swap run as compare-swap loops
};

/// How a PE group is created.
struct pe_group_options {
    int pe{0};   ///< this process's PE number
    int pes{1};  ///< PEs in the job
    /// Connections per PE (independent completion accounting: e.g. host-initiated and proxy).
    int queues{1};
    int device{0};                                ///< the runtime's device to use
    int rails{1};                                 ///< NICs fused into that device (see manager_options::rails)
    atomic_path atomics{atomic_path::automatic};  ///< how atomics travel
    bool progress_thread{false};                  ///< a thread drives progress
    config_overrides settings{};                  ///< in place of LOOM_* variables
};

/// Read-modify-write verbs on 4- or 8-byte integers at the target.
enum class amo_op : std::uint8_t {
    set,           ///< stores operand; returns nothing
    swap,          ///< stores operand and returns the old value
    compare_swap,  ///< stores operand if the value equals compare; returns the old value
    add,           ///< adds operand; returns nothing
    fetch_add,     ///< adds operand and returns the old value
    bit_and,       ///< bitwise AND with operand; returns nothing
    fetch_and,     ///< bitwise AND with operand; returns the old value
    bit_or,        ///< bitwise OR with operand; returns nothing
    fetch_or,      ///< bitwise OR with operand; returns the old value
    bit_xor,       ///< bitwise XOR with operand; returns nothing
    fetch_xor,     ///< bitwise XOR with operand; returns the old value
    fetch,         ///< reads the value atomically and returns it; changes nothing
};
/// True for the verbs that return the old value.
[[nodiscard]] constexpr auto is_fetching(amo_op op) noexcept -> bool {
    return op == amo_op::swap || op == amo_op::compare_swap || op == amo_op::fetch_add || op == amo_op::fetch_and ||
           op == amo_op::fetch_or || op == amo_op::fetch_xor || op == amo_op::fetch;
}

/// One atomic: the verb, its operand size and values, and where a fetched value goes.
struct amo_request {
    amo_op op{amo_op::set};    ///< the verb
    std::size_t size{8};       ///< 4 or 8
    std::uint64_t operand{0};  ///< the value (set, swap, add, and, or, xor) or desired (compare_swap)
    std::uint64_t compare{0};  ///< compare_swap's expected value
    void* result{nullptr};     ///< fetching verbs: the old value lands here (size bytes)
};

/// A registration of this PE's memory.
struct pe_region;

/// Applies `r` to the integer at `target` (host memory, naturally aligned) atomically and
/// returns its old value: the staged path's read-modify-write, exposed for its tests.
[[nodiscard]] auto apply_amo(void* target, const amo_request& r) -> std::uint64_t;
/// The same on CUDA device memory through the driver (a copy out, the verb, a copy back when
/// the value changes): atomic against the other staged atomics of its PE, which run one at a
/// time, not against the GPU's own atomics on that word. not_supported without a CUDA driver.
[[nodiscard]] auto apply_amo_on_device(void* target, const amo_request& r) -> result<std::uint64_t>;

/// One PE of a job of processing elements: one-sided puts, gets and atomics on the other PEs' registered memory, with
/// quiet and fence ordering.
class pe_group {
public:
    /// invalid_argument for pe outside [0, pes), queues outside [1, 8], or the endpoint
    /// manager's reasons (device, rails).
    [[nodiscard]] static auto create(pe_group_options options) -> result<std::unique_ptr<pe_group>>;
    /// Ends what is in flight (up to LOOM_PEER_TIMEOUT_MS), closes its connections, then waits
    /// (up to LOOM_PEER_TIMEOUT_MS) for every PE connected to it to close theirs: all PEs
    /// finalize together, and a later one's goodbyes must still find this one listening.
    ~pe_group();
    pe_group(const pe_group&) = delete;
    auto operator=(const pe_group&) -> pe_group& = delete;

    /// This PE's number.
    [[nodiscard]] auto pe() const noexcept -> int;
    /// PEs in the job.
    [[nodiscard]] auto pes() const noexcept -> int;
    /// Connections per PE.
    [[nodiscard]] auto queues() const noexcept -> int;
    /// Whether atomics take the staged path.
    [[nodiscard]] auto stages_atomics() const noexcept -> bool;

    /// What the other PEs pass to connect (their index: this PE's number).
    [[nodiscard]] auto address() const -> handle_bytes;
    /// Connects to every PE (itself included) on every queue and waits until all are up
    /// (LOOM_CONNECT_TIMEOUT_MS). `addresses[i]` is PE i's address(). Every PE's address is
    /// resolved first, then `barrier` (the job's, if given) runs, then the connections open:
    /// so no PE's traffic reaches a provider that was not told about it.
    [[nodiscard]] auto connect(std::span<const handle_bytes> addresses, const std::function<bool()>& barrier = {})
        -> void_result;

    /// Registers `buffer` (the heap, or a buffer used as a local source or destination).
    [[nodiscard]] auto register_memory(std::span<std::byte> buffer, gpu::memory_kind kind = gpu::memory_kind::host)
        -> result<pe_region*>;
    /// busy while operations on it are in flight; invalid_argument for a stale region.
    [[nodiscard]] auto deregister(pe_region* region) -> void_result;
    /// The descriptor other PEs need to reach `region`; invalid_argument for a stale region.
    [[nodiscard]] auto describe(const pe_region* region) const -> result<region_descriptor>;

    /// Copies `source` to PE `pe`'s memory at `remote_address`, inside the registration that
    /// `remote` (its descriptor, as received) describes. Returns once `source` may be reused;
    /// the data is visible at the target after quiet(). `source` need not be registered.
    [[nodiscard]] auto put(int pe, int queue, std::span<const std::byte> source, std::span<const std::byte> remote,
                           std::uint64_t remote_address) -> void_result;
    /// Non-blocking: `source` must stay untouched until quiet().
    [[nodiscard]] auto put_nbi(int pe, int queue, std::span<const std::byte> source, std::span<const std::byte> remote,
                               std::uint64_t remote_address) -> void_result;
    /// Copies from PE `pe`'s memory into `destination`; get returns with the data there,
    /// get_nbi once it is issued (the data is there after quiet()).
    [[nodiscard]] auto get(int pe, int queue, std::span<std::byte> destination, std::span<const std::byte> remote,
                           std::uint64_t remote_address) -> void_result;
    /// Non-blocking get: the data is in `destination` after quiet().
    [[nodiscard]] auto get_nbi(int pe, int queue, std::span<std::byte> destination, std::span<const std::byte> remote,
                               std::uint64_t remote_address) -> void_result;
    /// A non-fetching atomic returns once issued; a fetching one once its old value is in
    /// r.result. invalid_argument for a size other than 4 or 8, a misaligned address, or a
    /// fetching verb without a result.
    [[nodiscard]] auto atomic(int pe, int queue, const amo_request& r, std::span<const std::byte> remote,
                              std::uint64_t remote_address) -> void_result;
    /// put(s), then the signal atomic: the signal never becomes visible before the data.
    [[nodiscard]] auto put_signal(int pe, int queue, std::span<const std::span<const std::byte>> sources,
                                  std::span<const std::uint64_t> remote_addresses, std::span<const std::byte> remote,
                                  const amo_request& signal, std::span<const std::byte> signal_remote,
                                  std::uint64_t signal_address) -> void_result;
    /// Waits until every operation issued on `queue` (every queue: -1) towards `pe` (every
    /// PE: -1) is complete at its target. The first failure of those operations, if any.
    [[nodiscard]] auto quiet(int pe, int queue) -> void_result;
    /// Orders what was issued before against what is issued after (towards `pe`).
    [[nodiscard]] auto fence(int pe, int queue) -> void_result;
    /// Drives completions and serves the other PEs' staged atomics. Events handled.
    auto progress() -> std::size_t;
    /// Operations not yet complete (every PE, every queue).
    [[nodiscard]] auto outstanding() const -> std::size_t;

    class impl;

private:
    explicit pe_group(std::unique_ptr<impl> p) noexcept;
    std::unique_ptr<impl> impl_;
};

}  // namespace loom::plugins
