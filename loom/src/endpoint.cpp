#include "loom/endpoint.hpp"

#include "loom/address_vector.hpp"
#include "loom/completion_queue.hpp"
#include "loom/counter.hpp"
#include "loom/detail/resource_alloc.hpp"
#include "loom/memory_region.hpp"
#include "loom/provider_facts.hpp"
#include "loom/shared_rx_context.hpp"
#include "loom/trigger.hpp"
#include "refusal.hpp"

#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_rma.h>
#include <array>

#include <limits>
#include <tuple>
#include <type_traits>
#include <vector>

namespace loom {

namespace {
auto quirks_of(const ::fi_info& fi) noexcept -> endpoint::provider_quirks {
    const std::string_view prov = fi.fabric_attr && fi.fabric_attr->prov_name ? fi.fabric_attr->prov_name : "";
    const auto f = provider_facts_for(prov);  // the one table of provider defects
    return {.getopt_needs_enable = f.getopt_needs_enable,
            .broken_fetch_atomics = f.broken_fetch_atomics,
            .broken_atomic_inject = f.broken_atomic_inject,
            .broken_self_insert = f.broken_self_insert};
}
}  // namespace

// ---------------------------------------------------------------- operation gates
namespace {
using detail::refuse;

/// A msg or tagged operation table (the two name their slots alike) whose every operation
/// refuses with -Code.
template <class Ops, int Code>
constexpr auto refusing_ops() noexcept -> Ops {
    return Ops{
        .size = sizeof(Ops),
        .recv = refuse<Code, ::ssize_t>,
        .recvv = refuse<Code, ::ssize_t>,
        .recvmsg = refuse<Code, ::ssize_t>,
        .send = refuse<Code, ::ssize_t>,
        .sendv = refuse<Code, ::ssize_t>,
        .sendmsg = refuse<Code, ::ssize_t>,
        .inject = refuse<Code, ::ssize_t>,
        .senddata = refuse<Code, ::ssize_t>,
        .injectdata = refuse<Code, ::ssize_t>,
    };
}
template <int Code>
constinit ::fi_ops_msg refusing_msg = refusing_ops<::fi_ops_msg, Code>();
template <int Code>
constinit ::fi_ops_tagged refusing_tagged = refusing_ops<::fi_ops_tagged, Code>();

template <int Code>
constexpr auto refusing_rma_ops() noexcept -> ::fi_ops_rma {
    return {
        .size = sizeof(::fi_ops_rma),
        .read = refuse<Code, ::ssize_t>,
        .readv = refuse<Code, ::ssize_t>,
        .readmsg = refuse<Code, ::ssize_t>,
        .write = refuse<Code, ::ssize_t>,
        .writev = refuse<Code, ::ssize_t>,
        .writemsg = refuse<Code, ::ssize_t>,
        .inject = refuse<Code, ::ssize_t>,
        .writedata = refuse<Code, ::ssize_t>,
        .injectdata = refuse<Code, ::ssize_t>,
    };
}
template <int Code>
constinit ::fi_ops_rma refusing_rma = refusing_rma_ops<Code>();

template <int Code>
constexpr auto refusing_atomic_ops() noexcept -> ::fi_ops_atomic {
    return {
        .size = sizeof(::fi_ops_atomic),
        .write = refuse<Code, ::ssize_t>,
        .writev = refuse<Code, ::ssize_t>,
        .writemsg = refuse<Code, ::ssize_t>,
        .inject = refuse<Code, ::ssize_t>,
        .readwrite = refuse<Code, ::ssize_t>,
        .readwritev = refuse<Code, ::ssize_t>,
        .readwritemsg = refuse<Code, ::ssize_t>,
        .compwrite = refuse<Code, ::ssize_t>,
        .compwritev = refuse<Code, ::ssize_t>,
        .compwritemsg = refuse<Code, ::ssize_t>,
        .writevalid = refuse<Code, int>,
        .readwritevalid = refuse<Code, int>,
        .compwritevalid = refuse<Code, int>,
    };
}
template <int Code>
constinit ::fi_ops_atomic refusing_atomic = refusing_atomic_ops<Code>();

template <int Code>
constexpr auto refusing_endpoint() noexcept -> ::fid_ep {
    ::fid_ep ep{};
    ep.fid.fclass = FI_CLASS_EP;
    ep.fid.ops = &detail::refusing_fid_ops;
    ep.msg = &refusing_msg<Code>;
    ep.tagged = &refusing_tagged<Code>;
    ep.rma = &refusing_rma<Code>;
    ep.atomic = &refusing_atomic<Code>;
    return ep;
}

/// The checking stand-in a gate points into (its first member).
auto checker_of(::fid_ep* gate) noexcept -> const detail::gate_checker* {
    static_assert(std::is_standard_layout_v<detail::gate_checker>);
    return reinterpret_cast<const detail::gate_checker*>(gate);
}
/// Argument `I` from the end of an operation's arguments after (ep, buffer, length/count):
/// 1 is the context (every data operation's last argument).
template <std::size_t I, class... Rest>
auto from_end(Rest... rest) noexcept {
    return std::get<sizeof...(Rest) - I>(std::tuple<Rest...>{rest...});
}
/// An operation of the checking stand-in: a missing context (where the provider needs one) and,
/// for sends, reads and writes, a length above max_msg_size are refused; everything else is
/// `Native` (fi_send, fi_trecv, ...) on the real endpoint.
template <bool Send, auto Native, class Buf, class... Rest>
auto checked(::fid_ep* gate, Buf buf, std::size_t len, Rest... rest) noexcept -> ::ssize_t {
    const auto* c = checker_of(gate);
    const void* ctx = from_end<1>(rest...);
    if ((Send && len > c->max_msg_size) || (c->needs_context && ctx == nullptr)) return -FI_EINVAL;
    return Native(c->target, buf, len, rest...);
}
/// The checking stand-in's tables: receive, send and senddata checked (`Recv`, `Send`,
/// `SendData`: the family's libfabric calls), the rest (never called through a gate) not
/// implemented.
template <class Ops, auto Recv, auto Send, auto SendData>
constexpr auto checking_ops() noexcept -> Ops {
    auto ops = refusing_ops<Ops, FI_ENOSYS>();
    ops.recv = checked<false, Recv>;
    ops.send = checked<true, Send>;
    ops.senddata = checked<true, SendData>;
    return ops;
}
constexpr auto checking_rma_ops() noexcept -> ::fi_ops_rma {
    auto ops = refusing_rma_ops<FI_ENOSYS>();
    ops.read = checked<true, &::fi_read>;
    ops.write = checked<true, &::fi_write>;
    ops.writedata = checked<true, &::fi_writedata>;
    return ops;
}
/// An atomic of the checking stand-in: fetch and compare atomics refused where the provider's
/// are broken, then the context and the operand bytes (count × datatype size) as for sends.
template <bool Fetching, auto Native, class... Rest>
auto checked_atomic(::fid_ep* gate, const void* buf, std::size_t count, Rest... rest) noexcept -> ::ssize_t {
    const auto* c = checker_of(gate);
    if (Fetching && c->broken_fetch_atomics) return -FI_EOPNOTSUPP;
    const void* ctx = from_end<1>(rest...);
    const ::fi_datatype dt = from_end<3>(rest...);  // ..., datatype, op, context
    if ((c->needs_context && ctx == nullptr) || count * trigger::detail::datatype_size(dt) > c->max_msg_size)
        return -FI_EINVAL;
    return Native(c->target, buf, count, rest...);
}
constexpr auto checking_atomic_ops() noexcept -> ::fi_ops_atomic {
    auto ops = refusing_atomic_ops<FI_ENOSYS>();
    ops.write = checked_atomic<false, &::fi_atomic>;
    ops.readwrite = checked_atomic<true, &::fi_fetch_atomic>;
    ops.compwrite = checked_atomic<true, &::fi_compare_atomic>;
    return ops;
}
constinit ::fi_ops_msg checking_msg = checking_ops<::fi_ops_msg, &::fi_recv, &::fi_send, &::fi_senddata>();
constinit ::fi_ops_atomic checking_atomic = checking_atomic_ops();
constinit ::fi_ops_rma checking_rma = checking_rma_ops();
constinit ::fi_ops_tagged checking_tagged = checking_ops<::fi_ops_tagged, &::fi_trecv, &::fi_tsend, &::fi_tsenddata>();
}  // namespace

constinit ::fid_ep detail::refused_not_enabled = refusing_endpoint<FI_EOPBADSTATE>();
constinit ::fid_ep detail::refused_no_capability = refusing_endpoint<FI_EINVAL>();

void detail::op_gates::open(::fid_ep* ep, capability caps, std::size_t max_msg_size, bool needs_context,
                            bool broken_fetch_atomics) noexcept {
    // Direct when no operation the provider accepts needs a check: the provider does not use
    // the operation context (FI_CONTEXT / FI_CONTEXT2 mode) and, for sends, reads, writes and
    // atomics, any length fits (and, for atomics, its fetch and compare atomics work).
    const bool rx_direct = !needs_context;
    const bool tx_direct = rx_direct && max_msg_size == std::numeric_limits<std::size_t>::max();
    checker_ = gate_checker{};
    checker_.gate.fid.fclass = FI_CLASS_EP;
    checker_.gate.fid.ops = &refusing_fid_ops;
    checker_.gate.msg = &checking_msg;
    checker_.gate.tagged = &checking_tagged;
    checker_.gate.rma = &checking_rma;
    checker_.gate.atomic = &checking_atomic;
    checker_.target = ep;
    checker_.max_msg_size = max_msg_size;
    checker_.needs_context = needs_context;
    checker_.broken_fetch_atomics = broken_fetch_atomics;
    auto gate = [&](capability family, bool direct) {
        if (!caps.any(family)) return &refused_no_capability;
        return direct ? ep : &checker_.gate;
    };
    send_msg_ = gate(capability::msg, tx_direct);
    send_tagged_ = gate(capability::tagged, tx_direct);
    recv_msg_ = gate(capability::msg, rx_direct);
    recv_tagged_ = gate(capability::tagged, rx_direct);
    rma_ = gate(capability::rma, tx_direct);
    atomic_ = gate(capability::atomic, tx_direct && !broken_fetch_atomics);
}

auto endpoint::create(domain& dom, const fabric_info& info, std::pmr::memory_resource* mr) -> result<endpoint> {
    if (!dom.valid() || !info.valid()) return make_unexpected(errc::invalid_argument);
    const ::fi_info* fi = info.native();
    if (fi->ep_attr == nullptr || fi->tx_attr == nullptr || fi->rx_attr == nullptr)
        return make_unexpected(errc::invalid_argument);
    if (auto ok = validate(static_cast<endpoint_types>(fi->ep_attr->type)); !ok) return std::unexpected(ok.error());
    ::fid_ep* ep = nullptr;
    if (const int rc = ::fi_endpoint(dom.native(), const_cast<::fi_info*>(fi), &ep, nullptr); rc != 0)
        return native_unexpected(rc);
    auto out = adopt_native(ep, *fi, dom);
    out.mr_ = detail::resource_or_default(mr);
    return out;
}

auto endpoint::adopt_native(::fid_ep* ep, const ::fi_info& fi, domain& dom, detail::child_link owner, bool av_bound,
                            std::pmr::memory_resource* mr) -> endpoint {
    auto out = adopt_native(ep, fi, dom);
    out.owner_link_ = std::move(owner);
    out.has_av_ = av_bound;
    if (mr != nullptr) out.mr_ = mr;
    return out;
}

auto endpoint::adopt_native(::fid_ep* ep, const ::fi_info& fi, domain& dom) -> endpoint {
    endpoint out;
    out.h_ = detail::unique_fid<::fid_ep>{ep};
    out.h_.set_parent(dom.child_tracker());
    out.domain_ = dom.native();
    out.fabric_ = dom.fabric_native();
    out.mr_ = dom.memory_resource() != nullptr ? dom.memory_resource() : std::pmr::get_default_resource();
    out.caps_ = capability{fi.caps};
    out.type_ = fi.ep_attr ? static_cast<endpoint_types>(fi.ep_attr->type) : endpoint_types::unspecified;
    out.format_ = static_cast<address_format>(fi.addr_format);
    if (fi.tx_attr) {
        out.tx_flags_ = op_flag{fi.tx_attr->op_flags};
        out.limits_.tx = fi.tx_attr->iov_limit;
        out.limits_.rma = fi.tx_attr->rma_iov_limit;
        out.inject_size_ = fi.tx_attr->inject_size;
    }
    if (fi.rx_attr) {
        out.rx_flags_ = op_flag{fi.rx_attr->op_flags};
        out.limits_.rx = fi.rx_attr->iov_limit;
    }
    out.max_msg_size_ = fi.ep_attr ? fi.ep_attr->max_msg_size : 0;
    out.needs_context_ = (fi.mode & (FI_CONTEXT | FI_CONTEXT2)) != 0;
    out.needs_dest_ = out.type_ == endpoint_types::rdm || out.type_ == endpoint_types::dgram;
    out.quirks_ = quirks_of(fi);
    return out;
}

auto endpoint::quirks_for(const fabric_info& info) noexcept -> provider_quirks {
    const ::fi_info* fi = info.native();
    return fi != nullptr ? quirks_of(*fi) : provider_quirks{};
}

auto endpoint::bind_cq(completion_queue& cq, cq_bind flags) noexcept -> void_result {
    if (!h_ || !cq.valid()) return make_unexpected(errc::invalid_argument);
    if (enabled_) return make_unexpected(errc::bad_state);
    if (cq.domain_native() != domain_) return make_unexpected(errc::invalid_argument);
    constexpr auto known = cq_bind::transmit | cq_bind::recv | cq_bind::selective_completion;
    if (!(flags & (cq_bind::transmit | cq_bind::recv)) || !(flags & ~known).empty())
        return make_unexpected(errc::invalid_argument);
    auto r = check_native(::fi_ep_bind(h_.get(), &cq.native()->fid, flags.get()));
    if (r && (flags & cq_bind::selective_completion)) {
        if (flags & cq_bind::transmit) selective_tx_ = true;
        if (flags & cq_bind::recv) selective_rx_ = true;
    }
    return r;
}

auto endpoint::bind_av(address_vector& av) noexcept -> void_result {
    if (!h_ || !av.valid()) return make_unexpected(errc::invalid_argument);
    if (enabled_) return make_unexpected(errc::bad_state);
    if (av.domain_native() != domain_) return make_unexpected(errc::invalid_argument);
    // Connected (msg) endpoints have no address vector.
    if (type_ == endpoint_types::msg) return make_unexpected(errc::invalid_argument);
    auto r = check_native(::fi_ep_bind(h_.get(), &av.native()->fid, 0));
    if (r) has_av_ = true;
    return r;
}

auto endpoint::bind_counter(counter& c, counter_bind flags) noexcept -> void_result {
    if (!h_ || !c.valid()) return make_unexpected(errc::invalid_argument);
    if (enabled_) return make_unexpected(errc::bad_state);
    if (c.domain_native() != domain_) return make_unexpected(errc::invalid_argument);
    constexpr auto known = counter_bind::send | counter_bind::recv | counter_bind::read | counter_bind::write |
                           counter_bind::remote_read | counter_bind::remote_write;
    if (flags.empty() || !(flags & ~known).empty()) return make_unexpected(errc::invalid_argument);
    return check_native(::fi_ep_bind(h_.get(), &c.native()->fid, flags.get()));
}

auto endpoint::bind_srx(shared_rx_context& srx) noexcept -> void_result {
    if (!h_ || !srx.valid()) return make_unexpected(errc::invalid_argument);
    if (enabled_ || srx_link_) return make_unexpected(errc::bad_state);
    if (srx.domain_native() != domain_) return make_unexpected(errc::invalid_argument);
    if (!caps_.any(capability::msg | capability::tagged)) return make_unexpected(errc::invalid_argument);
    auto r = check_native(::fi_ep_bind(h_.get(), &srx.native()->fid, 0));
    if (r) srx_link_ = detail::child_link{srx.child_tracker()};
    return r;
}

auto endpoint::enable() noexcept -> void_result {
    if (!h_) return make_unexpected(errc::invalid_argument);
    if (enabled_) return {};
    if (needs_dest_ && !has_av_) return make_unexpected(errc::no_address_vector);
    auto r = check_native(::fi_enable(h_.get()));
    if (r) {
        enabled_ = true;
        refresh_gates();
    }
    return r;
}

auto endpoint::name() const -> result<address> {
    if (!h_) return make_unexpected(errc::bad_state);
    return detail::native_name(&h_.get()->fid, format_);
}

auto detail::native_name(::fid_t fid, address_format format) -> result<address> {
    // Socket and most provider addresses fit on the stack; a longer one is asked again into
    // a buffer of the size the provider reports.
    std::array<std::byte, 256> small{};
    std::size_t small_len = small.size();
    const int first = ::fi_getname(fid, small.data(), &small_len);
    if (first == 0) return address_from_raw(format, std::span{small}.first(small_len));
    if (first != -FI_ETOOSMALL) return native_unexpected(first);
    std::vector<std::byte> buf(small_len);
    for (int attempt = 0; attempt < 2; ++attempt) {
        std::size_t len = buf.size();
        const int rc = ::fi_getname(fid, buf.data(), &len);
        if (rc == 0) {
            buf.resize(len);
            return address_from_raw(format, buf);
        }
        if (rc != -FI_ETOOSMALL) return native_unexpected(rc);
        buf.resize(len);
    }
    return make_unexpected(errc::too_small);
}

auto endpoint::cancel(context_ptr<void> ctx) noexcept -> void_result {
    if (!h_) return make_unexpected(errc::bad_state);
    if (!ctx) return make_unexpected(errc::invalid_argument);
    return check_native(::fi_cancel(&h_.get()->fid, ctx.get()));
}

auto endpoint::set_min_multi_recv(std::size_t bytes) noexcept -> void_result {
    return set_endpoint_option(*this, ep_opt::level_endpoint, ep_opt::min_multi_recv, &bytes, sizeof bytes);
}

auto endpoint::send(std::span<const std::byte> data, const memory_region& mr, fabric_addr dest,
                    context_ptr<void> ctx) noexcept -> void_result {
    if (!mr.covers(*this, data)) return make_unexpected(errc::invalid_argument);
    return send(data, dest, mr.descriptor(), ctx);
}

auto endpoint::recv(std::span<std::byte> buffer, const memory_region& mr, fabric_addr src,
                    context_ptr<void> ctx) noexcept -> void_result {
    if (!mr.covers(*this, buffer)) return make_unexpected(errc::invalid_argument);
    return recv(buffer, src, mr.descriptor(), ctx);
}

auto endpoint::tagged_send(std::span<const std::byte> data, const memory_region& mr, std::uint64_t tag,
                           fabric_addr dest, context_ptr<void> ctx) noexcept -> void_result {
    if (!mr.covers(*this, data)) return make_unexpected(errc::invalid_argument);
    return tagged_send(data, tag, dest, mr.descriptor(), ctx);
}

auto endpoint::tagged_recv(std::span<std::byte> buffer, const memory_region& mr, std::uint64_t tag,
                           std::uint64_t ignore, fabric_addr src, context_ptr<void> ctx) noexcept -> void_result {
    if (!mr.covers(*this, buffer)) return make_unexpected(errc::invalid_argument);
    return tagged_recv(buffer, tag, ignore, src, mr.descriptor(), ctx);
}

auto endpoint::recv_multi(std::span<std::byte> buffer, void* desc, context_ptr<void> ctx, fabric_addr src) noexcept
    -> void_result {
    if (const int e = check_rx(capability::msg, src, ctx)) return fail(e);
    if (!caps_.any(capability::multi_recv)) return make_unexpected(errc::invalid_argument);
    if (!ctx) return make_unexpected(errc::invalid_argument);  // completions must be attributable
    ::iovec iov{buffer.data(), buffer.size()};
    const ::fi_msg m{&iov, &desc, 1, src.get(), ctx.get(), 0};
    return check_native(::fi_recvmsg(h_.get(), &m, FI_MULTI_RECV | FI_COMPLETION));
}

// ---------------------------------------------------------------- options
auto ep_opt::value_size(option o) noexcept -> std::size_t {
    switch (o) {
        case option::min_multi_recv:
        case option::cm_data_size:
        case option::buffered_min:
        case option::buffered_limit:
        case option::send_buf_size:
        case option::recv_buf_size:
        case option::tx_size:
        case option::rx_size:
        case option::max_msg_size:
        case option::max_tagged_size:
        case option::max_rma_size:
        case option::max_atomic_size:
        case option::inject_msg_size:
        case option::inject_tagged_size:
        case option::inject_rma_size:
        case option::inject_atomic_size: return sizeof(std::size_t);
        case option::hmem_p2p: return sizeof(int);
        case option::cuda_api_permitted:
        case option::shared_memory_permitted: return sizeof(bool);
        case option::xpu_trigger: return 0;  // reserved by libfabric
    }
    return 0;
}

namespace {
auto check_option(ep_opt::level level, ep_opt::option name) noexcept -> std::size_t {
    if (level != ep_opt::level::endpoint) return 0;
    return ep_opt::value_size(name);
}
}  // namespace

auto get_endpoint_option(const endpoint& ep, ep_opt::level level, ep_opt::option name, void* value,
                         std::size_t* length) noexcept -> void_result {
    const auto need = check_option(level, name);
    if (need == 0 || value == nullptr || length == nullptr || *length < need)
        return make_unexpected(errc::invalid_argument);
    return get_native_endpoint_option(ep, static_cast<int>(level), static_cast<int>(name), value, length);
}

auto set_endpoint_option(endpoint& ep, ep_opt::level level, ep_opt::option name, const void* value,
                         std::size_t length) noexcept -> void_result {
    const auto need = check_option(level, name);
    if (need == 0 || value == nullptr || length != need) return make_unexpected(errc::invalid_argument);
    return set_native_endpoint_option(ep, static_cast<int>(level), static_cast<int>(name), value, length);
}

auto get_native_endpoint_option(const endpoint& ep, int level, int name, void* value, std::size_t* length) noexcept
    -> void_result {
    if (!ep.valid()) return make_unexpected(errc::bad_state);
    if (ep.quirks_.getopt_needs_enable && !ep.enabled()) return make_unexpected(errc::bad_state);
    return check_native(::fi_getopt(&ep.native()->fid, level, name, value, length));
}

auto set_native_endpoint_option(endpoint& ep, int level, int name, const void* value, std::size_t length) noexcept
    -> void_result {
    if (!ep.valid()) return make_unexpected(errc::bad_state);
    return check_native(::fi_setopt(&ep.native()->fid, level, name, value, length));
}

}  // namespace loom
