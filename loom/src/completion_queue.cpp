#include "loom/completion_queue.hpp"
#include "refusal.hpp"
#include "xpu_native.hpp"

#include <rdma/fi_errno.h>

#include <sched.h>
#include <array>

namespace loom {
namespace {

constexpr std::size_t batch_max = 64;

void fill_from_native(completion_event& ev, cq_format fmt, const void* raw) noexcept {
    switch (fmt) {
        case cq_format::context: {
            const auto* e = static_cast<const ::fi_cq_entry*>(raw);
            ev.context = e->op_context;
            break;
        }
        case cq_format::msg: {
            const auto* e = static_cast<const ::fi_cq_msg_entry*>(raw);
            ev.context = e->op_context;
            ev.flags = op_flag{e->flags};
            ev.bytes_transferred = e->len;
            break;
        }
        case cq_format::data: {
            const auto* e = static_cast<const ::fi_cq_data_entry*>(raw);
            ev.context = e->op_context;
            ev.flags = op_flag{e->flags};
            ev.bytes_transferred = e->len;
            ev.buffer = e->buf;
            ev.data = e->data;
            break;
        }
        case cq_format::tagged: completion_queue::assign(ev, *static_cast<const ::fi_cq_tagged_entry*>(raw)); break;
    }
}

auto entry_size(cq_format fmt) noexcept -> std::size_t {
    switch (fmt) {
        case cq_format::context: return sizeof(::fi_cq_entry);
        case cq_format::msg: return sizeof(::fi_cq_msg_entry);
        case cq_format::data: return sizeof(::fi_cq_data_entry);
        case cq_format::tagged: return sizeof(::fi_cq_tagged_entry);
    }
    return sizeof(::fi_cq_tagged_entry);
}

}  // namespace

namespace {
using detail::refuse;
auto refused_strerror(::fid_cq*, int, const void*, char*, std::size_t) noexcept -> const char* {
    return "completion queue not open";
}
constinit ::fi_ops_cq refusing_cq_ops{
    .size = sizeof(::fi_ops_cq),
    .read = refuse<FI_EOPBADSTATE, ::ssize_t>,
    .readfrom = refuse<FI_EOPBADSTATE, ::ssize_t>,
    .readerr = refuse<FI_EOPBADSTATE, ::ssize_t>,
    .sread = refuse<FI_EOPBADSTATE, ::ssize_t>,
    .sreadfrom = refuse<FI_EOPBADSTATE, ::ssize_t>,
    .signal = refuse<FI_EOPBADSTATE, int>,
    .strerror = refused_strerror,
};
}  // namespace

constinit ::fid_cq detail::refused_cq{
    .fid = {.fclass = FI_CLASS_CQ, .context = nullptr, .ops = &detail::refusing_fid_ops},
    .ops = &refusing_cq_ops,
};

auto completion_queue::create(domain& dom, const cq_attr& attr, std::pmr::memory_resource* mr)
    -> result<completion_queue> {
    if (!dom.valid()) return make_unexpected(errc::invalid_argument);
    const auto f = static_cast<int>(attr.format);
    if (f < static_cast<int>(cq_format::context) || f > static_cast<int>(cq_format::tagged))
        return make_unexpected(errc::invalid_argument);
    ::fi_cq_attr native{};
    native.size = attr.size;
    native.format = static_cast<::fi_cq_format>(attr.format);
    native.wait_obj = attr.wait_obj ? FI_WAIT_UNSPEC : FI_WAIT_NONE;
    ::fid_cq* cq = nullptr;
    const int rc = attr.xpu != nullptr ? detail::open_xpu_cq(dom, native, *attr.xpu, &cq)
                                       : ::fi_cq_open(dom.native(), &native, &cq, nullptr);
    if (rc != 0) return native_unexpected(rc);
    completion_queue out;
    out.h_ = detail::unique_fid<::fid_cq>{cq};
    out.h_.set_parent(dom.child_tracker());
    out.attr_ = attr;
    out.domain_ = dom.native();
    out.fabric_ = dom.fabric_native();
    if (attr.wait_obj) out.wait_kind_ = query_wait_object(cq);  // once: fi_trywait needs it on every arm
    // Where the application serializes every call on the queue and its endpoints, the
    // registry needs no lock of its own.
    const auto da = dom.info().get_domain_attr();
    const bool serialized = da && serializes_queue_access(da->threading);
    try {
        out.registry_ = detail::make_in<completion_registry>(mr, mr, serialized);
    } catch (...) {
        return make_unexpected(errc::no_memory);
    }
    out.mr_ = detail::resource_or_default(mr);
    if (attr.format == cq_format::tagged && !attr.want_source) out.fast_ = detail::cq_read_gate{cq};
    return out;
}

auto completion_queue::read_error(completion_event& ev) -> bool {
    ::fi_cq_err_entry err{};
    const auto rc = ::fi_cq_readerr(h_.get(), &err, 0);
    if (rc == -FI_EAGAIN) return false;
    ev = completion_event{};
    if (rc < 0) {
        ev.error = native_error(rc);
        return true;
    }
    assign(ev, err);
    ev.overflow_length = err.olen;
    ev.provider_errno = err.prov_errno;
    ev.error = native_error(err.err != 0 ? err.err : FI_EOTHER);
    char text[256]{};
    if (const char* s = ::fi_cq_strerror(h_.get(), err.prov_errno, err.err_data, text, sizeof text)) ev.error_text = s;
    return true;
}

auto completion_queue::poll() -> std::optional<completion_event> {
    completion_event ev;
    auto n = read({&ev, 1});
    if (!n) {
        ev.error = n.error();
        return ev;
    }
    if (*n == 0) return std::nullopt;
    return ev;
}

auto completion_queue::read_failed(::ssize_t rc, completion_event& first) -> result<std::size_t> {
    if (rc == -FI_EAVAIL) return read_error(first) ? 1 : 0;
    return native_unexpected(rc);
}

auto completion_queue::read_tagged_refused() const noexcept -> result<std::size_t> {
    if (!h_) return make_unexpected(errc::bad_state);
    if (attr_.format != cq_format::tagged || attr_.want_source) return make_unexpected(errc::invalid_argument);
    return 0;  // an empty span: nothing to read into
}

void completion_queue::clear_error(completion_event& ev) noexcept {
    ev.error = std::error_code{};
    ev.provider_errno = 0;
    ev.overflow_length = 0;
    ev.error_text.clear();
}

auto completion_queue::read_any(std::span<completion_event> out) -> result<std::size_t> {
    if (!h_) return make_unexpected(errc::bad_state);
    if (out.empty()) return 0;
    alignas(::fi_cq_tagged_entry) std::array<std::byte, batch_max * sizeof(::fi_cq_tagged_entry)> raw;
    std::array<::fi_addr_t, batch_max> src;
    const std::size_t want = std::min(out.size(), batch_max);
    const auto rc = attr_.want_source ? ::fi_cq_readfrom(h_.get(), raw.data(), want, src.data())
                                      : ::fi_cq_read(h_.get(), raw.data(), want);
    if (rc == -FI_EAGAIN) return 0;
    if (rc == -FI_EAVAIL) return read_error(out[0]) ? 1 : 0;
    if (rc < 0) return native_unexpected(rc);
    const std::size_t stride = entry_size(attr_.format);
    for (std::size_t i = 0; i < static_cast<std::size_t>(rc); ++i) {
        auto& ev = out[i];
        // Fields the format does not carry read as empty.
        ev.flags = op_flag{};
        ev.bytes_transferred = 0;
        ev.buffer = nullptr;
        ev.data = 0;
        ev.tag = 0;
        ev.source = fabric_addrs::unspecified;
        clear_error_if_set(ev);
        fill_from_native(ev, attr_.format, raw.data() + i * stride);
        if (attr_.want_source) ev.source = fabric_addr{src[i]};
    }
    return static_cast<std::size_t>(rc);
}

auto completion_queue::wait(std::chrono::milliseconds timeout) -> result<completion_event> {
    if (!h_) return make_unexpected(errc::bad_state);
    if (attr_.wait_obj) {
        alignas(::fi_cq_tagged_entry) std::array<std::byte, sizeof(::fi_cq_tagged_entry)> raw;
        const auto rc = ::fi_cq_sread(h_.get(), raw.data(), 1, nullptr,
                                      timeout.count() < 0 ? -1 : static_cast<int>(timeout.count()));
        if (rc == 1) {
            completion_event ev;
            fill_from_native(ev, attr_.format, raw.data());
            return ev;
        }
        if (rc == -FI_EAVAIL) {
            completion_event ev;
            if (read_error(ev)) return ev;
        }
        if (rc == -FI_EAGAIN || rc == -FI_ETIMEDOUT) return make_unexpected(errc::timed_out);
        if (rc < 0 && rc != -FI_ENOSYS && rc != -FI_EOPNOTSUPP) return native_unexpected(rc);
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (auto ev = poll()) return std::move(*ev);
        if (timeout.count() >= 0 && std::chrono::steady_clock::now() >= deadline)
            return make_unexpected(errc::timed_out);
        ::sched_yield();
    }
}

}  // namespace loom
