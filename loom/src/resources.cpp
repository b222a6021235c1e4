// Creation and management of fabric, domain, address vector, counter and memory region.
#include "loom/address_vector.hpp"
#include "loom/counter.hpp"
#include "loom/domain.hpp"
#include "loom/endpoint.hpp"
#include "loom/fabric.hpp"
#include "loom/memory_region.hpp"

#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#include <atomic>
#include <sched.h>
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

auto address_vector::create(domain& dom, const address_vector_attr& attr, std::pmr::memory_resource*)
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
    out.h_.set_parent(dom.child_tracker());
    out.attr_ = attr;
    out.format_ = dom.addr_format();
    out.domain_ = dom.native();
    return out;
}

auto address_vector::insert(const address& peer) -> result<fabric_addr> {
    if (!format_compatible(format_, native_format(peer))) return make_unexpected(errc::invalid_argument);
    const auto raw = to_raw(peer);
    return insert_raw(raw);
}

auto address_vector::insert_raw(std::span<const std::byte> native_address) -> result<fabric_addr> {
    if (!h_) return make_unexpected(errc::bad_state);
    if (native_address.empty()) return make_unexpected(errc::invalid_argument);
    // Validate the bytes as an address of this domain's format before the provider reads them.
    if (format_ != address_format::unspecified) {
        if (auto decoded = address_from_raw(format_, native_address); !decoded)
            return std::unexpected(decoded.error());
    }
    ::fi_addr_t handle = FI_ADDR_NOTAVAIL;
    const int rc = ::fi_av_insert(h_.get(), native_address.data(), 1, &handle, 0, nullptr);
    if (rc < 0) return native_unexpected(rc);
    if (rc != 1 || handle == FI_ADDR_NOTAVAIL) return make_unexpected(errc::address_not_available);
    return fabric_addr{handle};
}

auto address_vector::lookup(fabric_addr handle) const -> result<address> {
    if (!h_) return make_unexpected(errc::bad_state);
    std::vector<std::byte> buf(128);
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
    return check_native(::fi_av_remove(h_.get(), &a, 1, 0));
}

// ---------------------------------------------------------------- counter
auto counter::create(domain& dom, const counter_attr& attr, std::pmr::memory_resource*) -> result<counter> {
    if (!dom.valid()) return make_unexpected(errc::invalid_argument);
    ::fi_cntr_attr native{};
    native.events = FI_CNTR_EVENTS_COMP;
    native.wait_obj = attr.wait_obj ? FI_WAIT_UNSPEC : FI_WAIT_NONE;
    ::fid_cntr* c = nullptr;
    if (const int rc = ::fi_cntr_open(dom.native(), &native, &c, nullptr); rc != 0) return native_unexpected(rc);
    counter out;
    out.h_ = detail::unique_fid<::fid_cntr>{c};
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
        const int rc = ::fi_cntr_wait(h_.get(), threshold, timeout.count() < 0 ? -1 : static_cast<int>(timeout.count()));
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

auto memory_region::register_memory(domain& dom, std::span<std::byte> buffer,
                                    const memory_registration& request, std::pmr::memory_resource*)
    -> result<memory_region> {
    if (!dom.valid()) return make_unexpected(errc::invalid_argument);
    constexpr auto known = mr_access_flags::send | mr_access_flags::recv | mr_access_flags::read |
                           mr_access_flags::write | mr_access_flags::remote_read |
                           mr_access_flags::remote_write | mr_access_flags::collective;
    if (request.access.empty() || !(request.access & ~known).empty()) return make_unexpected(errc::invalid_argument);
    if (buffer.data() == nullptr && !buffer.empty()) return make_unexpected(errc::invalid_argument);
    const auto mode = dom.get_memory_region_mode();
    ::iovec iov{buffer.data(), buffer.size()};
    ::fi_mr_attr attr{};
    attr.mr_iov = &iov;
    attr.iov_count = 1;
    attr.access = request.access.get();
    attr.offset = request.offset;
    attr.requested_key = request.requested_key != 0
                             ? request.requested_key
                             : (mode.any(mr_mode_flags::prov_key) ? 0 : next_requested_key.fetch_add(1));
    attr.iface = FI_HMEM_SYSTEM;
    const std::uint64_t flags = request.rma_events ? FI_RMA_EVENT : 0;
    ::fid_mr* m = nullptr;
    if (const int rc = ::fi_mr_regattr(dom.native(), &attr, flags, &m); rc != 0) return native_unexpected(rc);
    memory_region out;
    out.h_ = detail::unique_fid<::fid_mr>{m};
    out.h_.set_parent(dom.child_tracker());
    out.desc_ = ::fi_mr_desc(m);
    out.base_ = buffer.data();
    out.length_ = buffer.size();
    out.offset_ = request.offset;
    out.access_ = request.access;
    out.mode_ = mode;
    out.domain_ = dom.native();
    return out;
}

auto memory_region::key() const noexcept -> result<std::uint64_t> {
    if (!h_ || length_ == 0) return make_unexpected(errc::invalid_argument);
    if (mode_.any(mr_mode_flags::raw)) return make_unexpected(errc::not_supported);
    const std::uint64_t k = ::fi_mr_key(h_.get());
    if (k == FI_KEY_NOTAVAIL) return make_unexpected(errc::again);
    return k;
}

auto memory_region::usable_with(const endpoint& ep) const noexcept -> bool {
    return h_ && ep.domain_native() == domain_;
}

auto remote_memory::from_mr(const memory_region& mr) noexcept -> result<remote_memory> {
    auto k = mr.key();
    if (!k) return std::unexpected(k.error());
    const std::uint64_t addr = mr.mode().any(mr_mode_flags::virt_addr)
                                   ? reinterpret_cast<std::uintptr_t>(mr.address())
                                   : 0;
    return remote_memory{addr, *k, mr.size()};
}

auto remote_memory::subregion(std::size_t offset, std::size_t len) const noexcept -> result<remote_memory> {
    if (offset > length || len > length - offset) return make_unexpected(errc::invalid_argument);
    if (addr + offset < addr) return make_unexpected(errc::invalid_argument);
    const std::uint64_t start = addr + offset;
    if (len != 0 && start + len - 1 < start) return make_unexpected(errc::invalid_argument);
    return remote_memory{start, key, len};
}

auto remote_memory::offset_by(std::size_t offset) const noexcept -> result<remote_memory> {
    if (offset > length) return make_unexpected(errc::invalid_argument);
    return subregion(offset, length - offset);
}

}  // namespace loom
