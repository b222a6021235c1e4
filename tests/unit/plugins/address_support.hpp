// Addresses the plugin wire tests encode: a string-format address (what shm uses).
#pragma once

#include <loom/address.hpp>

#include <cstring>
#include <vector>

namespace address_support {

/// A str-format address holding `text` and its terminating null.
inline auto str_address(const char* text) -> loom::address {
    std::vector<std::byte> raw(std::strlen(text) + 1);
    std::memcpy(raw.data(), text, raw.size());
    return loom::address_from_raw(loom::address_format::str, raw).value();
}

}  // namespace address_support
