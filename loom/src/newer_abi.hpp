// Flags of libfabric releases newer than the headers loom may be built with (values from
// those releases' headers), and the check that the running libfabric knows them.
#pragma once

#include <loom/error.hpp>

#include <rdma/fabric.h>

#include <cstdint>

namespace loom::detail {

#ifdef FI_RESCAN
inline constexpr std::uint64_t native_rescan = FI_RESCAN;
#else
inline constexpr std::uint64_t native_rescan = 1ULL << 35;  // fi_getinfo flag, libfabric 2.2
#endif
#ifdef FI_FIREWALL_ADDR
inline constexpr std::uint64_t native_firewall_addr = FI_FIREWALL_ADDR;
#else
inline constexpr std::uint64_t native_firewall_addr = 1ULL << 42;  // fi_av_insert flag, libfabric 2.2
#endif

/// True when the running libfabric's interface version is at least major.minor.
[[nodiscard]] inline auto runtime_at_least(unsigned major, unsigned minor) noexcept -> bool {
    return ::fi_version() >= FI_VERSION(major, minor);
}

/// `flag` when requested and the running libfabric (2.2 or newer) knows it; not_supported when
/// requested from an older one (which would refuse or misread the bit); 0 otherwise.
[[nodiscard]] inline auto newer_flag(bool requested, std::uint64_t flag) noexcept -> result<std::uint64_t> {
    if (!requested) return 0;
    if (!runtime_at_least(2, 2)) return make_unexpected(errc::not_supported);
    return flag;
}

}  // namespace loom::detail
