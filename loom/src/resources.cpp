// Creation and management of fabric, domain, address vector, counter and memory region.
#include "loom/address_vector.hpp"
#include "loom/counter.hpp"
#include "loom/detail/resource_alloc.hpp"
#include "loom/domain.hpp"
#include "loom/endpoint.hpp"
#include "loom/fabric.hpp"
#include "loom/memory_region.hpp"
#include "loom/provider_facts.hpp"
#include "newer_abi.hpp"
#include "xpu_native.hpp"

#include <rdma/fi_domain.h>

#include <rdma/fi_errno.h>
#include <optional>

#include <fcntl.h>
#include <sched.h>
#include <atomic>
#include <limits>
#include <utility>
#include <vector>

namespace loom {

// ---------------------------------------------------------------- fabric / domain
auto fabric::create(const fabric_info& info, std::pmr::memory_resource* mr) -> result<fabric> {
    if (!info.valid() || info.native()->fabric_attr == nullptr) return make_unexpected(errc::invalid_argument);
    ::fid_fabric* f = nullptr;
    if (const int rc = ::fi_fabric(info.native()->fabric_attr, &f, nullptr); rc != 0) return native_unexpected(rc);
    fabric out;
    out.h_ = detail::unique_fid<::fid_fabric>{f};
    out.h_.track_children(mr);
    out.mr_ = mr;
    return out;
}

auto domain::create(fabric& fab, const fabric_info& info, std::pmr::memory_resource* mr) -> result<domain> {
    if (!fab.valid() || !info.valid()) return make_unexpected(errc::invalid_argument);
    ::fid_domain* d = nullptr;
    if (const int rc = ::fi_domain(fab.native(), const_cast<::fi_info*>(info.native()), &d, nullptr); rc != 0)
        return native_unexpected(rc);
    domain out;
    out.h_ = detail::unique_fid<::fid_domain>{d};
    out.h_.set_parent(fab.child_tracker());
    out.h_.track_children(mr);
    out.info_ = info;
    out.mr_ = mr;
    out.fabric_ = fab.native();
    if (const auto* da = info.native()->domain_attr)
        out.mr_mode_ = mr_mode_flags{static_cast<std::uint64_t>(static_cast<unsigned>(da->mr_mode))};
    return out;
}

// ---------------------------------------------------------------- address vector
namespace {
/// Whether an address of format `a` may be inserted into a domain using format `dom`.
auto format_compatible(address_format dom, address_format a) noexcept -> bool {
    if (dom == a || dom == address_format::unspecified) return true;
    const bool inet = a == address_format::sockaddr_in || a == address_format::sockaddr_in6;
    if (dom == address_format::sockaddr) return inet || a == address_format::sockaddr_ib;
    if (dom == address_format::sockaddr_ip) return inet;
    return false;
}
}  // namespace

auto address_vector::create(domain& dom, const address_vector_attr& attr, std::pmr::memory_resource* mr)
    -> result<address_vector> {
    if (!dom.valid()) return make_unexpected(errc::invalid_argument);
    if (auto ok = validate(attr.type); !ok) return std::unexpected(ok.error());
    if (attr.rx_ctx_bits < 0 || attr.rx_ctx_bits > 64) return make_unexpected(errc::invalid_argument);
    ::fi_av_attr native{};
    native.type = static_cast<::fi_av_type>(attr.type);
    native.count = attr.count;
    native.rx_ctx_bits = attr.rx_ctx_bits;
    ::fid_av* av = nullptr;
    if (const int rc = ::fi_av_open(dom.native(), &native, &av, nullptr); rc != 0) return native_unexpected(rc);
    address_vector out;
    out.h_ = detail::unique_fid<::fid_av>{av};
    try {
        out.inserted_ = detail::make_in<std::pmr::unordered_set<::fi_addr_t>>(mr, detail::resource_or_default(mr));
    } catch (...) {
        return make_unexpected(errc::no_memory);
    }
    out.h_.set_parent(dom.child_tracker());
    out.attr_ = attr;
    out.format_ = dom.addr_format();
    out.domain_ = dom.native();
    return out;
}

auto address_vector::insert(const address& peer, const av_insert_options& options) -> result<peer_addr> {
    if (!format_compatible(format_, native_format(peer))) return make_unexpected(errc::invalid_argument);
    std::array<std::byte, detail::max_socket_address> scratch{};  // encoded in place: no allocation
    return insert_raw(detail::native_bytes(peer, scratch), options);
}

auto address_vector::insert_raw(std::span<const std::byte> native_address, const av_insert_options& options)
    -> result<peer_addr> {
    if (!h_) return make_unexpected(errc::bad_state);
    if (native_address.empty()) return make_unexpected(errc::invalid_argument);
    // Validate the bytes as an address of this domain's format before the provider reads them.
    if (format_ != address_format::unspecified) {
        if (auto decoded = address_from_raw(format_, native_address); !decoded) return std::unexpected(decoded.error());
    }
    const auto flags = detail::newer_flag(options.behind_firewall, detail::native_firewall_addr);
    if (!flags) return std::unexpected(flags.error());
    ::fi_addr_t handle = FI_ADDR_NOTAVAIL;
    const int rc = ::fi_av_insert(h_.get(), native_address.data(), 1, &handle, *flags, nullptr);
    if (rc < 0) return native_unexpected(rc);
    if (rc != 1 || handle == FI_ADDR_NOTAVAIL) return make_unexpected(errc::address_not_available);
    try {
        inserted_->insert(handle);
    } catch (...) {
        (void)::fi_av_remove(h_.get(), &handle, 1, 0);  // keep the vector and the record in step
        return make_unexpected(errc::no_memory);
    }
    return peer_addr{handle};
}

auto address_vector::lookup(fabric_addr handle) const -> result<address> {
    if (!h_) return make_unexpected(errc::bad_state);
    std::pmr::vector<std::byte> buf(128, memory_resource());
    for (int attempt = 0; attempt < 2; ++attempt) {
        std::size_t len = buf.size();
        const int rc = ::fi_av_lookup(h_.get(), handle.get(), buf.data(), &len);
        if (rc != 0 && rc != -FI_ETOOSMALL) return native_unexpected(rc);
        if (len <= buf.size() && rc == 0) {
            buf.resize(len);
            return address_from_raw(format_, buf);
        }
        buf.resize(len);
    }
    return make_unexpected(errc::too_small);
}

auto address_vector::remove(fabric_addr handle) -> void_result {
    if (!h_) return make_unexpected(errc::bad_state);
    ::fi_addr_t a = handle.get();
    auto r = check_native(::fi_av_remove(h_.get(), &a, 1, 0));
    if (r && inserted_) inserted_->erase(a);
    return r;
}

auto address_vector::encode_receive_context(fabric_addr base, int index, int rx_ctx_bits) noexcept
    -> result<fabric_addr> {
    if (rx_ctx_bits < 0 || rx_ctx_bits > 64) return make_unexpected(errc::invalid_argument);
    const std::uint64_t b = base.get();
    // FI_ADDR_UNSPEC and FI_ADDR_NOTAVAIL (both all ones) name no peer.
    if (b == FI_ADDR_NOTAVAIL || b == FI_ADDR_UNSPEC) return make_unexpected(errc::invalid_argument);
    if (index < 0) return make_unexpected(errc::invalid_argument);
    // No reserved bits: fi_rx_addr would shift by 64 (undefined); only context 0 exists.
    if (rx_ctx_bits == 0) return index == 0 ? result<fabric_addr>{base} : make_unexpected(errc::invalid_argument);
    const auto idx = static_cast<std::uint64_t>(index);
    if (rx_ctx_bits < 64 && (idx >> rx_ctx_bits) != 0) return make_unexpected(errc::invalid_argument);
    const unsigned shift = 64u - static_cast<unsigned>(rx_ctx_bits);        // 0..63
    if ((b >> shift) != 0) return make_unexpected(errc::invalid_argument);  // base overlaps the index bits
    const ::fi_addr_t out = ::fi_rx_addr(b, index, rx_ctx_bits);
    if (out == FI_ADDR_NOTAVAIL || out == FI_ADDR_UNSPEC) return make_unexpected(errc::invalid_argument);
    return fabric_addr{out};
}

auto address_vector::receive_context_address(fabric_addr base, int index) const -> result<peer_addr> {
    if (!h_) return make_unexpected(errc::bad_state);
    auto out = encode_receive_context(base, index, attr_.rx_ctx_bits);
    if (!out) return std::unexpected(out.error());
    if (!contains(base)) return make_unexpected(errc::invalid_argument);
    return peer_addr{out->get()};  // encode_receive_context never returns a reserved value
}

// ---------------------------------------------------------------- counter
auto counter::create(domain& dom, const counter_attr& attr, std::pmr::memory_resource* mr) -> result<counter> {
    if (!dom.valid()) return make_unexpected(errc::invalid_argument);
    ::fi_cntr_attr native{};
    native.events = FI_CNTR_EVENTS_COMP;
    native.wait_obj = attr.wait_obj ? FI_WAIT_UNSPEC : FI_WAIT_NONE;
    ::fid_cntr* c = nullptr;
    const int rc = attr.xpu != nullptr ? detail::open_xpu_counter(dom, native, *attr.xpu, &c)
                                       : ::fi_cntr_open(dom.native(), &native, &c, nullptr);
    if (rc != 0) return native_unexpected(rc);
    counter out;
    out.h_ = detail::unique_fid<::fid_cntr>{c};
    out.mr_ = detail::resource_or_default(mr);
    out.h_.set_parent(dom.child_tracker());
    out.attr_ = attr;
    out.domain_ = dom.native();
    return out;
}

auto counter::read() const noexcept -> std::uint64_t { return h_ ? ::fi_cntr_read(h_.get()) : 0; }
auto counter::read_error_count() const noexcept -> std::uint64_t { return h_ ? ::fi_cntr_readerr(h_.get()) : 0; }
auto counter::get_error() const noexcept -> void_result {
    if (read_error_count() != 0) return make_unexpected(errc::io_error);
    return {};
}
auto counter::add(std::uint64_t v) noexcept -> void_result {
    if (!h_) return make_unexpected(errc::bad_state);
    return check_native(::fi_cntr_add(h_.get(), v));
}
auto counter::set(std::uint64_t v) noexcept -> void_result {
    if (!h_) return make_unexpected(errc::bad_state);
    return check_native(::fi_cntr_set(h_.get(), v));
}
auto counter::set_error_count(std::uint64_t v) noexcept -> void_result {
    if (!h_) return make_unexpected(errc::bad_state);
    if (v > max_error_) return make_unexpected(errc::invalid_argument);
    return check_native(::fi_cntr_seterr(h_.get(), v));
}
auto counter::add_error_count(std::uint64_t v) noexcept -> void_result {
    if (!h_) return make_unexpected(errc::bad_state);
    const auto now = read_error_count();
    if (v > max_error_ - now) return make_unexpected(errc::invalid_argument);
    return check_native(::fi_cntr_adderr(h_.get(), v));
}
auto counter::wait(std::uint64_t threshold, std::chrono::milliseconds timeout) noexcept -> void_result {
    if (!h_) return make_unexpected(errc::bad_state);
    const auto errors_before = read_error_count();
    if (attr_.wait_obj) {
        const int rc =
            ::fi_cntr_wait(h_.get(), threshold, timeout.count() < 0 ? -1 : static_cast<int>(timeout.count()));
        if (rc == 0) return {};
        if (rc == -FI_ETIMEDOUT || rc == -FI_EAGAIN) return make_unexpected(errc::timed_out);
        if (rc != -FI_ENOSYS && rc != -FI_EOPNOTSUPP) return native_unexpected(rc);
    }
    // No wait object: poll (reads drive provider progress) until the threshold or deadline.
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (read() >= threshold) return {};
        if (read_error_count() != errors_before) return make_unexpected(errc::io_error);
        if (timeout.count() >= 0 && std::chrono::steady_clock::now() >= deadline)
            return make_unexpected(errc::timed_out);
        ::sched_yield();
    }
}

