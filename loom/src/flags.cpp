#include "loom/flags.hpp"

#include <rdma/fabric.h>

#include <array>
#include <cstdio>
#include <utility>

namespace loom {
namespace {

template <std::size_t N>
auto join_bits(std::uint64_t bits, const std::array<std::pair<std::uint64_t, const char*>, N>& names) -> std::string {
    std::string out;
    for (const auto& [bit, name] : names) {
        if ((bits & bit) == bit && bit != 0) {
            if (!out.empty()) out += '|';
            out += name;
            bits &= ~bit;
        }
    }
    if (bits != 0) {
        char hex[24];
        std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(bits));
        if (!out.empty()) out += '|';
        out += hex;
    }
    return out.empty() ? "none" : out;
}

constexpr std::array<const char*, 4> ep_names{"unspecified", "msg", "dgram", "rdm"};
constexpr std::array<const char*, 4> progress_names{"unspecified", "auto", "manual", "control_unified"};
constexpr std::array<const char*, 6> thread_names{"unspecified", "safe", "fid", "domain", "completion", "endpoint"};
constexpr std::array<const char*, 3> av_names{"unspecified", "map", "table"};
constexpr std::array<const char*, 18> format_names{
    "unspecified", "sockaddr", "sockaddr_in", "sockaddr_in6", "sockaddr_ib", "psmx", "gni", "bgq", "mlx",
    "str",         "psmx2",    "ib_ud",       "efa",          "psmx3",       "opx",  "cxi", "ucx", "sockaddr_ip"};

template <class E, std::size_t N>
auto name_of(E v, const std::array<const char*, N>& names) -> std::string {
    const auto i = static_cast<std::size_t>(v);
    if (i < N) return names[i];
    return "invalid(" + std::to_string(static_cast<long long>(v)) + ")";
}

template <class E, std::size_t N>
auto in_range(E v, const std::array<const char*, N>&) noexcept -> void_result {
    const auto i = static_cast<long long>(v);
    if (i >= 0 && static_cast<std::size_t>(i) < N) return {};
    return make_unexpected(errc::invalid_argument);
}

}  // namespace

auto to_string(endpoint_types v) -> std::string { return name_of(v, ep_names); }
auto to_string(progress_mode v) -> std::string { return name_of(v, progress_names); }
auto to_string(threading_mode v) -> std::string { return name_of(v, thread_names); }
auto to_string(av_type v) -> std::string { return name_of(v, av_names); }
auto to_string(address_format v) -> std::string { return name_of(v, format_names); }

auto validate(endpoint_types v) noexcept -> void_result { return in_range(v, ep_names); }
auto validate(progress_mode v) noexcept -> void_result { return in_range(v, progress_names); }
auto validate(threading_mode v) noexcept -> void_result { return in_range(v, thread_names); }
auto validate(av_type v) noexcept -> void_result { return in_range(v, av_names); }
// sockaddr_ip (FI_SOCKADDR_IP) is libfabric 2.3's value; older providers never report it, and
// addresses of that format decode as IPv4/IPv6 either way.
auto validate(address_format v) noexcept -> void_result { return in_range(v, format_names); }

auto parse_endpoint_type(std::string_view name) noexcept -> result<endpoint_types> {
    for (std::size_t i = 0; i < ep_names.size(); ++i)
        if (name == ep_names[i]) return static_cast<endpoint_types>(i);
    return make_unexpected(errc::invalid_argument);
}

