// loom/fabric_info.hpp — provider discovery: hints, owning fabric_info, provider_range.
#pragma once

#include <loom/address.hpp>
#include <loom/error.hpp>
#include <loom/flags.hpp>

#include <rdma/fabric.h>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <memory_resource>
#include <optional>
#include <string>
#include <string_view>

namespace loom {

/// What a program asks of a provider. Unset fields leave the choice to libfabric.
struct fabric_hints {
    capability capabilities{};                            ///< capabilities the program needs
    endpoint_types ep_type{endpoint_types::unspecified};  ///< endpoint type wanted
    /// Provider name, e.g. "tcp", "tcp;ofi_rxm", "shm". Matched exactly (a core
    /// provider's name does not also select utility providers layered over it).
    std::string_view provider{};
    std::string_view fabric_name{};  ///< fabric to use, by name; empty: any
    std::string_view domain_name{};  ///< domain to use, by name; empty: any
    /// Memory-registration modes the program handles; nullopt: local|virt_addr|allocated|prov_key.
    std::optional<mr_mode_flags> mr_mode{};
    /// Operating modes the program handles (the context storage loom embeds).
    mode_flags mode{mode_flags::context | mode_flags::context2};
    threading_mode threading{threading_mode::unspecified};       ///< threading model wanted
    progress_mode data_progress{progress_mode::unspecified};     ///< data progress model wanted
    progress_mode control_progress{progress_mode::unspecified};  ///< control progress model wanted
    address_format addr_format{address_format::unspecified};     ///< address format wanted
    /// Endpoints will share a receive context (FI_SHARED_CONTEXT on rx_ctx_cnt).
    bool shared_receive_context{false};
    std::size_t inject_size{0};  ///< inject size needed (tx_attr->inject_size); 0: any
    std::size_t tx_size{0};      ///< transmit queue depth wanted; 0: the provider's default
    std::size_t rx_size{0};      ///< receive queue depth wanted; 0: the provider's default
    op_flag tx_op_flags{};       ///< default flags of transmit operations
    op_flag rx_op_flags{};       ///< default flags of receive operations
    /// Node/service to resolve (fi_getinfo's node and service); empty: none.
    std::string_view node{};
    std::string_view service{};  ///< service (port) at `node`; empty: none
    /// Resolve node/service as the source address (FI_SOURCE) instead of the destination.
    bool node_is_source{false};
    /// Requested API version; 0: the headers' version.
    std::uint32_t api_version{0};
    /// Providers look for their interfaces again instead of answering from what they found
    /// before (FI_RESCAN, libfabric 2.2; not_supported with an older libfabric).
    bool rescan{false};
};

/// The fabric attributes of a discovery result (fi_fabric_attr).
struct fabric_attr_view {
    std::string_view name;             ///< fabric name
    std::string_view provider_name;    ///< provider name, e.g. "tcp;ofi_rxm"
    std::uint32_t provider_version{};  ///< provider version (FI_VERSION encoding)
    std::uint32_t api_version{};       ///< API version the entry was returned for
};

/// The domain attributes of a discovery result (fi_domain_attr).
struct domain_attr_view {
    std::string_view name;             ///< domain name
    threading_mode threading{};        ///< threading model
    progress_mode control_progress{};  ///< control progress model
    progress_mode data_progress{};     ///< data progress model
    mr_mode_flags mr_mode{};           ///< registration modes the provider requires
    av_type av{};                      ///< address vector type
    /// Sizes and counts as fi_domain_attr names them: bytes of a registration key and of remote CQ data;
    /// completion queues, endpoints, transmit and receive contexts the domain supports.
    /// @{
    std::size_t mr_key_size{}, cq_data_size{}, cq_cnt{}, ep_cnt{}, tx_ctx_cnt{}, rx_ctx_cnt{};
    /// @}
    /// Contexts an endpoint may have: transmit, receive, shared transmit, shared receive.
    /// @{
    std::size_t max_ep_tx_ctx{}, max_ep_rx_ctx{}, max_ep_stx_ctx{}, max_ep_srx_ctx{};
    /// @}
    /// Registrations: iovec entries per registration, registrations the domain supports, bytes of
    /// provider error data.
    /// @{
    std::size_t mr_iov_limit{}, mr_cnt{}, max_err_data{};
    /// @}
    capability caps{};  ///< capabilities of the domain
    mode_flags mode{};  ///< modes the domain requires
};

/// The endpoint attributes of a discovery result (fi_ep_attr).
struct endpoint_attr_view {
    endpoint_types type{};             ///< endpoint type
    std::uint32_t protocol{};          ///< wire protocol (FI_PROTO_*)
    std::uint32_t protocol_version{};  ///< version of that protocol
    std::size_t max_msg_size{};        ///< largest message
    std::size_t msg_prefix_size{};     ///< bytes reserved before each message buffer (mode_flags::msg_prefix)
    /// Largest transfers for which read-after-write, write-after-read and write-after-write order holds.
    /// @{
    std::size_t max_order_raw_size{}, max_order_war_size{}, max_order_waw_size{};
    /// @}
    std::uint64_t mem_tag_format{};  ///< which tag bits are significant
    std::size_t tx_ctx_cnt{};        ///< transmit contexts
    std::size_t rx_ctx_cnt{};        ///< receive contexts
    std::size_t auth_key_size{};     ///< bytes of an authorization key
};

/// The transmit attributes of a discovery result (fi_tx_attr).
struct tx_attr_view {
    capability caps{};            ///< transmit capabilities
    mode_flags mode{};            ///< modes the transmit side requires
    op_flag op_flags{};           ///< default operation flags
    std::uint64_t msg_order{};    ///< ordering of transmitted messages (FI_ORDER_*)
    std::size_t inject_size{};    ///< largest inject
    std::size_t size{};           ///< transmit queue depth
    std::size_t iov_limit{};      ///< iovec entries per operation
    std::size_t rma_iov_limit{};  ///< remote iovec entries per RMA operation
    std::uint32_t tclass{};       ///< traffic class
};

/// The receive attributes of a discovery result (fi_rx_attr).
struct rx_attr_view {
    capability caps{};          ///< receive capabilities
    mode_flags mode{};          ///< modes the receive side requires
    op_flag op_flags{};         ///< default operation flags
    std::uint64_t msg_order{};  ///< ordering of received messages (FI_ORDER_*)
    std::size_t size{};         ///< receive queue depth
    std::size_t iov_limit{};    ///< iovec entries per operation
};

/// One discovery result. Owns (shares) the native fi_info list it came from.
class fabric_info {
public:
    fabric_info() = default;

