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
    /// The integer type of the bits (libfabric's uint64_t flags).
    using underlying_type = std::uint64_t;
    // NOLINTBEGIN(bugprone-crtp-constructor-accessibility): the operators build plain values of it
    constexpr flag_set() noexcept = default;
    /// From raw bits of this family.
    constexpr explicit flag_set(underlying_type bits) noexcept : bits_(bits) {}
    // NOLINTEND(bugprone-crtp-constructor-accessibility)

    /// The raw bits.
    [[nodiscard]] constexpr auto get() const noexcept -> underlying_type { return bits_; }
    /// True when every flag of `other` is set (false for an empty `other`).
    [[nodiscard]] constexpr auto has(flag_set other) const noexcept -> bool {
        return other.bits_ != 0 && (bits_ & other.bits_) == other.bits_;
    }
    /// True when any flag of `other` is set.
    [[nodiscard]] constexpr auto any(flag_set other) const noexcept -> bool { return (bits_ & other.bits_) != 0; }
    /// True when no flag is set.
    [[nodiscard]] constexpr auto empty() const noexcept -> bool { return bits_ == 0; }
    /// This set with the flags of `other` cleared.
    [[nodiscard]] constexpr auto without(flag_set other) const noexcept -> flag_set {
        return flag_set{bits_ & ~other.bits_};
    }
    /// True when any flag is set.
    constexpr explicit operator bool() const noexcept { return bits_ != 0; }

    /// Union.
    friend constexpr auto operator|(flag_set a, flag_set b) noexcept -> flag_set { return flag_set{a.bits_ | b.bits_}; }
    /// Intersection.
    friend constexpr auto operator&(flag_set a, flag_set b) noexcept -> flag_set { return flag_set{a.bits_ & b.bits_}; }
    /// Symmetric difference.
    friend constexpr auto operator^(flag_set a, flag_set b) noexcept -> flag_set { return flag_set{a.bits_ ^ b.bits_}; }
    /// Complement (all 64 bits).
    friend constexpr auto operator~(flag_set a) noexcept -> flag_set { return flag_set{~a.bits_}; }
    /// Adds the flags of `b`.
    constexpr auto operator|=(flag_set b) noexcept -> flag_set& {
        bits_ |= b.bits_;
        return *this;
    }
    /// Keeps only the flags also in `b`.
    constexpr auto operator&=(flag_set b) noexcept -> flag_set& {
        bits_ &= b.bits_;
        return *this;
    }
    /// Toggles the flags of `b`.
    constexpr auto operator^=(flag_set b) noexcept -> flag_set& {
        bits_ ^= b.bits_;
        return *this;
    }
    /// Same bits.
    friend constexpr auto operator==(flag_set, flag_set) noexcept -> bool = default;

private:
    underlying_type bits_{};
};

