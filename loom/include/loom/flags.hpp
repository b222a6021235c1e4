// loom/flags.hpp — strongly typed libfabric flag sets and enumerations.
#pragma once

#include <loom/error.hpp>

#include <cstdint>
#include <string>

namespace loom {

/// A set of bits of one libfabric flag family. Different families do not mix:
/// `capability::msg | mr_access_flags::send` does not compile.
template <class Tag>
class flag_set {
public:
    using underlying_type = std::uint64_t;
    // NOLINTBEGIN(bugprone-crtp-constructor-accessibility): the operators build plain values of it
    constexpr flag_set() noexcept = default;
    constexpr explicit flag_set(underlying_type bits) noexcept : bits_(bits) {}
    // NOLINTEND(bugprone-crtp-constructor-accessibility)

    [[nodiscard]] constexpr auto get() const noexcept -> underlying_type { return bits_; }
    [[nodiscard]] constexpr auto has(flag_set other) const noexcept -> bool {
        return other.bits_ != 0 && (bits_ & other.bits_) == other.bits_;
    }
    [[nodiscard]] constexpr auto any(flag_set other) const noexcept -> bool { return (bits_ & other.bits_) != 0; }
    [[nodiscard]] constexpr auto empty() const noexcept -> bool { return bits_ == 0; }
    [[nodiscard]] constexpr auto without(flag_set other) const noexcept -> flag_set {
        return flag_set{bits_ & ~other.bits_};
    }
    constexpr explicit operator bool() const noexcept { return bits_ != 0; }

