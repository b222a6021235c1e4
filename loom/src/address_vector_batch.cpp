// Batch insertion into an address vector: binary addresses of one length, and string
// addresses of any lengths.
#include "loom/address_vector.hpp"

#include "newer_abi.hpp"

#include <cstring>
#include <string_view>

namespace loom {
namespace {

/// Inserts `count` addresses read by the provider from `addr`, records the handles it gave and
/// copies them to `out`.
auto insert_native(::fid_av* av, const void* addr, std::size_t count, std::span<fabric_addr> out,
                   std::pmr::unordered_set<::fi_addr_t>& inserted, std::pmr::memory_resource* mr,
                   const av_insert_options& options) -> result<std::size_t> {
    const auto flags = detail::newer_flag(options.behind_firewall, detail::native_firewall_addr);
    if (!flags) return std::unexpected(flags.error());
    std::pmr::vector<::fi_addr_t> handles(count, FI_ADDR_NOTAVAIL, mr);
    const int rc = ::fi_av_insert(av, const_cast<void*>(addr), count, handles.data(), *flags, nullptr);
    if (rc < 0) return native_unexpected(rc);
    for (std::size_t i = 0; i < count; ++i) {
        out[i] = fabric_addr{handles[i]};
        if (handles[i] == FI_ADDR_NOTAVAIL) continue;
        try {
            inserted.insert(handles[i]);
        } catch (...) {
            (void)::fi_av_remove(av, &handles[i], 1, 0);  // keep the vector and the record in step
            out[i] = fabric_addrs::not_available;
        }
    }
    return static_cast<std::size_t>(rc);
}

}  // namespace

auto address_vector::insert_batch(std::span<const std::byte> packed, std::size_t address_size,
                                  std::span<fabric_addr> out, const av_insert_options& options) -> result<std::size_t> {
    if (!h_ || !inserted_) return make_unexpected(errc::bad_state);
    if (address_size == 0 || packed.empty() || packed.size() % address_size != 0 || format_ == address_format::str)
        return make_unexpected(errc::invalid_argument);
    const std::size_t count = packed.size() / address_size;
    if (out.size() != count) return make_unexpected(errc::invalid_argument);
    if (format_ != address_format::unspecified) {
        for (std::size_t i = 0; i < count; ++i)
            if (auto decoded = address_from_raw(format_, packed.subspan(i * address_size, address_size)); !decoded)
                return std::unexpected(decoded.error());
    }
    return insert_native(h_.get(), packed.data(), count, out, *inserted_, memory_resource(), options);
}

auto address_vector::insert_strings(std::span<const char* const> addresses, std::span<fabric_addr> out,
                                    const av_insert_options& options) -> result<std::size_t> {
    if (!h_ || !inserted_) return make_unexpected(errc::bad_state);
    if (format_ != address_format::str || addresses.empty() || out.size() != addresses.size())
        return make_unexpected(errc::invalid_argument);
    std::size_t total = 0;
    for (const char* s : addresses) {
        if (s == nullptr) return make_unexpected(errc::invalid_argument);
        const std::string_view text{s};
        const auto bytes = std::as_bytes(std::span{text.data(), text.size() + 1});  // with its null
        if (auto decoded = address_from_raw(format_, bytes); !decoded) return std::unexpected(decoded.error());
        total += text.size() + 1;
    }
    std::pmr::vector<char> packed(memory_resource());
    packed.reserve(total);
    for (const char* s : addresses) packed.insert(packed.end(), s, s + std::strlen(s) + 1);
    return insert_native(h_.get(), packed.data(), addresses.size(), out, *inserted_, memory_resource(), options);
}

}  // namespace loom
