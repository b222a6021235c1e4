#include <loom/plugins/config.hpp>
#include <loom/plugins/liveness.hpp>

#include <charconv>
#include <cstdlib>
#include <limits>
#include <mutex>

namespace loom::plugins {
namespace {
std::mutex error_mu;
std::string error_text;

auto fail(std::string text) -> result<config> {
    std::lock_guard lock(error_mu);
    error_text = std::move(text);
    return make_unexpected(errc::invalid_argument);
}
}  // namespace

auto parse_size(std::string_view t) -> std::optional<std::size_t> {
    if (t.empty()) return std::nullopt;
    std::size_t mult = 1;
    switch (t.back()) {
        case 'k':
        case 'K':
            mult = std::size_t{1} << 10;
            t.remove_suffix(1);
            break;
        case 'm':
        case 'M':
            mult = std::size_t{1} << 20;
            t.remove_suffix(1);
            break;
        case 'g':
        case 'G':
            mult = std::size_t{1} << 30;
            t.remove_suffix(1);
            break;
        default: break;
    }
    std::size_t v = 0;
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc{} || p != t.data() + t.size() || t.empty()) return std::nullopt;
    if (v > SIZE_MAX / mult) return std::nullopt;
    return v * mult;
}

auto parse_bool(std::string_view t) -> std::optional<bool> {
    if (t == "1" || t == "true" || t == "yes" || t == "on") return true;
    if (t == "0" || t == "false" || t == "no" || t == "off") return false;
    return std::nullopt;
}

auto split_list(std::string_view t) -> std::vector<std::string> {
    std::vector<std::string> out;
    while (!t.empty()) {
        const auto c = t.find(',');
        auto item = t.substr(0, c);
        if (!item.empty()) out.emplace_back(item);
        if (c == std::string_view::npos) break;
        t.remove_prefix(c + 1);
    }
    return out;
}

auto config::last_error() -> std::string {
    std::lock_guard lock(error_mu);
    return error_text;
}

auto idle_registrations_kept(const config& c, bool pins_pages) noexcept -> std::size_t {
    if (c.mr_cache_entries) return *c.mr_cache_entries;
    return pins_pages ? 0 : std::numeric_limits<std::size_t>::max();
}

auto config::from_env() -> result<config> {
    return from([](const char* n) -> const char* { return std::getenv(n); });
}

namespace detail {
auto parse_config(const char* (*get)(const char*, void*), void* state) -> result<config> {
    config c;
    auto text = [&](const char* name) -> std::optional<std::string_view> {
        const char* v = get(name, state);
        if (v == nullptr) return std::nullopt;
        return std::string_view{v};
    };
    if (auto v = text("LOOM_PROVIDER")) c.provider = *v;
    if (auto v = text("LOOM_IFACE")) c.iface = *v;
    if (auto v = text("LOOM_LOG_LEVEL")) {
        static constexpr std::string_view levels[] = {"trace", "debug", "info", "warn", "error", "off"};
        bool ok = false;
        for (auto l : levels) ok = ok || (*v == l);
        if (!ok) return fail("LOOM_LOG_LEVEL: expected trace|debug|info|warn|error|off, got '" + std::string(*v) + "'");
        c.log_level = *v;
    }
    if (auto v = text("LOOM_EAGER_MAX")) {
        auto s = parse_size(*v);
        if (!s) return fail("LOOM_EAGER_MAX: expected a size (e.g. 16384 or 64k), got '" + std::string(*v) + "'");
        c.eager_max = s;
    }
    auto ms = [&](const char* name, std::chrono::milliseconds& out, std::size_t least = 1) -> bool {
        auto v = text(name);
        if (!v) return true;
        auto s = parse_size(*v);
        if (!s || *s < least || *s > 86'400'000) return false;
        out = std::chrono::milliseconds(static_cast<long>(*s));
        return true;
    };
    if (!ms("LOOM_EAGAIN_TIMEOUT_MS", c.eagain_timeout))
        return fail("LOOM_EAGAIN_TIMEOUT_MS: expected milliseconds in [1, 86400000]");
    if (!ms("LOOM_PEER_TIMEOUT_MS", c.peer_timeout, static_cast<std::size_t>(min_peer_timeout.count())))
        return fail("LOOM_PEER_TIMEOUT_MS: expected milliseconds in [100, 86400000]");
    if (!ms("LOOM_CONNECT_TIMEOUT_MS", c.connect_timeout))
        return fail("LOOM_CONNECT_TIMEOUT_MS: expected milliseconds in [1, 86400000]");
    if (auto v = text("LOOM_PROGRESS_THREAD")) {
        auto b = parse_bool(*v);
        if (!b) return fail("LOOM_PROGRESS_THREAD: expected 0 or 1, got '" + std::string(*v) + "'");
        c.progress_thread = *b;
    }
    auto tri = [&](const char* name, tristate& out) -> bool {
        auto v = text(name);
        if (!v) return true;
        if (*v == "auto") {
            out = tristate::automatic;
            return true;
        }
        auto b = parse_bool(*v);
        if (!b) return false;
        out = *b ? tristate::on : tristate::off;
        return true;
    };
    if (!tri("LOOM_HMEM", c.hmem))
        return fail("LOOM_HMEM: expected auto, 0 or 1, got '" + std::string(text("LOOM_HMEM").value_or("")) + "'");
    if (!tri("LOOM_LIVENESS_ENDPOINT", c.liveness_endpoint))
        return fail("LOOM_LIVENESS_ENDPOINT: expected auto, 0 or 1, got '" +
                    std::string(text("LOOM_LIVENESS_ENDPOINT").value_or("")) + "'");
    if (!tri("LOOM_FLUSH", c.flush))
        return fail("LOOM_FLUSH: expected auto, 0 or 1, got '" + std::string(text("LOOM_FLUSH").value_or("")) + "'");
    if (auto v = text("LOOM_MR_CACHE_ENTRIES")) {
        auto s = parse_size(*v);
        if (!s) return fail("LOOM_MR_CACHE_ENTRIES: expected a count, got '" + std::string(*v) + "'");
        c.mr_cache_entries = s;
    }
    if (auto v = text("LOOM_CQ_SIZE")) {
        auto s = parse_size(*v);
        if (!s || *s == 0 || *s > (std::size_t{1} << 24))
            return fail("LOOM_CQ_SIZE: expected entries in [1, 16M], got '" + std::string(*v) + "'");
        c.cq_size = *s;
    }
    return c;
}
}  // namespace detail

void config_overrides::apply_to(config& c) const {
    if (provider) c.provider = *provider;
    if (iface) c.iface = *iface;
    if (eager_max) c.eager_max = eager_max;
}

auto config_overrides::conflict_with(const config& c) const -> std::string {
    if (provider && *provider != c.provider)
        return "provider '" + *provider + "' (the process uses '" + c.provider + "')";
    if (iface && *iface != c.iface) return "interfaces '" + *iface + "' (the process uses '" + c.iface + "')";
    if (eager_max && eager_max != c.eager_max)
        return "eager limit " + std::to_string(*eager_max) + " (the process uses " +
               (c.eager_max ? std::to_string(*c.eager_max) : std::string("the provider's")) + ")";
    return {};
}

}  // namespace loom::plugins
