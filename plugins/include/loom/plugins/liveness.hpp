// loom/plugins/liveness.hpp — when a channel pings its peer and when it gives the peer up:
// pure functions of the clock, so the thresholds are tested without a provider (the engine's
// peer monitor, src/peer_monitor.cpp, acts on them).
//
// While a request waits on the peer for a quarter of the timeout, ping every quarter; after
// three quarters without a word the peer is dead. A peer that dies at t answered its last
// ping at most a quarter before t, so its requests fail by t + timeout. The peers are checked
// at least every quarter, so a pong has two checks to arrive; a ping the provider refuses for
// now (tcp makes its connection on the first message) goes again at the next millisecond.
//
// The provider may say so sooner: an operation that ends with a connection error (unreachable,
// refused, reset, ...) means the peer cannot be reached now, and the channel fails at once
// rather than start the clock again for what is submitted after.
#pragma once

#include <loom/error.hpp>

#include <algorithm>
#include <chrono>
#include <system_error>

namespace loom::plugins {

/// The clock liveness decisions use.
using liveness_clock = std::chrono::steady_clock;

/// The shortest peer timeout (LOOM_PEER_TIMEOUT_MS): below it a ping's answer would have less
/// than two 25 ms checks to arrive.
inline constexpr std::chrono::milliseconds min_peer_timeout{100};

/// How soon a ping the provider refused for now is tried again.
inline constexpr std::chrono::milliseconds refused_ping_retry{1};

/// How long a request waits before its channel starts to ping, and the ping period.
[[nodiscard]] constexpr auto ping_interval(std::chrono::milliseconds peer_timeout) noexcept
    -> liveness_clock::duration {
    return peer_timeout / 4;
}

/// How long a waited-on peer may stay silent before it is declared dead.
[[nodiscard]] constexpr auto silence_limit(std::chrono::milliseconds peer_timeout) noexcept
    -> liveness_clock::duration {
    return peer_timeout - ping_interval(peer_timeout);
}

/// How often the peers are checked: every 100 ms, or every ping interval where that is shorter.
[[nodiscard]] constexpr auto check_period(std::chrono::milliseconds peer_timeout) noexcept -> liveness_clock::duration {
    return std::min<liveness_clock::duration>(ping_interval(peer_timeout), std::chrono::milliseconds(100));
}

/// What liveness_step decides.
enum class liveness_action {
    none,         ///< nothing to do now
    ping,         ///< send the peer a ping
    declare_dead  ///< the peer was silent too long: declare it dead
};

/// What a channel does at `now`, given whether a request has waited on the peer for
/// ping_interval, when it last heard from the peer and when it last pinged.
[[nodiscard]] constexpr auto liveness_step(bool waiting, liveness_clock::time_point now,
                                           liveness_clock::time_point last_heard, liveness_clock::time_point last_ping,
                                           std::chrono::milliseconds peer_timeout) noexcept -> liveness_action {
    if (!waiting) return liveness_action::none;
    if (now - last_heard > silence_limit(peer_timeout)) return liveness_action::declare_dead;
    return now - last_ping >= ping_interval(peer_timeout) ? liveness_action::ping : liveness_action::none;
}

/// True for the completion errors that say the provider has lost its connection to the peer
/// (a channel that sees one fails at once). Time-outs are not among them: providers also
/// report receiver-not-ready retries so.
[[nodiscard]] inline auto means_peer_unreachable(const std::error_code& e) noexcept -> bool {
    if (e.category() != loom::fabric_category()) return false;
    switch (static_cast<loom::errc>(e.value())) {
        case loom::errc::host_unreachable:
        case loom::errc::host_down:
        case loom::errc::network_unreachable:
        case loom::errc::network_down:
        case loom::errc::connection_refused:
        case loom::errc::connection_reset:
        case loom::errc::connection_aborted:
        case loom::errc::not_connected:
        case loom::errc::shutdown: return true;
        default: return false;
    }
}

}  // namespace loom::plugins
