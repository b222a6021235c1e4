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
    capability capabilities{};
    endpoint_types ep_type{endpoint_types::unspecified};
    /// Provider name, e.g. "tcp", "tcp;ofi_rxm", "shm". Matched exactly (a core
    /// provider's name does not also select utility providers layered over it).
    std::string_view provider{};
    std::string_view fabric_name{};
    std::string_view domain_name{};
    /// Memory-registration modes the program handles; nullopt: local|virt_addr|allocated|prov_key.
    std::optional<mr_mode_flags> mr_mode{};
    /// Operating modes the program handles (the context storage loom embeds).
    mode_flags mode{mode_flags::context | mode_flags::context2};
    threading_mode threading{threading_mode::unspecified};
    progress_mode data_progress{progress_mode::unspecified};
    progress_mode control_progress{progress_mode::unspecified};
    address_format addr_format{address_format::unspecified};
    /// Endpoints will share a receive context (FI_SHARED_CONTEXT on rx_ctx_cnt).
    bool shared_receive_context{false};
    std::size_t inject_size{0};
    std::size_t tx_size{0};
    std::size_t rx_size{0};
    op_flag tx_op_flags{};
    op_flag rx_op_flags{};
    /// Node/service to resolve (fi_getinfo's node and service); empty: none.
    std::string_view node{};
    std::string_view service{};
    /// Resolve node/service as the source address (FI_SOURCE) instead of the destination.
    bool node_is_source{false};
    /// Requested API version; 0: the headers' version.
    std::uint32_t api_version{0};
    /// Providers look for their interfaces again instead of answering from what they found
    /// before (FI_RESCAN, libfabric 2.2; not_supported with an older libfabric).
    bool rescan{false};
};

struct fabric_attr_view {
    std::string_view name;
    std::string_view provider_name;
    std::uint32_t provider_version{};
    std::uint32_t api_version{};
};

struct domain_attr_view {
    std::string_view name;
    threading_mode threading{};
    progress_mode control_progress{};
    progress_mode data_progress{};
    mr_mode_flags mr_mode{};
    av_type av{};
    std::size_t mr_key_size{}, cq_data_size{}, cq_cnt{}, ep_cnt{}, tx_ctx_cnt{}, rx_ctx_cnt{};
    std::size_t max_ep_tx_ctx{}, max_ep_rx_ctx{}, max_ep_stx_ctx{}, max_ep_srx_ctx{};
    std::size_t mr_iov_limit{}, mr_cnt{}, max_err_data{};
    capability caps{};
    mode_flags mode{};
};

struct endpoint_attr_view {
    endpoint_types type{};
    std::uint32_t protocol{};
    std::uint32_t protocol_version{};
    std::size_t max_msg_size{};
    std::size_t msg_prefix_size{};
    std::size_t max_order_raw_size{}, max_order_war_size{}, max_order_waw_size{};
    std::uint64_t mem_tag_format{};
    std::size_t tx_ctx_cnt{};
    std::size_t rx_ctx_cnt{};
    std::size_t auth_key_size{};
};

struct tx_attr_view {
    capability caps{};
    mode_flags mode{};
    op_flag op_flags{};
    std::uint64_t msg_order{};
    std::size_t inject_size{};
    std::size_t size{};
    std::size_t iov_limit{};
    std::size_t rma_iov_limit{};
    std::uint32_t tclass{};
};

struct rx_attr_view {
    capability caps{};
    mode_flags mode{};
    op_flag op_flags{};
    std::uint64_t msg_order{};
    std::size_t size{};
    std::size_t iov_limit{};
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

    [[nodiscard]] auto native() const noexcept -> const ::fi_info* { return entry_; }
    [[nodiscard]] auto valid() const noexcept -> bool { return entry_ != nullptr; }

    [[nodiscard]] auto provider_name() const noexcept -> std::string_view;
    [[nodiscard]] auto fabric_name() const noexcept -> std::string_view;
    [[nodiscard]] auto domain_name() const noexcept -> std::string_view;
    [[nodiscard]] auto capabilities() const noexcept -> capability;
    [[nodiscard]] auto mode() const noexcept -> mode_flags;
    [[nodiscard]] auto ep_type() const noexcept -> endpoint_types;
    [[nodiscard]] auto addr_format() const noexcept -> address_format;
    /// The entry's source address, decoded (nullopt when it has none).
    [[nodiscard]] auto source_address() const -> std::optional<address>;

    [[nodiscard]] auto get_fabric_attr() const noexcept -> std::optional<fabric_attr_view>;
    [[nodiscard]] auto get_domain_attr() const noexcept -> std::optional<domain_attr_view>;
    [[nodiscard]] auto get_endpoint_attr() const noexcept -> std::optional<endpoint_attr_view>;
    [[nodiscard]] auto get_tx_attr() const noexcept -> std::optional<tx_attr_view>;
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
    class iterator {
    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = fabric_info;
        using difference_type = std::ptrdiff_t;
        using reference = fabric_info;
        using pointer = void;
        iterator() = default;
        iterator(const std::shared_ptr<::fi_info>* list, ::fi_info* p) : list_(list), p_(p) {}
        auto operator*() const -> fabric_info { return fabric_info{*list_, p_}; }
        auto operator++() -> iterator& {
            p_ = p_->next;
            return *this;
        }
        auto operator++(int) -> iterator {
            auto t = *this;
            ++*this;
            return t;
        }
        friend auto operator==(const iterator& a, const iterator& b) noexcept -> bool { return a.p_ == b.p_; }

    private:
        const std::shared_ptr<::fi_info>* list_{nullptr};
        ::fi_info* p_{nullptr};
    };

    provider_range() = default;
    explicit provider_range(std::shared_ptr<::fi_info> list) : list_(std::move(list)) {}
    [[nodiscard]] auto begin() const -> iterator { return {&list_, list_.get()}; }
    [[nodiscard]] auto end() const -> iterator { return {&list_, nullptr}; }
    [[nodiscard]] auto empty() const noexcept -> bool { return !list_; }
    [[nodiscard]] auto size() const noexcept -> std::size_t;
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
