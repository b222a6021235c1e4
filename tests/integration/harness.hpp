// Shared pieces of the two-process integration tests: opening a provider's object chain,
// the command protocol between the test process and its peer, payload patterns.
#pragma once

#include <loom/loom.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace loom_test {

/// Every object one side needs, declared so that destruction runs endpoint-first.
struct stack {
    loom::fabric_info info;
    loom::fabric fabric;
    loom::domain domain;
    loom::completion_queue cq;
    loom::address_vector av;
    loom::endpoint ep;
};

/// The entry of `provider` (exact name) for RDM with `caps` (and `threading`, where given),
/// preferring the loopback interface and IPv4. errc::no_data when the provider offers nothing
/// matching.
auto find_info(const std::string& provider, loom::capability caps,
               loom::threading_mode threading = loom::threading_mode::unspecified) -> loom::result<loom::fabric_info>;

/// Opens fabric, domain, CQ (tagged format, `cq` attributes), AV and an enabled RDM endpoint.
/// A non-zero min_multi_recv is set before enabling (some providers read it only at enable time).
auto open_stack(const std::string& provider, loom::capability caps, std::size_t min_multi_recv = 0,
                const loom::cq_attr& cq = {.size = 256},
                loom::threading_mode threading = loom::threading_mode::unspecified) -> loom::result<stack>;
/// The same for an entry already chosen; `cq_mr`: where the queue's own state lives.
auto open_stack_of(const loom::fabric_info& info, std::size_t min_multi_recv = 0,
                   const loom::cq_attr& cq = {.size = 256}, std::pmr::memory_resource* cq_mr = nullptr)
    -> loom::result<stack>;
/// A tcp;ofi_rxm stack whose endpoint's receive defaults carry FI_MULTI_RECV (what the
/// asynchronous front ends refuse to inherit); an error where that is not offered.
auto open_multi_recv_default_stack() -> loom::result<stack>;

/// The byte at `i` of the payload identified by `seed`.
inline auto pattern_byte(std::uint64_t seed, std::size_t i) noexcept -> std::byte {
    return static_cast<std::byte>((i * 131u + seed * 7u + (i >> 8) + (i >> 16)) & 0xffu);
}
void fill_pattern(std::span<std::byte> buf, std::uint64_t seed) noexcept;
/// Index of the first wrong byte, or nullopt when every byte matches.
auto check_pattern(std::span<const std::byte> buf, std::uint64_t seed) noexcept -> std::optional<std::size_t>;

/// Drives one side's completion queue. Events nobody is waiting for yet are kept and handed
/// out when their context is asked for: completions are matched by context, never by order.
class progress {
public:
    explicit progress(loom::completion_queue& cq) : cq_(&cq) {}
    /// Reads what the queue has (driving provider progress); returns the number read.
    auto poll_once() -> std::size_t;
    /// Waits until an event for `ctx` is available.
    auto wait_for(const void* ctx, std::chrono::milliseconds timeout) -> loom::result<loom::completion_event>;
    /// Runs fn() until it stops returning again, progressing in between.
    template <class F>
    auto retry(F&& fn, std::chrono::milliseconds timeout) -> loom::void_result {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            auto r = fn();
            if (r || !loom::is_again(r.error()) || std::chrono::steady_clock::now() > deadline) return r;
            poll_once();
        }
    }
    /// Reads from `fd` (exactly n bytes) while progressing the queue.
    auto read_fd(int fd, void* p, std::size_t n, std::chrono::milliseconds timeout) -> bool;

private:
    loom::completion_queue* cq_;
    std::vector<loom::completion_event> stash_;
};

// ---------------------------------------------------------------- peer protocol
enum class op : std::uint32_t {
    post_recv = 1,   ///< slot, kind, size, tag, ignore, peer (source; -1 any)
    wait_recv = 2,   ///< slot, seed, size: wait, verify, report
    send = 3,        ///< kind, size, seed, tag, peer (destination)
    add_peer = 4,    ///< followed by an address record; reply.value = handle index
    multi_recv = 5,  ///< slot, size (buffer), ignore (min free space)
    wait_multi = 6,  ///< slot, size (message count), seed: each message k carries seed+k
    quit = 7,
    expose = 8,      ///< size, seed: register a remote-access region filled with pattern(seed);
                     ///< reply.value = addr, reply.tag = key, reply.bytes = length
    verify = 9,      ///< seed (offset in tag), size: check the exposed region's bytes
    wait_data = 10,  ///< wait for a remote-CQ-data completion; reply.value = data, bytes = len
};
enum class kind : std::uint32_t { msg = 0, tagged = 1 };

struct command {
    op code{};
    kind k{};
    std::uint32_t slot{0};
    std::int32_t peer{0};
    std::uint64_t size{0};
    std::uint64_t seed{0};
    std::uint64_t tag{0};
    std::uint64_t ignore{0};
};

struct reply {
    std::int32_t status{0};  ///< 0 or an errc value
    std::uint32_t flags{0};  ///< wait_multi: 1 when the buffer-release flag was seen
    std::uint64_t bytes{0};
    std::uint64_t tag{0};
    std::uint64_t overflow{0};
    std::uint64_t value{0};  ///< wait_recv: index of the first wrong byte + 1 (0: all good)
    char text[96]{};
};

/// Blocking exact-length I/O on a socket with a deadline; false on EOF, error or timeout.
auto write_all(int fd, const void* p, std::size_t n) -> bool;
auto read_all(int fd, void* p, std::size_t n, std::chrono::milliseconds timeout) -> bool;
/// Address record: format (u32), length (u32), bytes.
auto send_address(int fd, const loom::address& a) -> bool;
auto recv_address(int fd, std::chrono::milliseconds timeout) -> std::optional<loom::address>;

inline constexpr std::size_t max_message = 4u << 20;
inline constexpr std::size_t slot_count = 4;
/// The peer's FI_OPT_MIN_MULTI_RECV when it is started with capability::multi_recv.
inline constexpr std::size_t multi_recv_min = 1000;

}  // namespace loom_test
