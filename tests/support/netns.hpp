// Two network namespaces joined by a veth pair: a peer "on another host" for real, whose link
// a test can take down and bring back. Needs root (CAP_NET_ADMIN) and iproute2's `ip`; tests
// skip where they cannot make one. Only the namespaces' own addresses (10.201.0.1 and
// 10.201.0.2 on an interface named `loom0` in each) are used.
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

namespace loom::test {

class netns_pair {
public:
    /// The veth end's name inside each namespace (the same on both sides).
    static constexpr const char* interface = "loom0";

    /// Creates both namespaces and the link between them, up; nothing when this process
    /// cannot (not root, no `ip`): the caller skips.
    static auto create() -> std::optional<netns_pair> {
        static int serial = 0;
        const std::string id = std::to_string(::getpid()) + "-" + std::to_string(serial++);
        netns_pair p("loom-" + id + "-a", "loom-" + id + "-b");
        const std::string va = "lma" + id, vb = "lmb" + id;  // at most 15 characters
        if (!run("ip netns add " + p.names_[0])) return std::nullopt;
        p.made_ = true;  // from here the destructor removes what was made
        const bool made =
            run("ip netns add " + p.names_[1]) && run("ip link add " + va + " type veth peer name " + vb) &&
            run("ip link set " + va + " netns " + p.names_[0]) && run("ip link set " + vb + " netns " + p.names_[1]) &&
            p.configure(0, va) && p.configure(1, vb);
        if (!made) return std::nullopt;
        return p;
    }

    netns_pair(netns_pair&& o) noexcept
        : names_{std::move(o.names_[0]), std::move(o.names_[1])}, made_(std::exchange(o.made_, false)) {}
    netns_pair& operator=(netns_pair&&) = delete;
    ~netns_pair() {
        if (!made_) return;
        // The veth ends go with their namespaces.
        (void)run("ip netns del " + names_[0]);
        (void)run("ip netns del " + names_[1]);
    }

    [[nodiscard]] auto name(int side) const -> const std::string& { return names_[side]; }
    [[nodiscard]] static auto address(int side) -> std::string { return side == 0 ? "10.201.0.1" : "10.201.0.2"; }

    /// Moves the calling process (a forked child, before it opens any socket) into `side`.
    [[nodiscard]] auto enter(int side) const -> bool {
        const int fd = ::open(("/run/netns/" + names_[side]).c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) return false;
        const bool ok = ::setns(fd, CLONE_NEWNET) == 0;
        ::close(fd);
        return ok;
    }

    /// Takes the link down (both ends lose carrier) or brings it back.
    [[nodiscard]] auto set_link(bool up) const -> bool {
        return run("ip -n " + names_[0] + " link set " + interface + (up ? " up" : " down"));
    }

    /// Makes the link slow, `rate` (tc's notation, e.g. "100mbit") each way, with a short queue
    /// (a token bucket holding 20 ms): what waits beyond it waits in the senders' sockets and
    /// providers, as behind a real slow link. Needs `tc` (iproute2).
    [[nodiscard]] auto limit_rate(const std::string& rate) const -> bool {
        for (const auto& n : names_)
            if (!run("tc -n " + n + " qdisc add dev " + interface + " root tbf rate " + rate +
                     " burst 32kbit latency 20ms"))
                return false;
        return true;
    }

    /// Sets a network sysctl of one side's namespace (its own copy: e.g. "net.ipv4.tcp_wmem=...").
    [[nodiscard]] auto set_sysctl(int side, const std::string& setting) const -> bool {
        return run("ip netns exec " + names_[side] + " sysctl -qw '" + setting + "'");
    }

    /// Runs `command` through the shell with its output discarded; true when it exits 0.
    static auto run(const std::string& command) -> bool {
        return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
    }

private:
    netns_pair(std::string a, std::string b) : names_{std::move(a), std::move(b)} {}

    auto configure(int side, const std::string& veth) const -> bool {
        const std::string in = "ip -n " + names_[side] + " ";
        return run(in + "link set " + veth + " name " + interface) &&
               run(in + "addr add " + address(side) + "/24 dev " + interface) &&
               run(in + "link set " + interface + " up") && run(in + "link set lo up");
    }

    std::string names_[2];
    bool made_{false};
};

}  // namespace loom::test
