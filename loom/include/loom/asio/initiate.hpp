// loom/asio/initiate.hpp — Asio completion tokens for operations on a borrowed loom::endpoint.
#pragma once

#include <loom/asio/detail/initiation.hpp>
#include <loom/asio/fabric_service.hpp>

#include <asio/execution/context.hpp>
#include <asio/query.hpp>

namespace loom::asio {

namespace detail {
/// The fabric service of the executor's io_context when it reads `cq` (the operation then
/// counts as its outstanding work and its handler runs from the service's passes); else null.
template <class Executor>
auto service_for(const Executor& ex, const completion_queue& cq) -> fabric_service* {
    auto& ctx = ::asio::query(ex, ::asio::execution::context);
    auto* ioc = dynamic_cast<::asio::io_context*>(&ctx);
    if (ioc == nullptr || !::asio::has_service<fabric_service>(*ioc)) return nullptr;
    auto& s = fabric_service::use(*ioc);
    return s.serves(cq) ? &s : nullptr;
}
template <op_kind Kind, class Executor, class Seq, class Token>
auto initiate_borrowed(const Executor& ex, loom::endpoint& ep, completion_queue& cq, const op_params& params,
                       const Seq& buffers, Token&& token) {
    return initiate<Kind>(ex, op_target{.service = service_for(ex, cq), .owner = nullptr, .cq = &cq, .ep = &ep}, params,
                          buffers, static_cast<Token&&>(token));
}
}  // namespace detail

// Operations on an endpoint the caller owns, completing on `cq` (the queue bound to the
// endpoint for that direction), with the same tokens, buffers and checks as loom::asio::endpoint.
// `ex` is the handler's default executor. Progress: a fabric_service of ex's io_context that
// reads `cq`, or any reader of `cq` that dispatches its events (cq.dispatch(event),
// loom::execution::poll_completions); without the service the handler is posted to its
// executor. Drain these operations before the endpoint or the queue goes away: nothing here
// keeps them alive or cancels them.

/// Sends the buffers on `ep` to `peer`, completing on `cq` (its transmit queue).
template <class Executor, class ConstBufferSequence, detail::completion_token Token>
auto initiate_fabric_send(const Executor& ex, loom::endpoint& ep, completion_queue& cq,
                          const ConstBufferSequence& buffers, Token&& token,
                          fabric_addr peer = fabric_addrs::unspecified) {
    return detail::initiate_borrowed<detail::op_kind::send>(ex, ep, cq, {.peer = peer}, buffers,
                                                            static_cast<Token&&>(token));
}

/// Receives a message into the buffers on `ep` (from `source` only, when given), completing on `cq`.
template <class Executor, class MutableBufferSequence, detail::completion_token Token>
auto initiate_fabric_receive(const Executor& ex, loom::endpoint& ep, completion_queue& cq,
                             const MutableBufferSequence& buffers, Token&& token,
                             fabric_addr source = fabric_addrs::unspecified) {
    return detail::initiate_borrowed<detail::op_kind::receive>(ex, ep, cq, {.peer = source}, buffers,
                                                               static_cast<Token&&>(token));
}

/// Sends the buffers on `ep` as a tagged message to `peer`, completing on `cq`.
template <class Executor, class ConstBufferSequence, detail::completion_token Token>
auto initiate_fabric_tagged_send(const Executor& ex, loom::endpoint& ep, completion_queue& cq,
                                 const ConstBufferSequence& buffers, std::uint64_t tag, Token&& token,
                                 fabric_addr peer = fabric_addrs::unspecified) {
    return detail::initiate_borrowed<detail::op_kind::send>(ex, ep, cq, {.peer = peer, .tag = tag, .tagged = true},
                                                            buffers, static_cast<Token&&>(token));
}

/// Receives a tagged message on `ep` whose tag equals `tag` in every bit not set in `ignore`, completing on `cq`.
template <class Executor, class MutableBufferSequence, detail::completion_token Token>
auto initiate_fabric_tagged_receive(const Executor& ex, loom::endpoint& ep, completion_queue& cq,
                                    const MutableBufferSequence& buffers, std::uint64_t tag, std::uint64_t ignore,
                                    Token&& token, fabric_addr source = fabric_addrs::unspecified) {
    return detail::initiate_borrowed<detail::op_kind::receive>(
        ex, ep, cq, {.peer = source, .tag = tag, .ignore = ignore, .tagged = true}, buffers,
        static_cast<Token&&>(token));
}

}  // namespace loom::asio
