// tools/bench/report_format.hpp (private to the report library) — escaping and number
// formats the renderers share.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>

#include "report.hpp"

namespace loom::bench::format {

inline auto fmt(const char* f, double v) -> std::string {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}

inline auto json_escape(std::string_view s) -> std::string {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\t': out += "\\t"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char b[8];
                    std::snprintf(b, sizeof b, "\\u%04x", static_cast<unsigned>(c));
                    out += b;
                } else {
                    out += c;
                }
        }
    }
    return out;
}

inline auto xml_escape(std::string_view s) -> std::string {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '&': out += "&amp;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&apos;"; break;
            default: out += c;
        }
    }
    return out;
}

/// "7 repetitions interleaved", or "3 rounds x 7 repetitions interleaved".
inline auto repetitions_note(const run_info& info) -> std::string {
    const std::string reps = std::to_string(info.repetitions) + " repetitions interleaved";
    return info.rounds > 1 ? std::to_string(info.rounds) + " rounds x " + reps : reps;
}

/// A finite number for JSON (JSON has no NaN/Inf).
inline auto jnum(double v) -> std::string {
    if (!std::isfinite(v)) return "null";
    return fmt("%.6g", v);
}

}  // namespace loom::bench::format
