#include "options.hpp"

#include <loom/plugins/config.hpp>
#include <loom/plugins/limits.hpp>

#include <charconv>
#include <limits>

namespace loom::nixl_backend {
namespace {

auto number(const std::string& key, const std::string& text, long long max) -> std::expected<long long, std::string> {
    long long v = 0;
    const auto* end = text.data() + text.size();
    const auto [p, ec] = std::from_chars(text.data(), end, v);
    if (ec != std::errc{} || p != end || v < 0 || v > max)
        return std::unexpected("option " + key + ": bad value '" + text + "'");
    return v;
}

}  // namespace

auto default_options() -> nixl_b_params_t {
    // provider, interfaces and eager_max are absent by default: LOOM_PROVIDER, LOOM_IFACE and
    // LOOM_EAGER_MAX (or the ranked choice) decide.
    return {{"device", "0"}, {"rails", "1"}, {"progress_thread", "0"}, {"progress_delay_us", "0"}};
}

auto parse_options(const nixlBackendInitParams& params) -> std::expected<plugins::agent_options, std::string> {
    plugins::agent_options o{.name = params.localAgent};
    o.progress_thread = params.enableProgTh;
    o.progress_delay = std::chrono::microseconds(
        static_cast<std::int64_t>(std::min<std::uint64_t>(params.pthrDelay, std::numeric_limits<std::int32_t>::max())));
    if (params.customParams == nullptr) return o;
    for (const auto& [key, value] : *params.customParams) {
        if (key == "device") {
            auto v = number(key, value, 1024);
            if (!v) return std::unexpected(v.error());
            o.device = static_cast<int>(*v);
        } else if (key == "progress_thread") {
            auto b = plugins::parse_bool(value);
            if (!b) return std::unexpected("option progress_thread: bad value '" + value + "'");
            o.progress_thread = o.progress_thread || *b;
        } else if (key == "progress_delay_us") {
            auto v = number(key, value, 10'000'000);
            if (!v) return std::unexpected(v.error());
            o.progress_delay = std::chrono::microseconds(*v);
        } else if (key == "provider") {
            if (value.empty()) return std::unexpected("option provider: empty");
            o.settings.provider = value;
        } else if (key == "interfaces") {
            if (plugins::split_list(value).empty())
                return std::unexpected("option interfaces: no name in '" + value + "'");
            o.settings.iface = value;
        } else if (key == "eager_max") {
            auto v = plugins::parse_size(value);
            if (!v) return std::unexpected("option eager_max: bad size '" + value + "'");
            o.settings.eager_max = *v;
        } else if (key == "rails") {
            auto v = number(key, value, plugins::max_rails);
            if (!v || *v < 1) return std::unexpected("option rails: bad value '" + value + "' (1 to 8)");
            o.rails = static_cast<int>(*v);
        } else {
            return std::unexpected("unknown option '" + key +
                                   "' (known: device, provider, interfaces, rails, eager_max, progress_thread, "
                                   "progress_delay_us)");
        }
    }
    return o;
}

}  // namespace loom::nixl_backend