// ---------------------------------------------------------------- memory region
namespace {
std::atomic<std::uint64_t> next_requested_key{1};
}

auto memory_region::register_memory(domain& dom, std::span<std::byte> buffer, mr_access_flags access,
                                    std::pmr::memory_resource* mr) -> result<memory_region> {
    return register_memory(dom, buffer, memory_registration{.access = access}, mr);
}

auto memory_region::register_memory(domain& dom, std::span<const std::byte> buffer, mr_access_flags access,
                                    std::pmr::memory_resource* mr) -> result<memory_region> {
    constexpr auto read_only = mr_access_flags::send | mr_access_flags::read | mr_access_flags::remote_read;
    if (!(access & ~read_only).empty()) return make_unexpected(errc::invalid_argument);
    return register_memory(dom, {const_cast<std::byte*>(buffer.data()), buffer.size()},
                           memory_registration{.access = access}, mr);
}

namespace {
/// Checks shared by host, HMEM and DMA-BUF registrations (before any provider call).
auto registration_check(const domain& dom, const memory_registration& request) -> void_result {
    if (!dom.valid()) return make_unexpected(errc::invalid_argument);
    constexpr auto known = mr_access_flags::send | mr_access_flags::recv | mr_access_flags::read |
                           mr_access_flags::write | mr_access_flags::remote_read | mr_access_flags::remote_write |
                           mr_access_flags::collective;
    if (request.access.empty() || !(request.access & ~known).empty()) return make_unexpected(errc::invalid_argument);
    if (static_cast<std::uint32_t>(request.iface) > static_cast<std::uint32_t>(hmem_iface::synapseai))
        return make_unexpected(errc::invalid_argument);
    if (request.iface != hmem_iface::system) {
        const ::fi_info* info = dom.info().native();
        if (info == nullptr || (info->caps & FI_HMEM) == 0) return make_unexpected(errc::not_supported);
        // The device id travels as an int for CUDA, ROCr, Level Zero, Neuron and SynapseAI.
        if (request.device > static_cast<std::uint64_t>(std::numeric_limits<int>::max()))
            return make_unexpected(errc::invalid_argument);
    } else if (request.device != 0) {
        return make_unexpected(errc::invalid_argument);
    }
    return {};
}

/// Providers whose registrations go through libfabric's utility MR map, which turns a DMA-BUF
/// into its mapped range (they never hand the descriptor to hardware).
auto translates_dmabuf(const domain& dom) -> bool { return provider_facts_for(dom.info()).translates_dmabuf; }

void set_device(::fi_mr_attr& attr, const memory_registration& request) noexcept {
    attr.iface = static_cast<::fi_hmem_iface>(request.iface);
    const int d = static_cast<int>(request.device);
    switch (request.iface) {
        case hmem_iface::cuda: attr.device.cuda = d; break;
        case hmem_iface::ze: attr.device.ze = d; break;
        case hmem_iface::neuron: attr.device.neuron = d; break;
        case hmem_iface::synapseai: attr.device.synapseai = d; break;
        default: attr.device.reserved = request.device; break;
    }
}
}  // namespace

