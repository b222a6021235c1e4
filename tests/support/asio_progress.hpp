// Running an io_context in tests until something happened, with a deadline.
#pragma once

#include <asio/io_context.hpp>

#include <chrono>

namespace loom_test {

/// Runs `ioc` (restarting it whenever it runs out of work) until done() or `timeout`; false on
/// timeout.
template <class Done>
auto run_until(::asio::io_context& ioc, Done done, std::chrono::milliseconds timeout = std::chrono::seconds(30))
    -> bool {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        if (ioc.stopped()) ioc.restart();
        ioc.run_for(std::chrono::milliseconds(5));
    }
    return true;
}

}  // namespace loom_test