    /// Owns a copy of one native entry (its `next` chain excluded). Fabric, domain and
    /// context handles it references stay borrowed. errc::other when fi_dupinfo fails.
    [[nodiscard]] static auto copy_native(const ::fi_info* native, std::pmr::memory_resource* mr = nullptr)
        -> result<fabric_info>;

    /// Takes ownership of an entry libfabric allocated (a connection request's info): freed
    /// with fi_freeinfo when the last copy goes. Null gives an invalid fabric_info.
    [[nodiscard]] static auto adopt_native(::fi_info* owned) -> fabric_info;

    /// The native entry; null for an invalid fabric_info.
    [[nodiscard]] auto native() const noexcept -> const ::fi_info* { return entry_; }
    /// True when it holds an entry.
    [[nodiscard]] auto valid() const noexcept -> bool { return entry_ != nullptr; }

    /// The provider's name, e.g. "tcp;ofi_rxm"; empty when unknown.
    [[nodiscard]] auto provider_name() const noexcept -> std::string_view;
    /// The fabric's name; empty when unknown.
    [[nodiscard]] auto fabric_name() const noexcept -> std::string_view;
    /// The domain's name; empty when unknown.
    [[nodiscard]] auto domain_name() const noexcept -> std::string_view;
    /// The entry's capabilities.
    [[nodiscard]] auto capabilities() const noexcept -> capability;
    /// The modes the entry requires of the program.
    [[nodiscard]] auto mode() const noexcept -> mode_flags;
    /// The endpoint type.
    [[nodiscard]] auto ep_type() const noexcept -> endpoint_types;
    /// The native address format.
    [[nodiscard]] auto addr_format() const noexcept -> address_format;
    /// The entry's source address, decoded (nullopt when it has none).
    [[nodiscard]] auto source_address() const -> std::optional<address>;

