// Running an io_context in tests until something happened, with a deadline.
#pragma once

#include <asio/io_context.hpp>

#include <chrono>
#include <string>

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

/// A provider and whether its queue asks for a wait object (descriptor polling where offered):
/// the parameter of the Asio tests over real providers.
struct asio_case {
    std::string provider;
    bool wait_obj;
};

/// gtest's name for a case: provider_timer or provider_wait_fd, in [A-Za-z0-9_].
template <class Info>
auto asio_case_name(const Info& info) -> std::string {
    std::string s = info.param.provider + (info.param.wait_obj ? "_wait_fd" : "_timer");
    for (auto& c : s)
        if (c == ';' || c == '-') c = '_';
    return s;
}

}  // namespace loom_test
