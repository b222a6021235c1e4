// tests/unit/unit_support.hpp — small helpers shared by the unit tests.
#pragma once

#include <loom/error.hpp>

#include <cstddef>
#include <cstring>
#include <string_view>
#include <system_error>
#include <vector>

namespace loom::test {

/// The error of a result, or an empty error_code when it holds a value (never UB to call).
template <class T>
[[nodiscard]] auto error_of(const result<T>& r) -> std::error_code {
    return r ? std::error_code{} : r.error();
}

/// Bytes of a trivially copyable object.
template <class T>
[[nodiscard]] auto bytes_of(const T& v) -> std::vector<std::byte> {
    std::vector<std::byte> out(sizeof(T));
    std::memcpy(out.data(), &v, sizeof(T));
    return out;
}

/// Bytes of a string, optionally with its terminating null byte.
[[nodiscard]] inline auto bytes_of_string(std::string_view s, bool with_nul) -> std::vector<std::byte> {
    std::vector<std::byte> out(s.size() + (with_nul ? 1 : 0));
    std::memcpy(out.data(), s.data(), s.size());
    return out;
}

}  // namespace loom::test
