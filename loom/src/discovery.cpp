#include "loom/fabric_info.hpp"
#include "newer_abi.hpp"

#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include <cstring>
#include <string>

namespace loom {
namespace {

auto dup_or_null(std::string_view s) -> char* {
    if (s.empty()) return nullptr;
    auto* p = static_cast<char*>(std::malloc(s.size() + 1));
    if (p == nullptr) return nullptr;
    std::memcpy(p, s.data(), s.size());
    p[s.size()] = '\0';
    return p;
}

auto sv(const char* s) noexcept -> std::string_view { return s ? std::string_view{s} : std::string_view{}; }

auto make_shared_list(::fi_info* list, std::pmr::memory_resource* mr) -> std::shared_ptr<::fi_info> {
    auto* res = mr ? mr : std::pmr::get_default_resource();
    // On allocation failure shared_ptr frees the list through the deleter, then rethrows.
    return std::shared_ptr<::fi_info>(
        list,
        [](::fi_info* p) {
            if (p) ::fi_freeinfo(p);
        },
        std::pmr::polymorphic_allocator<std::byte>(res));
}

auto validate_hints(const fabric_hints& h) -> void_result {
    if (auto r = validate(h.ep_type); !r) return r;
    if (auto r = validate(h.threading); !r) return r;
    if (auto r = validate(h.data_progress); !r) return r;
    if (auto r = validate(h.control_progress); !r) return r;
    if (auto r = validate(h.addr_format); !r) return r;
    if (h.provider.find('\0') != std::string_view::npos) return make_unexpected(errc::invalid_argument);
    if (h.capabilities.any(capability::xpu) && !detail::runtime_at_least(2, 7))
        return make_unexpected(errc::not_supported);
    if (auto r = detail::newer_flag(h.rescan, detail::native_rescan); !r) return std::unexpected(r.error());
    return {};
}

/// Keeps only entries whose provider name equals `name` exactly.
auto filter_provider(::fi_info* list, std::string_view name) -> ::fi_info* {
    ::fi_info* head = nullptr;
    ::fi_info** tail = &head;
    while (list) {
        auto* next = list->next;
        list->next = nullptr;
        if (list->fabric_attr && sv(list->fabric_attr->prov_name) == name) {
            *tail = list;
            tail = &list->next;
        } else {
            ::fi_freeinfo(list);
        }
        list = next;
    }
    return head;
}

}  // namespace

auto runtime_version() noexcept -> std::uint32_t { return ::fi_version(); }

auto query_all(const fabric_hints& h, std::pmr::memory_resource* mr) -> result<provider_range> {
    if (auto ok = validate_hints(h); !ok) return std::unexpected(ok.error());
    ::fi_info* hints = ::fi_allocinfo();
    if (hints == nullptr) return make_unexpected(errc::no_memory);
    hints->caps = h.capabilities.get();
    hints->mode = h.mode.get();
    hints->addr_format = static_cast<std::uint32_t>(h.addr_format);
    hints->ep_attr->type = static_cast<::fi_ep_type>(h.ep_type);
    hints->fabric_attr->prov_name = dup_or_null(h.provider);
    hints->fabric_attr->name = dup_or_null(h.fabric_name);
    hints->domain_attr->name = dup_or_null(h.domain_name);
    // Default registration modes: everything loom handles. Asking for capability::hmem also
    // accepts FI_MR_HMEM (device buffers are always registered; loom's API requires it).
    mr_mode_flags default_mode =
        mr_mode_flags::local | mr_mode_flags::virt_addr | mr_mode_flags::allocated | mr_mode_flags::prov_key;
    if (h.capabilities.any(capability::hmem)) default_mode |= mr_mode_flags::hmem;
    hints->domain_attr->mr_mode = static_cast<int>(h.mr_mode ? h.mr_mode->get() : default_mode.get());
    hints->domain_attr->threading = static_cast<::fi_threading>(h.threading);
    hints->domain_attr->data_progress = static_cast<::fi_progress>(h.data_progress);
    hints->domain_attr->control_progress = static_cast<::fi_progress>(h.control_progress);
    if (h.shared_receive_context) hints->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
    hints->tx_attr->inject_size = h.inject_size;
    hints->tx_attr->size = h.tx_size;
    hints->rx_attr->size = h.rx_size;
    hints->tx_attr->op_flags = h.tx_op_flags.get();
    hints->rx_attr->op_flags = h.rx_op_flags.get();

    const std::string node(h.node), service(h.service);
    ::fi_info* list = nullptr;
    const int rc =
        ::fi_getinfo(h.api_version ? h.api_version : default_api_version(), node.empty() ? nullptr : node.c_str(),
                     service.empty() ? nullptr : service.c_str(),
                     (h.node_is_source ? FI_SOURCE : 0) | (h.rescan ? detail::native_rescan : 0), hints, &list);
    ::fi_freeinfo(hints);
    if (rc != 0) return native_unexpected(rc);
    if (!h.provider.empty()) list = filter_provider(list, h.provider);
    if (list == nullptr) return make_unexpected(errc::no_data);
    // FI_PROGRESS_CONTROL_UNIFIED is the program's promise to serialize control calls with
    // data calls. libfabric 2.1's utility layer answers with the provider's own model (it
    // copies threading and data progress from the hints, not control progress), so the
    // promise would never reach fi_domain, and with FI_THREAD_DOMAIN the completion queue
    // would still take a mutex around its endpoint list on every read. Carry it into the
    // entries (it only narrows what the program may do).
    if (h.control_progress == progress_mode::control_unified)
        for (::fi_info* p = list; p != nullptr; p = p->next)
            if (p->domain_attr != nullptr) p->domain_attr->control_progress = FI_PROGRESS_CONTROL_UNIFIED;
    return provider_range{make_shared_list(list, mr)};
}

auto query_fabric(const fabric_hints& hints, std::pmr::memory_resource* mr) -> result<fabric_info> {
    auto all = query_all(hints, mr);
    if (!all) return std::unexpected(all.error());
    return *all->begin();
}

auto provider_range::size() const noexcept -> std::size_t {
    std::size_t n = 0;
    for (auto* p = list_.get(); p; p = p->next) ++n;
    return n;
}

auto provider_range::first() const -> std::optional<fabric_info> {
    if (!list_) return std::nullopt;
    return *begin();
}

auto fabric_info::adopt_native(::fi_info* owned) -> fabric_info {
    if (owned == nullptr) return {};
    return fabric_info{make_shared_list(owned, nullptr), owned};
}

auto fabric_info::copy_native(const ::fi_info* native, std::pmr::memory_resource* mr) -> result<fabric_info> {
    if (native == nullptr) return make_unexpected(errc::invalid_argument);
    ::fi_info* copy = ::fi_dupinfo(native);
    if (copy == nullptr) return make_unexpected(errc::other);
    if (copy->next) {  // fi_dupinfo copies one entry; be explicit about the chain anyway
        ::fi_freeinfo(copy->next);
        copy->next = nullptr;
    }
    auto list = make_shared_list(copy, mr);
    return fabric_info{list, copy};
}

auto fabric_info::provider_name() const noexcept -> std::string_view {
    return entry_ && entry_->fabric_attr ? sv(entry_->fabric_attr->prov_name) : std::string_view{};
}
auto fabric_info::fabric_name() const noexcept -> std::string_view {
    return entry_ && entry_->fabric_attr ? sv(entry_->fabric_attr->name) : std::string_view{};
}
auto fabric_info::domain_name() const noexcept -> std::string_view {
    return entry_ && entry_->domain_attr ? sv(entry_->domain_attr->name) : std::string_view{};
}
auto fabric_info::capabilities() const noexcept -> capability {
    return entry_ ? capability{entry_->caps} : capability{};
}
auto fabric_info::mode() const noexcept -> mode_flags { return entry_ ? mode_flags{entry_->mode} : mode_flags{}; }
auto fabric_info::ep_type() const noexcept -> endpoint_types {
    return entry_ && entry_->ep_attr ? static_cast<endpoint_types>(entry_->ep_attr->type) : endpoint_types::unspecified;
}
auto fabric_info::addr_format() const noexcept -> address_format {
    return entry_ ? static_cast<address_format>(entry_->addr_format) : address_format::unspecified;
}
auto fabric_info::source_address() const -> std::optional<address> {
    if (!entry_ || !entry_->src_addr || entry_->src_addrlen == 0) return std::nullopt;
    auto a = address_from_raw(addr_format(), {static_cast<const std::byte*>(entry_->src_addr), entry_->src_addrlen});
    if (!a) return std::nullopt;
    return std::move(*a);
}

auto fabric_info::get_fabric_attr() const noexcept -> std::optional<fabric_attr_view> {
    if (!entry_ || !entry_->fabric_attr) return std::nullopt;
    const auto* a = entry_->fabric_attr;
    return fabric_attr_view{sv(a->name), sv(a->prov_name), a->prov_version, a->api_version};
}

auto fabric_info::get_domain_attr() const noexcept -> std::optional<domain_attr_view> {
    if (!entry_ || !entry_->domain_attr) return std::nullopt;
    const auto* a = entry_->domain_attr;
    domain_attr_view v;
    v.name = sv(a->name);
    v.threading = static_cast<threading_mode>(a->threading);
    v.control_progress = static_cast<progress_mode>(a->control_progress);
    v.data_progress = static_cast<progress_mode>(a->data_progress);
    v.mr_mode = mr_mode_flags{static_cast<std::uint64_t>(static_cast<unsigned>(a->mr_mode))};
    v.av = static_cast<av_type>(a->av_type);
    v.mr_key_size = a->mr_key_size;
    v.cq_data_size = a->cq_data_size;
    v.cq_cnt = a->cq_cnt;
    v.ep_cnt = a->ep_cnt;
    v.tx_ctx_cnt = a->tx_ctx_cnt;
    v.rx_ctx_cnt = a->rx_ctx_cnt;
    v.max_ep_tx_ctx = a->max_ep_tx_ctx;
    v.max_ep_rx_ctx = a->max_ep_rx_ctx;
    v.max_ep_stx_ctx = a->max_ep_stx_ctx;
    v.max_ep_srx_ctx = a->max_ep_srx_ctx;
    v.mr_iov_limit = a->mr_iov_limit;
    v.mr_cnt = a->mr_cnt;
    v.max_err_data = a->max_err_data;
    v.caps = capability{a->caps};
    v.mode = mode_flags{a->mode};
    return v;
}

auto fabric_info::get_endpoint_attr() const noexcept -> std::optional<endpoint_attr_view> {
    if (!entry_ || !entry_->ep_attr) return std::nullopt;
    const auto* a = entry_->ep_attr;
    return endpoint_attr_view{static_cast<endpoint_types>(a->type),
                              a->protocol,
                              a->protocol_version,
                              a->max_msg_size,
                              a->msg_prefix_size,
                              a->max_order_raw_size,
                              a->max_order_war_size,
                              a->max_order_waw_size,
                              a->mem_tag_format,
                              a->tx_ctx_cnt,
                              a->rx_ctx_cnt,
                              a->auth_key_size};
}

auto fabric_info::get_tx_attr() const noexcept -> std::optional<tx_attr_view> {
    if (!entry_ || !entry_->tx_attr) return std::nullopt;
    const auto* a = entry_->tx_attr;
    return tx_attr_view{capability{a->caps}, mode_flags{a->mode}, op_flag{a->op_flags},
                        a->msg_order,        a->inject_size,      a->size,
                        a->iov_limit,        a->rma_iov_limit,    a->tclass};
}

auto fabric_info::get_rx_attr() const noexcept -> std::optional<rx_attr_view> {
    if (!entry_ || !entry_->rx_attr) return std::nullopt;
    const auto* a = entry_->rx_attr;
    return rx_attr_view{capability{a->caps}, mode_flags{a->mode}, op_flag{a->op_flags}, a->msg_order, a->size,
                        a->iov_limit};
}

auto fabric_info::to_string() const -> std::string {
    if (!entry_) return {};
    return ::fi_tostr(entry_, FI_TYPE_INFO);
}

}  // namespace loom
