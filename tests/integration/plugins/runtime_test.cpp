// The process's plugin runtime: configuration read at the first acquire, acquire/release
// counted, the engines given back only when the last host is gone and nothing is open. Cases
// that need a fresh process run in a forked child.
#include <loom/plugins/engine.hpp>
#include <loom/plugins/runtime.hpp>

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>

namespace lp = loom::plugins;

namespace {

/// Runs `body` in a child process; its exit code (0 = every check held).
auto in_child(const std::function<int()>& body) -> int {
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(body());
    int st = 0;
    ::waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 100;
}

TEST(PluginRuntime, AMalformedVariableFailsTheFirstAcquireAsInvalidArgument) {
    EXPECT_EQ(in_child([] {
                  ::setenv("LOOM_EAGER_MAX", "lots", 1);
                  auto r = lp::runtime::instance().acquire(std::nullopt);
                  return !r && r.error() == loom::errc::invalid_argument ? 0 : 1;
              }),
              0);
}

TEST(PluginRuntime, ReleaseWithoutAcquireIsBadState) {
    EXPECT_EQ(in_child([] {
                  auto r = lp::runtime::instance().release();
                  return !r && r.error() == loom::errc::bad_state ? 0 : 1;
              }),
              0);
}

TEST(PluginRuntime, EnginesStayWhileAHostOrAnOpenObjectRemains) {
    EXPECT_EQ(in_child([] {
                  ::setenv("LOOM_PROVIDER", "shm", 1);
                  auto& rt = lp::runtime::instance();
                  int hooks = 0;
                  static int* counter = nullptr;
                  counter = &hooks;
                  if (!rt.acquire(std::nullopt, [](lp::engine&) noexcept { ++*counter; })) return 1;
                  if (!rt.acquire(std::nullopt)) return 2;  // a second host
                  if (rt.settings().provider != "shm") return 3;
                  auto first = [&] {
                      auto lock = rt.guard();
                      return rt.devices().engine_for(0);
                  };
                  if (!first() || hooks != 1) return 4;
                  if (!rt.release()) return 5;  // one host left: the engine stays
                  if (!first() || hooks != 1) return 6;
                  rt.opened();                  // an object still open
                  if (!rt.release()) return 7;  // no host left, but the object keeps the engine
                  {
                      auto lock = rt.guard();
                      if (rt.acquired()) return 8;
                  }
                  if (!first() || hooks != 1) return 9;
                  rt.closed();
                  if (!rt.acquire(std::nullopt) || !rt.release()) return 10;  // last host, nothing open
                  if (!first() || hooks != 2) return 11;                      // the engine was given back and reopened
                  return rt.release() ? 12 : 0;                               // one release too many
              }),
              0);
}

}  // namespace