    friend constexpr auto operator|(flag_set a, flag_set b) noexcept -> flag_set { return flag_set{a.bits_ | b.bits_}; }
    friend constexpr auto operator&(flag_set a, flag_set b) noexcept -> flag_set { return flag_set{a.bits_ & b.bits_}; }
    friend constexpr auto operator^(flag_set a, flag_set b) noexcept -> flag_set { return flag_set{a.bits_ ^ b.bits_}; }
    friend constexpr auto operator~(flag_set a) noexcept -> flag_set { return flag_set{~a.bits_}; }
    constexpr auto operator|=(flag_set b) noexcept -> flag_set& {
        bits_ |= b.bits_;
        return *this;
    }
    constexpr auto operator&=(flag_set b) noexcept -> flag_set& {
        bits_ &= b.bits_;
        return *this;
    }
    constexpr auto operator^=(flag_set b) noexcept -> flag_set& {
        bits_ ^= b.bits_;
        return *this;
    }
    friend constexpr auto operator==(flag_set, flag_set) noexcept -> bool = default;

private:
    underlying_type bits_{};
};

// Each family is a distinct type whose named members are constants of that type.
#define LOOM_DETAIL_FLAG_FAMILY(name)                                    \
    struct name : flag_set<name> {                                       \
        using flag_set<name>::flag_set;                                  \
        constexpr name(flag_set<name> f) noexcept : flag_set<name>(f) {} \
        static const name none;                                          \
        LOOM_DETAIL_##name##_MEMBERS                                     \
    };                                                                   \
    inline constexpr name name::none{0};

// ---------------------------------------------------------------- capability
#define LOOM_DETAIL_capability_MEMBERS                                                                             \
    static const capability msg, rma, tagged, atomic, multicast, collective, read, write, recv, send, remote_read, \
        remote_write, multi_recv, remote_cq_data, trigger, fence, peer_transfer, av_user_id, peer,                 \
        tagged_directed_recv, tagged_multi_recv, hmem, exact_directed_recv, rma_pmem, source_err, local_comm,      \
        remote_comm, shared_av, rma_event, source, named_rx_ctx, directed_recv, xpu;
LOOM_DETAIL_FLAG_FAMILY(capability)
inline constexpr capability capability::msg{1ULL << 1};
inline constexpr capability capability::rma{1ULL << 2};
inline constexpr capability capability::tagged{1ULL << 3};
inline constexpr capability capability::atomic{1ULL << 4};
inline constexpr capability capability::multicast{1ULL << 5};
inline constexpr capability capability::collective{1ULL << 6};
inline constexpr capability capability::read{1ULL << 8};
inline constexpr capability capability::write{1ULL << 9};
inline constexpr capability capability::recv{1ULL << 10};
inline constexpr capability capability::send{1ULL << 11};
inline constexpr capability capability::remote_read{1ULL << 12};
inline constexpr capability capability::remote_write{1ULL << 13};
inline constexpr capability capability::multi_recv{1ULL << 16};
inline constexpr capability capability::remote_cq_data{1ULL << 17};
inline constexpr capability capability::trigger{1ULL << 20};
inline constexpr capability capability::fence{1ULL << 21};
inline constexpr capability capability::peer_transfer{1ULL << 36};
inline constexpr capability capability::av_user_id{1ULL << 41};
inline constexpr capability capability::peer{1ULL << 43};
inline constexpr capability capability::tagged_directed_recv{1ULL << 45};
inline constexpr capability capability::tagged_multi_recv{1ULL << 46};
inline constexpr capability capability::hmem{1ULL << 47};
inline constexpr capability capability::exact_directed_recv{1ULL << 48};
inline constexpr capability capability::rma_pmem{1ULL << 49};
inline constexpr capability capability::source_err{1ULL << 50};
inline constexpr capability capability::local_comm{1ULL << 51};
inline constexpr capability capability::remote_comm{1ULL << 52};
inline constexpr capability capability::shared_av{1ULL << 53};
inline constexpr capability capability::rma_event{1ULL << 56};
inline constexpr capability capability::source{1ULL << 57};
inline constexpr capability capability::named_rx_ctx{1ULL << 58};
inline constexpr capability capability::directed_recv{1ULL << 59};
/// FI_XPU (libfabric 2.7): device-side operations through XPU contexts (loom/xpu.hpp).
inline constexpr capability capability::xpu{1ULL << 44};

// ---------------------------------------------------------------- mr_access_flags
#define LOOM_DETAIL_mr_access_flags_MEMBERS \
    static const mr_access_flags send, recv, read, write, remote_read, remote_write, collective;
LOOM_DETAIL_FLAG_FAMILY(mr_access_flags)
inline constexpr mr_access_flags mr_access_flags::send{1ULL << 11};
inline constexpr mr_access_flags mr_access_flags::recv{1ULL << 10};
inline constexpr mr_access_flags mr_access_flags::read{1ULL << 8};
inline constexpr mr_access_flags mr_access_flags::write{1ULL << 9};
inline constexpr mr_access_flags mr_access_flags::remote_read{1ULL << 12};
inline constexpr mr_access_flags mr_access_flags::remote_write{1ULL << 13};
inline constexpr mr_access_flags mr_access_flags::collective{1ULL << 6};

// ---------------------------------------------------------------- op_flag
// Per-operation flags (fi_*msg flags, endpoint op_flags) and CQ completion flags.
#define LOOM_DETAIL_op_flag_MEMBERS                                                                                \
    static const op_flag msg, rma, tagged, atomic, read, write, recv, send, remote_read, remote_write, multi_recv, \
        remote_cq_data, more, peek, trigger, fence, completion, inject, inject_complete, transmit_complete,        \
        delivery_complete, commit_complete, match_complete, claim, discard, auth_key;
LOOM_DETAIL_FLAG_FAMILY(op_flag)
inline constexpr op_flag op_flag::msg{1ULL << 1};
inline constexpr op_flag op_flag::rma{1ULL << 2};
inline constexpr op_flag op_flag::tagged{1ULL << 3};
inline constexpr op_flag op_flag::atomic{1ULL << 4};
inline constexpr op_flag op_flag::read{1ULL << 8};
inline constexpr op_flag op_flag::write{1ULL << 9};
inline constexpr op_flag op_flag::recv{1ULL << 10};
inline constexpr op_flag op_flag::send{1ULL << 11};
inline constexpr op_flag op_flag::remote_read{1ULL << 12};
inline constexpr op_flag op_flag::remote_write{1ULL << 13};
inline constexpr op_flag op_flag::multi_recv{1ULL << 16};
inline constexpr op_flag op_flag::remote_cq_data{1ULL << 17};
inline constexpr op_flag op_flag::more{1ULL << 18};
inline constexpr op_flag op_flag::peek{1ULL << 19};
inline constexpr op_flag op_flag::trigger{1ULL << 20};
inline constexpr op_flag op_flag::fence{1ULL << 21};
inline constexpr op_flag op_flag::completion{1ULL << 24};
inline constexpr op_flag op_flag::inject{1ULL << 25};
inline constexpr op_flag op_flag::inject_complete{1ULL << 26};
inline constexpr op_flag op_flag::transmit_complete{1ULL << 27};
inline constexpr op_flag op_flag::delivery_complete{1ULL << 28};
inline constexpr op_flag op_flag::commit_complete{1ULL << 30};
inline constexpr op_flag op_flag::match_complete{1ULL << 31};
inline constexpr op_flag op_flag::claim{1ULL << 59};
inline constexpr op_flag op_flag::discard{1ULL << 58};
inline constexpr op_flag op_flag::auth_key{1ULL << 57};

// ---------------------------------------------------------------- cq_bind
#define LOOM_DETAIL_cq_bind_MEMBERS static const cq_bind transmit, recv, selective_completion;
LOOM_DETAIL_FLAG_FAMILY(cq_bind)
inline constexpr cq_bind cq_bind::transmit{1ULL << 11};
inline constexpr cq_bind cq_bind::recv{1ULL << 10};
inline constexpr cq_bind cq_bind::selective_completion{1ULL << 59};

// ---------------------------------------------------------------- counter_bind
#define LOOM_DETAIL_counter_bind_MEMBERS static const counter_bind send, recv, read, write, remote_read, remote_write;
LOOM_DETAIL_FLAG_FAMILY(counter_bind)
inline constexpr counter_bind counter_bind::send{1ULL << 11};
inline constexpr counter_bind counter_bind::recv{1ULL << 10};
inline constexpr counter_bind counter_bind::read{1ULL << 8};
inline constexpr counter_bind counter_bind::write{1ULL << 9};
inline constexpr counter_bind counter_bind::remote_read{1ULL << 12};
inline constexpr counter_bind counter_bind::remote_write{1ULL << 13};

// ---------------------------------------------------------------- mr_mode_flags
#define LOOM_DETAIL_mr_mode_flags_MEMBERS                                                                       \
    static const mr_mode_flags unspec, basic, scalable, local, raw, virt_addr, allocated, prov_key, mmu_notify, \
        rma_event, endpoint, hmem, collective, xpu_desc;
LOOM_DETAIL_FLAG_FAMILY(mr_mode_flags)
inline constexpr mr_mode_flags mr_mode_flags::unspec{0};
inline constexpr mr_mode_flags mr_mode_flags::basic{1ULL << 0};
inline constexpr mr_mode_flags mr_mode_flags::scalable{1ULL << 1};
inline constexpr mr_mode_flags mr_mode_flags::local{1ULL << 2};
inline constexpr mr_mode_flags mr_mode_flags::raw{1ULL << 3};
inline constexpr mr_mode_flags mr_mode_flags::virt_addr{1ULL << 4};
inline constexpr mr_mode_flags mr_mode_flags::allocated{1ULL << 5};
inline constexpr mr_mode_flags mr_mode_flags::prov_key{1ULL << 6};
inline constexpr mr_mode_flags mr_mode_flags::mmu_notify{1ULL << 7};
inline constexpr mr_mode_flags mr_mode_flags::rma_event{1ULL << 8};
inline constexpr mr_mode_flags mr_mode_flags::endpoint{1ULL << 9};
inline constexpr mr_mode_flags mr_mode_flags::hmem{1ULL << 10};
inline constexpr mr_mode_flags mr_mode_flags::collective{1ULL << 11};
/// FI_MR_XPU_DESC (libfabric 2.7): the program fetches device-side descriptors for XPU use.
inline constexpr mr_mode_flags mr_mode_flags::xpu_desc{1ULL << 12};

// ---------------------------------------------------------------- mode_flags (info->mode)
#define LOOM_DETAIL_mode_flags_MEMBERS \
    static const mode_flags context, context2, msg_prefix, async_iov, rx_cq_data, local_mr;
LOOM_DETAIL_FLAG_FAMILY(mode_flags)
inline constexpr mode_flags mode_flags::context{1ULL << 59};
inline constexpr mode_flags mode_flags::context2{1ULL << 52};
inline constexpr mode_flags mode_flags::msg_prefix{1ULL << 58};
inline constexpr mode_flags mode_flags::async_iov{1ULL << 57};
inline constexpr mode_flags mode_flags::rx_cq_data{1ULL << 56};
inline constexpr mode_flags mode_flags::local_mr{1ULL << 55};

#undef LOOM_DETAIL_FLAG_FAMILY

// ---------------------------------------------------------------- enumerations
/// Endpoint types (fi_ep_type). `unspecified` lets the provider choose.
enum class endpoint_types : int { unspecified = 0, msg = 1, dgram = 2, rdm = 3 };
/// Progress models (fi_progress); 2.x `manual_all` is FI_PROGRESS_CONTROL_UNIFIED.
enum class progress_mode : int { unspecified = 0, auto_progress = 1, manual = 2, control_unified = 3 };
/// Threading models (fi_threading).
enum class threading_mode : int { unspecified = 0, safe = 1, fid = 2, domain = 3, completion = 4, endpoint = 5 };
/// Address vector types (fi_av_type).
enum class av_type : int { unspecified = 0, map = 1, table = 2 };
/// Address formats (FI_SOCKADDR_*, FI_ADDR_*).
enum class address_format : std::uint32_t {
    unspecified = 0,
    sockaddr = 1,
    sockaddr_in = 2,
    sockaddr_in6 = 3,
    sockaddr_ib = 4,
    psmx = 5,
    gni = 6,
    bgq = 7,
    mlx = 8,
    str = 9,
    psmx2 = 10,
    ib_ud = 11,
    efa = 12,
    psmx3 = 13,
    opx = 14,
    cxi = 15,
    ucx = 16,
    sockaddr_ip = 17,
};

[[nodiscard]] auto to_string(endpoint_types v) -> std::string;
[[nodiscard]] auto to_string(progress_mode v) -> std::string;
[[nodiscard]] auto to_string(threading_mode v) -> std::string;
[[nodiscard]] auto to_string(av_type v) -> std::string;
[[nodiscard]] auto to_string(address_format v) -> std::string;
/// Names of the set bits joined by '|', e.g. "msg|tagged"; unknown bits as hex.
[[nodiscard]] auto to_string(capability v) -> std::string;
[[nodiscard]] auto to_string(mr_access_flags v) -> std::string;
[[nodiscard]] auto to_string(op_flag v) -> std::string;
[[nodiscard]] auto to_string(mr_mode_flags v) -> std::string;
[[nodiscard]] auto to_string(mode_flags v) -> std::string;

/// Range checks of enumerations that come from casts or parsing: invalid_argument
/// when the value names no enumerator.
[[nodiscard]] auto validate(endpoint_types v) noexcept -> void_result;
[[nodiscard]] auto validate(progress_mode v) noexcept -> void_result;
[[nodiscard]] auto validate(threading_mode v) noexcept -> void_result;
[[nodiscard]] auto validate(av_type v) noexcept -> void_result;
[[nodiscard]] auto validate(address_format v) noexcept -> void_result;

/// Parses the names printed by to_string ("rdm", "msg", ...).
[[nodiscard]] auto parse_endpoint_type(std::string_view name) noexcept -> result<endpoint_types>;

}  // namespace loom