auto memory_region::register_dmabuf(domain& dom, const dmabuf_region& buffer, const memory_registration& request,
                                    std::pmr::memory_resource* mr) -> result<memory_region> {
    if (auto ok = registration_check(dom, request); !ok) return std::unexpected(ok.error());
    if (buffer.fd < 0 || buffer.length == 0 || buffer.offset + buffer.length < buffer.offset)
        return make_unexpected(errc::invalid_argument);
    if (::fcntl(buffer.fd, F_GETFD) == -1) return make_unexpected(errc::invalid_argument);  // not an open descriptor
    const auto base = reinterpret_cast<std::uintptr_t>(buffer.base_addr);
    if (base != 0 && (base + buffer.offset < base || base + buffer.offset + buffer.length < base + buffer.offset))
        return make_unexpected(errc::invalid_argument);
    const auto mode = dom.get_memory_region_mode();
    if (base != 0 && !mode.any(mr_mode_flags::virt_addr) && translates_dmabuf(dom)) {
        // libfabric 2.1's utility MR map records the offset of an offset-addressed registration
        // from attr->mr_iov, which for FI_MR_DMABUF aliases the fi_mr_dmabuf pointer: remote
        // accesses then miss. These providers only ever use the mapping of a DMA-BUF, so
        // registering the mapped range is the same registration without the defect.
        return register_memory(dom, {static_cast<std::byte*>(buffer.base_addr) + buffer.offset, buffer.length}, request,
                               mr);
    }
    ::fi_mr_dmabuf dmabuf{buffer.fd, buffer.offset, buffer.length, buffer.base_addr};
    ::fi_mr_attr attr{};
    attr.dmabuf = &dmabuf;
    return register_native(dom, attr, FI_MR_DMABUF,
                           base != 0 ? static_cast<std::byte*>(buffer.base_addr) + buffer.offset : nullptr,
                           buffer.length, request, mr);
}

