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
        std::fprintf(stderr, "loom %.*s: %.*s\n", static_cast<int>(lv.size()), lv.data(),
                     static_cast<int>(text.size()), text.data());
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

void set_log_level(std::string_view loom_level, std::string_view host_level) noexcept {
    using spdlog::level::level_enum;
    level_enum lv = level_enum::warn;
    if (!loom_level.empty()) {
        lv = spdlog::level::from_str(std::string(loom_level));
    } else if (host_level == "INFO") {
        lv = level_enum::info;
    } else if (host_level == "TRACE") {
        lv = level_enum::trace;
    } else if (host_level == "VERSION" || host_level == "WARN" || host_level.empty()) {
        lv = level_enum::warn;
    }
    log().set_level(lv);
}

}  // namespace loom::plugins
