// The test-side handle of a loom-test-peer child process.
#pragma once

#include "harness.hpp"

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>

namespace loom_test {

class peer_process {
public:
    /// Starts the peer for `provider`, exchanges addresses with `local` and inserts the
    /// peer into local.av. Check ok() (and error()) before use.
    peer_process(const std::string& provider, loom::capability caps, stack& local);
    ~peer_process();
    peer_process(const peer_process&) = delete;
    auto operator=(const peer_process&) -> peer_process& = delete;

    [[nodiscard]] auto ok() const noexcept -> bool { return ok_; }
    [[nodiscard]] auto error() const -> const std::string& { return error_; }
    /// The peer's handle in the local AV.
    [[nodiscard]] auto address() const noexcept -> loom::fabric_addr { return addr_; }
    /// The same handle as av.insert returned it (operations to it skip the destination check);
    /// empty until ok().
    [[nodiscard]] auto peer() const noexcept -> const std::optional<loom::peer_addr>& { return peer_; }
    /// The peer's native address, as it sent it.
    [[nodiscard]] auto native_address() const -> const loom::address& { return native_; }
    /// Runs one command; a reply with status = timed_out when the peer stops answering.
    auto run(const command& c) -> reply;
    /// Registers another local endpoint with the peer; returns its peer-side index.
    auto add_peer(const loom::address& a) -> std::int32_t;
    /// Kills the peer process at once (SIGKILL) and reaps it.
    void kill();
    [[nodiscard]] auto pid() const noexcept -> pid_t { return pid_; }
    /// The test side's progress (drives the local CQ while waiting for the peer).
    [[nodiscard]] auto local() noexcept -> progress& { return prog_; }

private:
    progress prog_;
    pid_t pid_{-1};
    int fd_{-1};
    bool ok_{false};
    std::string error_;
    loom::fabric_addr addr_{loom::fabric_addrs::unspecified};
    std::optional<loom::peer_addr> peer_;
    loom::address native_{};
};

/// Registered send/receive areas of the test side.
struct local_buffers {
    explicit local_buffers(loom::domain& dom, std::size_t size = max_message);
    std::unique_ptr<std::byte[]> send_area, recv_area;
    std::size_t size;
    loom::memory_region send_mr, recv_mr;
    [[nodiscard]] auto send(std::size_t n) -> std::span<std::byte> { return {send_area.get(), n}; }
    [[nodiscard]] auto recv(std::size_t n) -> std::span<std::byte> { return {recv_area.get(), n}; }
};

/// Sends and waits for the local completion, retrying on again.
auto send_and_wait(stack& s, progress& prog, local_buffers& b, kind k, std::size_t size, std::uint64_t seed,
                   std::uint64_t tag, loom::fabric_addr dest) -> loom::result<loom::completion_event>;

}  // namespace loom_test
