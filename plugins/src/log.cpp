#include <loom/plugins/log.hpp>

#include <spdlog/sinks/base_sink.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>

namespace loom::plugins {
namespace {

struct route {
    host_log_fn fn{nullptr};
    void* user{nullptr};
};

class forwarding_sink final : public spdlog::sinks::base_sink<std::mutex> {
public:
    void set(host_log_fn fn, void* user) {
        std::lock_guard lock(route_mu_);
        route_ = {fn, user};
    }

protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
        route r;
        {
            std::lock_guard lock(route_mu_);
            r = route_;
        }
        const std::string_view text(msg.payload.data(), msg.payload.size());
        if (r.fn != nullptr) {
            r.fn(r.user, msg.level, msg.source.filename != nullptr ? msg.source.filename : "", msg.source.line, text);
            return;
        }
        const auto lv = spdlog::level::to_string_view(msg.level);
        std::fprintf(stderr, "loom %.*s: %.*s\n", static_cast<int>(lv.size()), lv.data(), static_cast<int>(text.size()),
                     text.data());
    }
    void flush_() override { std::fflush(stderr); }

private:
    std::mutex route_mu_;
    route route_{};
};

struct state {
    std::shared_ptr<forwarding_sink> sink = std::make_shared<forwarding_sink>();
    spdlog::logger logger{"loom", sink};
    state() { logger.set_level(spdlog::level::warn); }
};

auto the_state() -> state& {
    static state s;  // never registered globally: the host may use spdlog itself
    return s;
}

}  // namespace

auto log() -> spdlog::logger& { return the_state().logger; }

void set_host_logger(host_log_fn fn, void* user) noexcept { the_state().sink->set(fn, user); }

void set_log_level(std::string_view loom_level, std::optional<spdlog::level::level_enum> host_level) noexcept {
    if (!loom_level.empty())
        log().set_level(spdlog::level::from_str(std::string(loom_level)));
    else
        log().set_level(host_level.value_or(spdlog::level::warn));
}

}  // namespace loom::plugins