auto to_string(capability v) -> std::string {
    static constexpr std::array<std::pair<std::uint64_t, const char*>, 33> names{{
        {1ULL << 1, "msg"},
        {1ULL << 2, "rma"},
        {1ULL << 3, "tagged"},
        {1ULL << 4, "atomic"},
        {1ULL << 5, "multicast"},
        {1ULL << 6, "collective"},
        {1ULL << 8, "read"},
        {1ULL << 9, "write"},
        {1ULL << 10, "recv"},
        {1ULL << 11, "send"},
        {1ULL << 12, "remote_read"},
        {1ULL << 13, "remote_write"},
        {1ULL << 16, "multi_recv"},
        {1ULL << 17, "remote_cq_data"},
        {1ULL << 20, "trigger"},
        {1ULL << 21, "fence"},
        {1ULL << 36, "peer_transfer"},
        {1ULL << 41, "av_user_id"},
        {1ULL << 43, "peer"},
        {1ULL << 44, "xpu"},
        {1ULL << 45, "tagged_directed_recv"},
        {1ULL << 46, "tagged_multi_recv"},
        {1ULL << 47, "hmem"},
        {1ULL << 48, "exact_directed_recv"},
        {1ULL << 49, "rma_pmem"},
        {1ULL << 50, "source_err"},
        {1ULL << 51, "local_comm"},
        {1ULL << 52, "remote_comm"},
        {1ULL << 53, "shared_av"},
        {1ULL << 56, "rma_event"},
        {1ULL << 57, "source"},
        {1ULL << 58, "named_rx_ctx"},
        {1ULL << 59, "directed_recv"},
    }};
    return join_bits(v.get(), names);
}

auto to_string(mr_access_flags v) -> std::string {
    static constexpr std::array<std::pair<std::uint64_t, const char*>, 7> names{{
        {1ULL << 11, "send"},
        {1ULL << 10, "recv"},
        {1ULL << 8, "read"},
        {1ULL << 9, "write"},
        {1ULL << 12, "remote_read"},
        {1ULL << 13, "remote_write"},
        {1ULL << 6, "collective"},
    }};
    return join_bits(v.get(), names);
}

auto to_string(op_flag v) -> std::string {
    static constexpr std::array<std::pair<std::uint64_t, const char*>, 26> names{{
        {1ULL << 1, "msg"},
        {1ULL << 2, "rma"},
        {1ULL << 3, "tagged"},
        {1ULL << 4, "atomic"},
        {1ULL << 8, "read"},
        {1ULL << 9, "write"},
        {1ULL << 10, "recv"},
        {1ULL << 11, "send"},
        {1ULL << 12, "remote_read"},
        {1ULL << 13, "remote_write"},
        {1ULL << 16, "multi_recv"},
        {1ULL << 17, "remote_cq_data"},
        {1ULL << 18, "more"},
        {1ULL << 19, "peek"},
        {1ULL << 20, "trigger"},
        {1ULL << 21, "fence"},
        {1ULL << 24, "completion"},
        {1ULL << 25, "inject"},
        {1ULL << 26, "inject_complete"},
        {1ULL << 27, "transmit_complete"},
        {1ULL << 28, "delivery_complete"},
        {1ULL << 30, "commit_complete"},
        {1ULL << 31, "match_complete"},
        {1ULL << 59, "claim"},
        {1ULL << 58, "discard"},
        {1ULL << 57, "auth_key"},
    }};
    return join_bits(v.get(), names);
}

auto to_string(mr_mode_flags v) -> std::string {
    static constexpr std::array<std::pair<std::uint64_t, const char*>, 13> names{{
        {1ULL << 0, "basic"},
        {1ULL << 1, "scalable"},
        {1ULL << 2, "local"},
        {1ULL << 3, "raw"},
        {1ULL << 4, "virt_addr"},
        {1ULL << 5, "allocated"},
        {1ULL << 6, "prov_key"},
        {1ULL << 7, "mmu_notify"},
        {1ULL << 8, "rma_event"},
        {1ULL << 9, "endpoint"},
        {1ULL << 10, "hmem"},
        {1ULL << 11, "collective"},
        {1ULL << 12, "xpu_desc"},
    }};
    return join_bits(v.get(), names);
}

auto to_string(mode_flags v) -> std::string {
    static constexpr std::array<std::pair<std::uint64_t, const char*>, 6> names{{
        {1ULL << 59, "context"},
        {1ULL << 52, "context2"},
        {1ULL << 58, "msg_prefix"},
        {1ULL << 57, "async_iov"},
        {1ULL << 56, "rx_cq_data"},
        {1ULL << 55, "local_mr"},
    }};
    return join_bits(v.get(), names);
}

}  // namespace loom