    /// The fabric attributes; nullopt when the entry has none.
    [[nodiscard]] auto get_fabric_attr() const noexcept -> std::optional<fabric_attr_view>;
    /// The domain attributes; nullopt when the entry has none.
    [[nodiscard]] auto get_domain_attr() const noexcept -> std::optional<domain_attr_view>;
    /// The endpoint attributes; nullopt when the entry has none.
    [[nodiscard]] auto get_endpoint_attr() const noexcept -> std::optional<endpoint_attr_view>;
    /// The transmit attributes; nullopt when the entry has none.
    [[nodiscard]] auto get_tx_attr() const noexcept -> std::optional<tx_attr_view>;
    /// The receive attributes; nullopt when the entry has none.
    [[nodiscard]] auto get_rx_attr() const noexcept -> std::optional<rx_attr_view>;

    /// libfabric's full text dump of this entry (fi_tostr).
    [[nodiscard]] auto to_string() const -> std::string;

private:
    friend class provider_range;
    friend auto query_all(const fabric_hints&, std::pmr::memory_resource*) -> result<class provider_range>;
    fabric_info(std::shared_ptr<::fi_info> list, ::fi_info* entry) noexcept : list_(std::move(list)), entry_(entry) {}

    std::shared_ptr<::fi_info> list_;
    ::fi_info* entry_{nullptr};
};

/// All matches of one query, in libfabric's preference order.
class provider_range {
public:
    /// Walks the entries, yielding each as a fabric_info sharing the list.
    class iterator {
    public:
        /// Forward iteration.
        using iterator_category = std::forward_iterator_tag;
        /// Each entry as a fabric_info.
        using value_type = fabric_info;
        /// Distance between iterators.
        using difference_type = std::ptrdiff_t;
        /// Dereferencing yields a value.
        using reference = fabric_info;
        /// No pointer type.
        using pointer = void;
        iterator() = default;
        /// At entry `p` of the list `list`.
        iterator(const std::shared_ptr<::fi_info>* list, ::fi_info* p) : list_(list), p_(p) {}
        /// The entry, sharing the list.
        auto operator*() const -> fabric_info { return fabric_info{*list_, p_}; }
        /// To the next entry.
        auto operator++() -> iterator& {
            p_ = p_->next;
            return *this;
        }
        /// To the next entry; returns the previous position.
        auto operator++(int) -> iterator {
            auto t = *this;
            ++*this;
            return t;
        }
        /// Same entry.
        friend auto operator==(const iterator& a, const iterator& b) noexcept -> bool { return a.p_ == b.p_; }

    private:
        const std::shared_ptr<::fi_info>* list_{nullptr};
        ::fi_info* p_{nullptr};
    };

    provider_range() = default;
    /// Takes ownership of a native list (freed with fi_freeinfo).
    explicit provider_range(std::shared_ptr<::fi_info> list) : list_(std::move(list)) {}
    /// The first entry.
    [[nodiscard]] auto begin() const -> iterator { return {&list_, list_.get()}; }
    /// Past the last entry.
    [[nodiscard]] auto end() const -> iterator { return {&list_, nullptr}; }
    /// True when there is no list.
    [[nodiscard]] auto empty() const noexcept -> bool { return !list_; }
    /// Number of entries.
    [[nodiscard]] auto size() const noexcept -> std::size_t;
    /// The first (preferred) entry; nullopt when empty.
    [[nodiscard]] auto first() const -> std::optional<fabric_info>;

private:
    std::shared_ptr<::fi_info> list_;
};

/// Every provider entry matching the hints; errc::no_data when none matches.
[[nodiscard]] auto query_all(const fabric_hints& hints, std::pmr::memory_resource* mr = nullptr)
    -> result<provider_range>;

/// The first (preferred) match; errc::no_data when none matches.
[[nodiscard]] auto query_fabric(const fabric_hints& hints, std::pmr::memory_resource* mr = nullptr)
    -> result<fabric_info>;

/// The API version loom requests by default (the libfabric headers it was built with).
[[nodiscard]] constexpr auto default_api_version() noexcept -> std::uint32_t {
    return FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
}
/// The version of the libfabric library loaded at run time.
[[nodiscard]] auto runtime_version() noexcept -> std::uint32_t;

}  // namespace loom
