// loom/asio/impl/endpoint.hpp — inline bodies of loom/asio/endpoint.hpp.
#pragma once

#include <system_error>
#include <utility>

namespace loom::asio {

inline endpoint::endpoint(::asio::io_context& ioc, loom::endpoint ep, completion_queue& tx_cq, completion_queue& rx_cq)
    : ex_(ioc.get_executor()),
      state_(new detail::endpoint_state(std::move(ep), &tx_cq, &rx_cq, &fabric_service::use(ioc),
                                        fabric_service::use(ioc).one_thread())) {}

inline endpoint::endpoint(endpoint&& other) noexcept : ex_(other.ex_), state_(std::exchange(other.state_, nullptr)) {}

inline auto endpoint::operator=(endpoint&& other) noexcept -> endpoint& {
    if (this == &other) return *this;
    if (state_ != nullptr) {
        cancel_all();
        state_->release();
    }
    ex_ = other.ex_;
    state_ = std::exchange(other.state_, nullptr);
    return *this;
}

inline endpoint::~endpoint() {
    if (state_ == nullptr) return;
    cancel_all();
    state_->release();  // the native endpoint closes when the last operation has completed
}

inline auto endpoint::native() noexcept -> loom::endpoint& { return state_->ep; }
inline auto endpoint::native() const noexcept -> const loom::endpoint& { return state_->ep; }

inline void endpoint::set_default_peer(fabric_addr peer) noexcept {
    if (state_ != nullptr) state_->default_peer = peer;
}
inline auto endpoint::default_peer() const noexcept -> fabric_addr {
    return state_ != nullptr ? state_->default_peer : fabric_addrs::unspecified;
}
inline auto endpoint::outstanding_operations() const noexcept -> std::size_t {
    return state_ != nullptr ? static_cast<std::size_t>(state_->operations()) : 0;
}

inline auto endpoint::target(bool transmit) const noexcept -> detail::op_target {
    // Closed, moved from or never enabled: nothing takes operations (the gates would refuse them
    // as well). enabled() lies on the line every operation reads; valid() would cost another.
    if (state_ == nullptr || !state_->ep.enabled()) return {nullptr, nullptr, nullptr, nullptr};
    return {
        .service = state_->service, .owner = state_, .cq = transmit ? state_->tx_cq : state_->rx_cq, .ep = &state_->ep};
}

template <detail::op_kind Kind, class Seq, class Token>
auto endpoint::start(bool transmit, const detail::op_params& params, const Seq& buffers, Token&& token) {
    return detail::initiate<Kind>(ex_, target(transmit), params, buffers, static_cast<Token&&>(token));
}

// ---------------------------------------------------------------- messages
template <class ConstBufferSequence, detail::completion_token Token>
auto endpoint::async_send(const ConstBufferSequence& buffers, Token&& token) {
    return async_send_to(buffers, default_peer(), static_cast<Token&&>(token));
}
template <class MutableBufferSequence, detail::completion_token Token>
auto endpoint::async_receive(const MutableBufferSequence& buffers, Token&& token) {
    return async_receive_from(buffers, fabric_addrs::unspecified, static_cast<Token&&>(token));
}
template <class ConstBufferSequence, detail::completion_token Token>
auto endpoint::async_send_to(const ConstBufferSequence& buffers, fabric_addr peer, Token&& token) {
    return start<detail::op_kind::send>(true, {.peer = peer}, buffers, static_cast<Token&&>(token));
}
template <class MutableBufferSequence, detail::completion_token Token>
auto endpoint::async_receive_from(const MutableBufferSequence& buffers, fabric_addr source, Token&& token) {
    return start<detail::op_kind::receive>(false, {.peer = source}, buffers, static_cast<Token&&>(token));
}

// ---------------------------------------------------------------- tagged messages
template <class ConstBufferSequence, detail::completion_token Token>
auto endpoint::async_tagged_send(const ConstBufferSequence& buffers, std::uint64_t tag, Token&& token) {
    return async_tagged_send_to(buffers, default_peer(), tag, static_cast<Token&&>(token));
}
template <class MutableBufferSequence, detail::completion_token Token>
auto endpoint::async_tagged_receive(const MutableBufferSequence& buffers, std::uint64_t tag, std::uint64_t ignore,
                                    Token&& token) {
    return async_tagged_receive_from(buffers, fabric_addrs::unspecified, tag, ignore, static_cast<Token&&>(token));
}
template <class MutableBufferSequence, detail::completion_token Token>
auto endpoint::async_tagged_receive(const MutableBufferSequence& buffers, std::uint64_t tag, Token&& token) {
    return async_tagged_receive_from(buffers, fabric_addrs::unspecified, tag, 0, static_cast<Token&&>(token));
}
template <class ConstBufferSequence, detail::completion_token Token>
auto endpoint::async_tagged_send_to(const ConstBufferSequence& buffers, fabric_addr peer, std::uint64_t tag,
                                    Token&& token) {
    return start<detail::op_kind::send>(true, {.peer = peer, .tag = tag, .tagged = true}, buffers,
                                        static_cast<Token&&>(token));
}
template <class MutableBufferSequence, detail::completion_token Token>
auto endpoint::async_tagged_receive_from(const MutableBufferSequence& buffers, fabric_addr source, std::uint64_t tag,
                                         std::uint64_t ignore, Token&& token) {
    return start<detail::op_kind::receive>(false, {.peer = source, .tag = tag, .ignore = ignore, .tagged = true},
                                           buffers, static_cast<Token&&>(token));
}
template <class MutableBufferSequence, detail::completion_token Token>
auto endpoint::async_tagged_receive_from(const MutableBufferSequence& buffers, fabric_addr source, std::uint64_t tag,
                                         Token&& token) {
    return async_tagged_receive_from(buffers, source, tag, 0, static_cast<Token&&>(token));
}

// ---------------------------------------------------------------- RMA
template <class MutableBufferSequence, detail::completion_token Token>
auto endpoint::async_read_from(const MutableBufferSequence& buffers, const memory_region& local_mr, fabric_addr peer,
                               const remote_memory& remote, Token&& token) {
    return start<detail::op_kind::read>(true, {.peer = peer, .rma_mr = &local_mr, .remote = remote}, buffers,
                                        static_cast<Token&&>(token));
}
template <class ConstBufferSequence, detail::completion_token Token>
auto endpoint::async_write_to(const ConstBufferSequence& buffers, const memory_region& local_mr, fabric_addr peer,
                              const remote_memory& remote, Token&& token) {
    return start<detail::op_kind::write>(true, {.peer = peer, .rma_mr = &local_mr, .remote = remote}, buffers,
                                         static_cast<Token&&>(token));
}
template <class MutableBufferSequence, detail::completion_token Token>
auto endpoint::async_read(const MutableBufferSequence& buffers, std::uint64_t remote_addr, std::uint64_t key,
                          Token&& token) {
    const remote_memory remote{remote_addr, key, ~std::size_t{0} - remote_addr};  // as long as the buffers
    return start<detail::op_kind::read>(true, {.remote = remote}, buffers, static_cast<Token&&>(token));
}
template <class ConstBufferSequence, detail::completion_token Token>
auto endpoint::async_write(const ConstBufferSequence& buffers, std::uint64_t remote_addr, std::uint64_t key,
                           Token&& token) {
    const remote_memory remote{remote_addr, key, ~std::size_t{0} - remote_addr};
    return start<detail::op_kind::write>(true, {.remote = remote}, buffers, static_cast<Token&&>(token));
}

// ---------------------------------------------------------------- blocking forms
template <detail::op_kind Kind, class Seq>
auto endpoint::run_blocking(bool transmit, const Seq& buffers, std::error_code& ec) -> std::size_t {
    const detail::op_target t = target(transmit);
    if (t.ep == nullptr || t.cq == nullptr) {
        ec = make_error_code(errc::bad_state);
        return 0;
    }
    detail::blocking_operation op(*t.ep, *t.cq);
    const detail::op_params params{.peer = transmit ? default_peer() : fabric_addrs::unspecified};
    return op.template run<Kind>(params, buffers, ec);
}
template <class ConstBufferSequence>
auto endpoint::send(const ConstBufferSequence& buffers, std::error_code& ec) -> std::size_t {
    return run_blocking<detail::op_kind::send>(true, buffers, ec);
}
template <class ConstBufferSequence>
auto endpoint::send(const ConstBufferSequence& buffers) -> std::size_t {
    std::error_code ec;
    const std::size_t n = send(buffers, ec);
    if (ec) throw std::system_error(ec, "loom::asio::endpoint::send");
    return n;
}
template <class MutableBufferSequence>
auto endpoint::receive(const MutableBufferSequence& buffers, std::error_code& ec) -> std::size_t {
    return run_blocking<detail::op_kind::receive>(false, buffers, ec);
}
template <class MutableBufferSequence>
auto endpoint::receive(const MutableBufferSequence& buffers) -> std::size_t {
    std::error_code ec;
    const std::size_t n = receive(buffers, ec);
    if (ec) throw std::system_error(ec, "loom::asio::endpoint::receive");
    return n;
}

// ---------------------------------------------------------------- shutdown
inline void endpoint::cancel_all() noexcept {
    auto cancel_one = [](registered_completion& op, bool deferred, void* state) noexcept {
        if (deferred) return static_cast<detail::operation_base&>(op).end_deferred();  // never submitted
        (void)static_cast<detail::endpoint_state*>(state)->ep.cancel(op.context());
    };
    state_->tx_cq->registry()->visit_owned(state_, cancel_one, state_);
    if (state_->rx_cq != state_->tx_cq) state_->rx_cq->registry()->visit_owned(state_, cancel_one, state_);
}

inline void endpoint::cancel() {
    if (state_ != nullptr && state_->ep.valid()) cancel_all();
}

inline void endpoint::close(std::error_code& ec) {
    if (state_ == nullptr || !state_->ep.valid()) {
        ec = make_error_code(errc::bad_state);
        return;
    }
    if (auto r = state_->ep.close(); !r) {
        ec = r.error();  // the endpoint and its operations stay
        return;
    }
    ec.clear();
    auto release = [](registered_completion& op, bool, void*) noexcept {
        static_cast<detail::operation_base&>(op).end_by_close();
    };
    state_->tx_cq->registry()->remove_owned(state_, release, nullptr);
    if (state_->rx_cq != state_->tx_cq) state_->rx_cq->registry()->remove_owned(state_, release, nullptr);
}

inline void endpoint::close() {
    std::error_code ec;
    close(ec);
    if (ec) throw std::system_error(ec, "loom::asio::endpoint::close");
}

// ---------------------------------------------------------------- creation
inline auto make_endpoint(::asio::io_context& ioc, domain& dom, const fabric_info& info, completion_queue& tx_cq,
                          completion_queue& rx_cq, address_vector& av) -> result<endpoint> {
    auto ep = loom::endpoint::create(dom, info);
    if (!ep) return std::unexpected(ep.error());
    if (&tx_cq == &rx_cq) {
        if (auto r = ep->bind_cq(tx_cq, cq_bind::transmit | cq_bind::recv); !r) return std::unexpected(r.error());
    } else {
        if (auto r = ep->bind_cq(tx_cq, cq_bind::transmit); !r) return std::unexpected(r.error());
        if (auto r = ep->bind_cq(rx_cq, cq_bind::recv); !r) return std::unexpected(r.error());
    }
    if (auto r = ep->bind_av(av); !r) return std::unexpected(r.error());
    if (auto r = ep->enable(); !r) return std::unexpected(r.error());
    return endpoint(ioc, std::move(*ep), tx_cq, rx_cq);
}

inline auto make_endpoint(::asio::io_context& ioc, domain& dom, const fabric_info& info, completion_queue& cq,
                          address_vector& av) -> result<endpoint> {
    return make_endpoint(ioc, dom, info, cq, cq, av);
}

}  // namespace loom::asio