auto memory_region::register_memory(domain& dom, std::span<std::byte> buffer, const memory_registration& request,
                                    std::pmr::memory_resource* mr) -> result<memory_region> {
    if (auto ok = registration_check(dom, request); !ok) return std::unexpected(ok.error());
    if (buffer.data() == nullptr && !buffer.empty()) return make_unexpected(errc::invalid_argument);
    ::iovec iov{buffer.data(), buffer.size()};
    ::fi_mr_attr attr{};
    attr.mr_iov = &iov;
    return register_native(dom, attr, 0, buffer.data(), buffer.size(), request, mr);
}

auto memory_region::register_native(domain& dom, ::fi_mr_attr& attr, std::uint64_t flags, std::byte* base,
                                    std::size_t length, const memory_registration& request,
                                    std::pmr::memory_resource* mr) -> result<memory_region> {
    const auto mode = dom.get_memory_region_mode();
    attr.iov_count = 1;
    attr.access = request.access.get();
    attr.offset = request.offset;
    attr.requested_key = request.requested_key != 0
                             ? request.requested_key
                             : (mode.any(mr_mode_flags::prov_key) ? 0 : next_requested_key.fetch_add(1));
    set_device(attr, request);
    if (request.rma_events) flags |= FI_RMA_EVENT;
    ::fid_mr* m = nullptr;
    if (const int rc = ::fi_mr_regattr(dom.native(), &attr, flags, &m); rc != 0) return native_unexpected(rc);
    memory_region out;
    out.h_ = detail::unique_fid<::fid_mr>{m};
    out.h_.set_parent(dom.child_tracker());
    out.desc_ = ::fi_mr_desc(m);
    out.base_ = base;
    out.length_ = length;
    out.offset_ = request.offset;
    out.access_ = request.access;
    out.mode_ = mode;
    out.domain_ = dom.native();
    out.mr_ = detail::resource_or_default(mr);
    out.rma_events_ = request.rma_events;
    // Created disabled: rma_event mode for registrations asking for events, endpoint mode
    // for every registration (fi_mr_bind to the endpoint, then fi_mr_enable).
    out.needs_enable_ = (request.rma_events && mode.any(mr_mode_flags::rma_event)) || mode.any(mr_mode_flags::endpoint);
    return out;
}