// Each family is a distinct type whose named members are constants of that type.
#define LOOM_DETAIL_FLAG_FAMILY(name)                                    \
    struct name : flag_set<name> {                                       \
        using flag_set<name>::flag_set;                                  \
        /** A combination of the family's flags, back as the family. */  \
        constexpr name(flag_set<name> f) noexcept : flag_set<name>(f) {} \
        /** No flag set. */                                              \
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
/// Capabilities (fi_info::caps): what an endpoint or a domain can do.
LOOM_DETAIL_FLAG_FAMILY(capability)
/// FI_MSG: sends and receives.
inline constexpr capability capability::msg{1ULL << 1};
/// FI_RMA: one-sided reads and writes.
inline constexpr capability capability::rma{1ULL << 2};
/// FI_TAGGED: tagged messages.
inline constexpr capability capability::tagged{1ULL << 3};
/// FI_ATOMIC: remote atomics.
inline constexpr capability capability::atomic{1ULL << 4};
/// FI_MULTICAST: multicast transfers.
inline constexpr capability capability::multicast{1ULL << 5};
/// FI_COLLECTIVE: collective operations.
inline constexpr capability capability::collective{1ULL << 6};
/// FI_READ: initiates reads.
inline constexpr capability capability::read{1ULL << 8};
/// FI_WRITE: initiates writes.
inline constexpr capability capability::write{1ULL << 9};
/// FI_RECV: receives messages.
inline constexpr capability capability::recv{1ULL << 10};
/// FI_SEND: sends messages.
inline constexpr capability capability::send{1ULL << 11};
/// FI_REMOTE_READ: its memory is read by peers.
inline constexpr capability capability::remote_read{1ULL << 12};
/// FI_REMOTE_WRITE: its memory is written by peers.
inline constexpr capability capability::remote_write{1ULL << 13};
/// FI_MULTI_RECV: one receive buffer takes several messages.
inline constexpr capability capability::multi_recv{1ULL << 16};
/// FI_REMOTE_CQ_DATA: transfers carry remote CQ data.
inline constexpr capability capability::remote_cq_data{1ULL << 17};
/// FI_TRIGGER: triggered operations.
inline constexpr capability capability::trigger{1ULL << 20};
/// FI_FENCE: fenced operations.
inline constexpr capability capability::fence{1ULL << 21};
/// FI_PEER_TRANSFER: transfers on behalf of a peer provider.
inline constexpr capability capability::peer_transfer{1ULL << 36};
/// FI_AV_USER_ID: the application gives each inserted address its fi_addr.
inline constexpr capability capability::av_user_id{1ULL << 41};
/// FI_PEER: objects shared with a peer provider.
inline constexpr capability capability::peer{1ULL << 43};
/// FI_TAGGED_DIRECTED_RECV: directed receives for tagged messages only.
inline constexpr capability capability::tagged_directed_recv{1ULL << 45};
/// FI_TAGGED_MULTI_RECV: multi-receive buffers for tagged messages.
inline constexpr capability capability::tagged_multi_recv{1ULL << 46};
/// FI_HMEM: device (heterogeneous) memory.
inline constexpr capability capability::hmem{1ULL << 47};
/// FI_EXACT_DIRECTED_RECV: a directed receive matches only its exact source.
inline constexpr capability capability::exact_directed_recv{1ULL << 48};
/// FI_RMA_PMEM: RMA to persistent memory.
inline constexpr capability capability::rma_pmem{1ULL << 49};
/// FI_SOURCE_ERR: failed completions report the source address.
inline constexpr capability capability::source_err{1ULL << 50};
/// FI_LOCAL_COMM: peers on this node.
inline constexpr capability capability::local_comm{1ULL << 51};
/// FI_REMOTE_COMM: peers on other nodes.
inline constexpr capability capability::remote_comm{1ULL << 52};
/// FI_SHARED_AV: address vectors shared between processes.
inline constexpr capability capability::shared_av{1ULL << 53};
/// FI_RMA_EVENT: events for peers' RMA into local memory.
inline constexpr capability capability::rma_event{1ULL << 56};
/// FI_SOURCE: completions report the source address.
inline constexpr capability capability::source{1ULL << 57};
/// FI_NAMED_RX_CTX: initiators address receive contexts by index.
inline constexpr capability capability::named_rx_ctx{1ULL << 58};
/// FI_DIRECTED_RECV: receives from one named source.
inline constexpr capability capability::directed_recv{1ULL << 59};
/// FI_XPU (libfabric 2.7): device-side operations through XPU contexts (loom/xpu.hpp).
inline constexpr capability capability::xpu{1ULL << 44};

// ---------------------------------------------------------------- mr_access_flags
#define LOOM_DETAIL_mr_access_flags_MEMBERS \
    static const mr_access_flags send, recv, read, write, remote_read, remote_write, collective;
/// Access rights of a memory registration (fi_mr_reg's access).
LOOM_DETAIL_FLAG_FAMILY(mr_access_flags)
/// FI_SEND: source of sends.
inline constexpr mr_access_flags mr_access_flags::send{1ULL << 11};
/// FI_RECV: destination of receives.
inline constexpr mr_access_flags mr_access_flags::recv{1ULL << 10};
/// FI_READ: destination of local reads.
inline constexpr mr_access_flags mr_access_flags::read{1ULL << 8};
/// FI_WRITE: source of local writes.
inline constexpr mr_access_flags mr_access_flags::write{1ULL << 9};
/// FI_REMOTE_READ: peers may read it.
inline constexpr mr_access_flags mr_access_flags::remote_read{1ULL << 12};
/// FI_REMOTE_WRITE: peers may write it.
inline constexpr mr_access_flags mr_access_flags::remote_write{1ULL << 13};
/// FI_COLLECTIVE: buffer of collective operations.
inline constexpr mr_access_flags mr_access_flags::collective{1ULL << 6};

// ---------------------------------------------------------------- op_flag
// Per-operation flags (fi_*msg flags, endpoint op_flags) and CQ completion flags.
#define LOOM_DETAIL_op_flag_MEMBERS                                                                                \
    static const op_flag msg, rma, tagged, atomic, read, write, recv, send, remote_read, remote_write, multi_recv, \
        remote_cq_data, more, peek, trigger, fence, completion, inject, inject_complete, transmit_complete,        \
        delivery_complete, commit_complete, match_complete, claim, discard, auth_key;
/// Per-operation flags (fi_*msg flags, endpoint op_flags) and CQ completion flags.
LOOM_DETAIL_FLAG_FAMILY(op_flag)
/// FI_MSG: a message operation.
inline constexpr op_flag op_flag::msg{1ULL << 1};
/// FI_RMA: an RMA operation.
inline constexpr op_flag op_flag::rma{1ULL << 2};
/// FI_TAGGED: a tagged message.
inline constexpr op_flag op_flag::tagged{1ULL << 3};
/// FI_ATOMIC: an atomic operation.
inline constexpr op_flag op_flag::atomic{1ULL << 4};
/// FI_READ: a read.
inline constexpr op_flag op_flag::read{1ULL << 8};
/// FI_WRITE: a write.
inline constexpr op_flag op_flag::write{1ULL << 9};
/// FI_RECV: a receive.
inline constexpr op_flag op_flag::recv{1ULL << 10};
/// FI_SEND: a send.
inline constexpr op_flag op_flag::send{1ULL << 11};
/// FI_REMOTE_READ: a peer's read of local memory.
inline constexpr op_flag op_flag::remote_read{1ULL << 12};
/// FI_REMOTE_WRITE: a peer's write to local memory.
inline constexpr op_flag op_flag::remote_write{1ULL << 13};
/// FI_MULTI_RECV: a multi-receive buffer (on a completion: released)
inline constexpr op_flag op_flag::multi_recv{1ULL << 16};
/// FI_REMOTE_CQ_DATA: carries remote CQ data.
inline constexpr op_flag op_flag::remote_cq_data{1ULL << 17};
/// FI_MORE: more operations follow (a batching hint)
inline constexpr op_flag op_flag::more{1ULL << 18};
/// FI_PEEK: probe for a matching message without receiving it.
inline constexpr op_flag op_flag::peek{1ULL << 19};
/// FI_TRIGGER: a triggered operation.
inline constexpr op_flag op_flag::trigger{1ULL << 20};
/// FI_FENCE: starts after earlier operations complete.
inline constexpr op_flag op_flag::fence{1ULL << 21};
/// FI_COMPLETION: report a completion (selective completion)
inline constexpr op_flag op_flag::completion{1ULL << 24};
/// FI_INJECT: the buffer is reusable on return.
inline constexpr op_flag op_flag::inject{1ULL << 25};
/// FI_INJECT_COMPLETE: complete once the buffer is reusable.
inline constexpr op_flag op_flag::inject_complete{1ULL << 26};
/// FI_TRANSMIT_COMPLETE: complete once the data has left the initiator.
inline constexpr op_flag op_flag::transmit_complete{1ULL << 27};
/// FI_DELIVERY_COMPLETE: complete once the data is visible at the target.
inline constexpr op_flag op_flag::delivery_complete{1ULL << 28};
/// FI_COMMIT_COMPLETE: complete once the data is persistent at the target.
inline constexpr op_flag op_flag::commit_complete{1ULL << 30};
/// FI_MATCH_COMPLETE: complete once the target has matched the message.
inline constexpr op_flag op_flag::match_complete{1ULL << 31};
/// FI_CLAIM: receive a message found by a peek.
inline constexpr op_flag op_flag::claim{1ULL << 59};
/// FI_DISCARD: drop a message found by a peek.
inline constexpr op_flag op_flag::discard{1ULL << 58};
/// FI_AUTH_KEY: the address is an authorization key.
inline constexpr op_flag op_flag::auth_key{1ULL << 57};

// ---------------------------------------------------------------- cq_bind
#define LOOM_DETAIL_cq_bind_MEMBERS static const cq_bind transmit, recv, selective_completion;
/// Which completions an endpoint reports to a bound completion queue (fi_ep_bind flags).
LOOM_DETAIL_FLAG_FAMILY(cq_bind)
/// FI_TRANSMIT: transmit completions.
inline constexpr cq_bind cq_bind::transmit{1ULL << 11};
/// FI_RECV: receive completions.
inline constexpr cq_bind cq_bind::recv{1ULL << 10};
/// FI_SELECTIVE_COMPLETION: successes only of operations with op_flag::completion.
inline constexpr cq_bind cq_bind::selective_completion{1ULL << 59};

// ---------------------------------------------------------------- counter_bind
#define LOOM_DETAIL_counter_bind_MEMBERS static const counter_bind send, recv, read, write, remote_read, remote_write;
/// Which events an endpoint counts in a bound counter (fi_ep_bind flags).
LOOM_DETAIL_FLAG_FAMILY(counter_bind)
/// FI_SEND: completed sends.
inline constexpr counter_bind counter_bind::send{1ULL << 11};
/// FI_RECV: completed receives.
inline constexpr counter_bind counter_bind::recv{1ULL << 10};
/// FI_READ: completed reads.
inline constexpr counter_bind counter_bind::read{1ULL << 8};
/// FI_WRITE: completed writes.
inline constexpr counter_bind counter_bind::write{1ULL << 9};
/// FI_REMOTE_READ: peers' reads of local memory.
inline constexpr counter_bind counter_bind::remote_read{1ULL << 12};
/// FI_REMOTE_WRITE: peers' writes to local memory.
inline constexpr counter_bind counter_bind::remote_write{1ULL << 13};

// ---------------------------------------------------------------- mr_mode_flags
#define LOOM_DETAIL_mr_mode_flags_MEMBERS                                                                       \
    static const mr_mode_flags unspec, basic, scalable, local, raw, virt_addr, allocated, prov_key, mmu_notify, \
        rma_event, endpoint, hmem, collective, xpu_desc;
/// Memory-registration modes (fi_domain_attr::mr_mode): what the provider asks of the application.
LOOM_DETAIL_FLAG_FAMILY(mr_mode_flags)
/// FI_MR_UNSPEC: none stated.
inline constexpr mr_mode_flags mr_mode_flags::unspec{0};
/// FI_MR_BASIC: legacy; virt_addr, allocated and prov_key.
inline constexpr mr_mode_flags mr_mode_flags::basic{1ULL << 0};
/// FI_MR_SCALABLE: legacy; offsets and application keys.
inline constexpr mr_mode_flags mr_mode_flags::scalable{1ULL << 1};
/// FI_MR_LOCAL: local buffers must be registered.
inline constexpr mr_mode_flags mr_mode_flags::local{1ULL << 2};
/// FI_MR_RAW: keys are raw bytes (fi_mr_raw_attr)
inline constexpr mr_mode_flags mr_mode_flags::raw{1ULL << 3};
/// FI_MR_VIRT_ADDR: remote addresses are virtual, not offsets.
inline constexpr mr_mode_flags mr_mode_flags::virt_addr{1ULL << 4};
/// FI_MR_ALLOCATED: only allocated memory can be registered.
inline constexpr mr_mode_flags mr_mode_flags::allocated{1ULL << 5};
/// FI_MR_PROV_KEY: the provider chooses the keys.
inline constexpr mr_mode_flags mr_mode_flags::prov_key{1ULL << 6};
/// FI_MR_MMU_NOTIFY: registrations must be refreshed when pages change.
inline constexpr mr_mode_flags mr_mode_flags::mmu_notify{1ULL << 7};
/// FI_MR_RMA_EVENT: registrations are bound and enabled for RMA events.
inline constexpr mr_mode_flags mr_mode_flags::rma_event{1ULL << 8};
/// FI_MR_ENDPOINT: registrations are bound to an endpoint.
inline constexpr mr_mode_flags mr_mode_flags::endpoint{1ULL << 9};
/// FI_MR_HMEM: device memory must be registered.
inline constexpr mr_mode_flags mr_mode_flags::hmem{1ULL << 10};
/// FI_MR_COLLECTIVE: collective buffers must be registered.
inline constexpr mr_mode_flags mr_mode_flags::collective{1ULL << 11};
/// FI_MR_XPU_DESC (libfabric 2.7): the program fetches device-side descriptors for XPU use.
inline constexpr mr_mode_flags mr_mode_flags::xpu_desc{1ULL << 12};

// ---------------------------------------------------------------- mode_flags (info->mode)
#define LOOM_DETAIL_mode_flags_MEMBERS \
    static const mode_flags context, context2, msg_prefix, async_iov, rx_cq_data, local_mr;
/// Modes (fi_info::mode): requirements the provider puts on the application.
LOOM_DETAIL_FLAG_FAMILY(mode_flags)
/// FI_CONTEXT: operation contexts are fi_context the provider may use.
inline constexpr mode_flags mode_flags::context{1ULL << 59};
/// FI_CONTEXT2: the same with fi_context2.
inline constexpr mode_flags mode_flags::context2{1ULL << 52};
/// FI_MSG_PREFIX: buffers leave room for a provider prefix.
inline constexpr mode_flags mode_flags::msg_prefix{1ULL << 58};
/// FI_ASYNC_IOV: iovec arrays stay valid until completion.
inline constexpr mode_flags mode_flags::async_iov{1ULL << 57};
/// FI_RX_CQ_DATA: remote CQ data consumes a receive buffer.
inline constexpr mode_flags mode_flags::rx_cq_data{1ULL << 56};
/// FI_LOCAL_MR: legacy; local buffers must be registered.
inline constexpr mode_flags mode_flags::local_mr{1ULL << 55};

#undef LOOM_DETAIL_FLAG_FAMILY

// ---------------------------------------------------------------- enumerations
/// Endpoint types (fi_ep_type). `unspecified` lets the provider choose.
enum class endpoint_types : int {
    unspecified = 0,  ///< FI_EP_UNSPEC: no type given; the provider or other attributes select it
    msg = 1,          ///< FI_EP_MSG: reliable, connection-oriented, message boundaries kept
    dgram = 2,        ///< FI_EP_DGRAM: connectionless, unreliable datagrams; size may be limited to the MTU
    rdm = 3           ///< FI_EP_RDM: reliable datagram messages: reliable and connectionless
};
/// Progress models (fi_progress); 2.x `manual_all` is FI_PROGRESS_CONTROL_UNIFIED.
enum class progress_mode : int {
    unspecified = 0,     ///< FI_PROGRESS_UNSPEC: no progress model given (input hints)
    auto_progress = 1,   ///< FI_PROGRESS_AUTO: the provider progresses operations without application calls
    manual = 2,          ///< FI_PROGRESS_MANUAL: operations progress only while the application reads or waits
    control_unified = 3  ///< FI_PROGRESS_CONTROL_UNIFIED: manual; the application serializes control and data calls
};
/// Threading models (fi_threading).
enum class threading_mode : int {
    unspecified = 0,  ///< FI_THREAD_UNSPEC: no model given; the provider returns its most parallel one
    safe = 1,         ///< FI_THREAD_SAFE: any thread may use any object without restriction
    fid = 2,          ///< FI_THREAD_FID (deprecated): the application serializes access to each object
    domain = 3,       ///< FI_THREAD_DOMAIN: the application serializes access to all objects of a domain
    completion = 4,   ///< FI_THREAD_COMPLETION: the application serializes access to objects sharing a CQ or counter
    endpoint = 5      ///< FI_THREAD_ENDPOINT (deprecated): like fid, also serializing all access to one endpoint
};
/// Whether the model obliges the application to serialize every call on a completion queue and
/// the endpoints bound to it (domain, completion): a lock around them would guard nothing.
[[nodiscard]] constexpr auto serializes_queue_access(threading_mode m) noexcept -> bool {
    return m == threading_mode::domain || m == threading_mode::completion;
}
/// Address vector types (fi_av_type).
enum class av_type : int {
    unspecified = 0,  ///< FI_AV_UNSPEC: the provider chooses its preferred type
    map = 1,          ///< FI_AV_MAP (deprecated): fi_addr_t values are opaque provider encodings
    table = 2         ///< FI_AV_TABLE: fi_addr_t values are indices in insertion order, starting at 0
};
/// Address formats (FI_SOCKADDR_*, FI_ADDR_*).
enum class address_format : std::uint32_t {
    unspecified = 0,   ///< FI_FORMAT_UNSPEC: a provider-specific format, to be treated as opaque
    sockaddr = 1,      ///< FI_SOCKADDR: struct sockaddr; the family is read from sa_family
    sockaddr_in = 2,   ///< FI_SOCKADDR_IN: struct sockaddr_in (IPv4)
    sockaddr_in6 = 3,  ///< FI_SOCKADDR_IN6: struct sockaddr_in6 (IPv6)
    sockaddr_ib = 4,   ///< FI_SOCKADDR_IB: struct sockaddr_ib (InfiniBand)
    psmx = 5,          ///< FI_ADDR_PSMX: address format of the deprecated psm provider
    gni = 6,           ///< FI_ADDR_GNI: address format of the gni (Cray) provider
    bgq = 7,           ///< FI_ADDR_BGQ: address format of the bgq (IBM Blue Gene/Q) provider
    mlx = 8,           ///< FI_ADDR_MLX: address format of the mlx (Mellanox) provider
    str = 9,           ///< FI_ADDR_STR: a formatted, null-terminated string (URI-like)
    psmx2 = 10,        ///< FI_ADDR_PSMX2: address format of the psm2 provider (Intel PSM2)
    ib_ud = 11,        ///< FI_ADDR_IB_UD: InfiniBand unreliable datagram address
    efa = 12,          ///< FI_ADDR_EFA: address format of the efa provider (Amazon Elastic Fabric Adapter)
    psmx3 = 13,        ///< FI_ADDR_PSMX3: address format of the psm3 provider (Intel PSM3)
    opx = 14,          ///< FI_ADDR_OPX: address format of the opx provider (Omni-Path Express)
    cxi = 15,          ///< FI_ADDR_CXI: address format of the cxi provider (HPE Slingshot)
    ucx = 16,          ///< FI_ADDR_UCX: address format of the ucx provider
    sockaddr_ip = 17,  ///< FI_SOCKADDR_IP (libfabric 2.3): an IPv4 or IPv6 address (sockaddr_in or sockaddr_in6)
};

/// The enumerator's name ("rdm", ...); "invalid(N)" for a value that names none.
[[nodiscard]] auto to_string(endpoint_types v) -> std::string;
/// The enumerator's name ("auto", "manual", ...); "invalid(N)" for a value that names none.
[[nodiscard]] auto to_string(progress_mode v) -> std::string;
/// The enumerator's name ("domain", ...); "invalid(N)" for a value that names none.
[[nodiscard]] auto to_string(threading_mode v) -> std::string;
/// The enumerator's name ("map", "table", ...); "invalid(N)" for a value that names none.
[[nodiscard]] auto to_string(av_type v) -> std::string;
/// The enumerator's name ("sockaddr_in", "str", ...); "invalid(N)" for a value that names none.
[[nodiscard]] auto to_string(address_format v) -> std::string;
/// Names of the set bits joined by '|', e.g. "msg|tagged"; unknown bits as hex.
[[nodiscard]] auto to_string(capability v) -> std::string;
/// Names of the set bits joined by '|'; unknown bits as hex; "none" when empty.
[[nodiscard]] auto to_string(mr_access_flags v) -> std::string;
/// Names of the set bits joined by '|'; unknown bits as hex; "none" when empty.
[[nodiscard]] auto to_string(op_flag v) -> std::string;
/// Names of the set bits joined by '|'; unknown bits as hex; "none" when empty.
[[nodiscard]] auto to_string(mr_mode_flags v) -> std::string;
/// Names of the set bits joined by '|'; unknown bits as hex; "none" when empty.
[[nodiscard]] auto to_string(mode_flags v) -> std::string;

/// Range checks of enumerations that come from casts or parsing: invalid_argument
/// when the value names no enumerator.
[[nodiscard]] auto validate(endpoint_types v) noexcept -> void_result;
/// Range check: invalid_argument when the value names no enumerator.
[[nodiscard]] auto validate(progress_mode v) noexcept -> void_result;
/// Range check: invalid_argument when the value names no enumerator.
[[nodiscard]] auto validate(threading_mode v) noexcept -> void_result;
/// Range check: invalid_argument when the value names no enumerator.
[[nodiscard]] auto validate(av_type v) noexcept -> void_result;
/// Range check: invalid_argument when the value names no enumerator.
[[nodiscard]] auto validate(address_format v) noexcept -> void_result;

/// Parses the names printed by to_string ("rdm", "msg", ...).
[[nodiscard]] auto parse_endpoint_type(std::string_view name) noexcept -> result<endpoint_types>;

}  // namespace loom