auto memory_region::key() const noexcept -> result<std::uint64_t> {
    if (!h_ || length_ == 0) return make_unexpected(errc::invalid_argument);
    if (mode_.any(mr_mode_flags::raw)) return make_unexpected(errc::not_supported);
    const std::uint64_t k = ::fi_mr_key(h_.get());
    if (k == FI_KEY_NOTAVAIL) return make_unexpected(errc::again);
    return k;
}

namespace {
/// The RMA address of a registration's first byte: its virtual address with FI_MR_VIRT_ADDR,
/// otherwise offset 0 (libfabric reserves fi_mr_attr::offset).
auto rma_address_of(const memory_region& mr) noexcept -> std::uint64_t {
    return mr.mode().any(mr_mode_flags::virt_addr) ? reinterpret_cast<std::uintptr_t>(mr.address()) : 0;
}
}  // namespace

auto memory_region::export_raw(std::pmr::memory_resource* mr) const -> result<raw_remote_memory> {
    if (!h_ || length_ == 0) return make_unexpected(errc::invalid_argument);
    if (!mode_.any(mr_mode_flags::raw)) return make_unexpected(errc::not_supported);
    raw_remote_memory out{.key = std::pmr::vector<std::uint8_t>(detail::resource_or_default(mr))};
    out.addr = rma_address_of(*this);
    out.length = length_;
    out.key.resize(16);
    for (int attempt = 0; attempt < 2; ++attempt) {
        std::size_t size = out.key.size();
        const int rc = ::fi_mr_raw_attr(h_.get(), &out.base_addr, out.key.data(), &size, 0);
        if (rc == 0) {
            if (size > out.key.size()) return make_unexpected(errc::too_small);
            out.key.resize(size);
            return out;
        }
        if (rc != -FI_ETOOSMALL || size <= out.key.size()) return native_unexpected(rc);
        out.key.resize(size);
    }
    return make_unexpected(errc::too_small);
}

auto memory_region::bind(counter& c) noexcept -> void_result {
    if (!h_ || !c.valid() || c.domain_native() != domain_) return make_unexpected(errc::invalid_argument);
    if (enabled_) return make_unexpected(errc::bad_state);
    if (!rma_events_ || !access_.any(mr_access_flags::remote_write)) return make_unexpected(errc::invalid_argument);
    return check_native(::fi_mr_bind(h_.get(), &c.native()->fid, FI_REMOTE_WRITE));
}

auto memory_region::bind(endpoint& ep) noexcept -> void_result {
    if (!h_ || !ep.valid() || ep.domain_native() != domain_) return make_unexpected(errc::invalid_argument);
    if (enabled_) return make_unexpected(errc::bad_state);
    if (rma_events_ && !ep.capabilities().any(capability::rma_event)) return make_unexpected(errc::invalid_argument);
    return check_native(::fi_mr_bind(h_.get(), &ep.native()->fid, 0));
}

auto memory_region::enable() noexcept -> void_result {
    if (!h_) return make_unexpected(errc::invalid_argument);
    if (enabled_) return {};
    if (needs_enable_) {
        if (auto r = check_native(::fi_mr_enable(h_.get())); !r) return r;
    }
    enabled_ = true;
    return {};
}

// ---------------------------------------------------------------- mapped remote memory
auto mapped_remote_memory::map(domain& dom, const raw_remote_memory& raw, std::pmr::memory_resource* mr)
    -> result<mapped_remote_memory> {
    if (!dom.valid() || raw.key.empty() || raw.length == 0) return make_unexpected(errc::invalid_argument);
    if (raw.addr + (raw.length - 1) < raw.addr) return make_unexpected(errc::invalid_argument);
    const auto* da = dom.info().valid() ? dom.info().native()->domain_attr : nullptr;
    if (da != nullptr && da->mr_key_size != 0 && raw.key.size() > da->mr_key_size)
        return make_unexpected(errc::invalid_argument);
    if (!dom.get_memory_region_mode().any(mr_mode_flags::raw)) return make_unexpected(errc::not_supported);
    std::uint64_t key = 0;
    // fi_mr_map_raw only reads the key.
    const int rc = ::fi_mr_map_raw(dom.native(), raw.base_addr, const_cast<std::uint8_t*>(raw.key.data()),
                                   raw.key.size(), &key, 0);
    if (rc != 0) return native_unexpected(rc);
    std::optional<mapped_remote_memory> made;
    try {  // the key's copy in the caller's resource (moving keeps a vector's resource)
        made.emplace(mapped_remote_memory{
            raw_remote_memory{raw.base_addr, raw.addr, raw.length,
                              std::pmr::vector<std::uint8_t>(raw.key, detail::resource_or_default(mr))}});
    } catch (...) {
        (void)::fi_mr_unmap_key(dom.native(), key);
        return make_unexpected(errc::no_memory);
    }
    mapped_remote_memory& out = *made;
    out.domain_ = dom.native();
    out.key_ = key;
    out.link_ = detail::child_link{dom.child_tracker()};
    return std::move(out);
}

mapped_remote_memory::mapped_remote_memory(mapped_remote_memory&& o) noexcept
    : raw_(std::move(o.raw_)),
      domain_(std::exchange(o.domain_, nullptr)),
      key_(std::exchange(o.key_, 0)),
      link_(std::move(o.link_)) {}

auto mapped_remote_memory::operator=(mapped_remote_memory&& o) noexcept -> mapped_remote_memory& {
    if (this != &o) swap(o);
    return *this;
}

void mapped_remote_memory::swap(mapped_remote_memory& o) noexcept {
    std::swap(raw_, o.raw_);
    std::swap(domain_, o.domain_);
    std::swap(key_, o.key_);
    link_.swap(o.link_);
}

mapped_remote_memory::~mapped_remote_memory() { (void)close(); }

auto mapped_remote_memory::remote() const noexcept -> result<remote_memory> {
    if (domain_ == nullptr) return make_unexpected(errc::bad_state);
    return remote_memory{raw_.addr, key_, raw_.length};
}

auto mapped_remote_memory::close() noexcept -> void_result {
    if (domain_ == nullptr) return {};
    if (const int rc = ::fi_mr_unmap_key(domain_, key_); rc != 0) return native_unexpected(rc);
    domain_ = nullptr;
    key_ = 0;
    link_.reset();
    return {};
}

auto remote_memory::from_mr(const memory_region& mr) noexcept -> result<remote_memory> {
    auto k = mr.key();
    if (!k) return std::unexpected(k.error());
    return remote_memory{rma_address_of(mr), *k, mr.size()};
}

}  // namespace loom
