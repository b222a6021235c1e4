// loom/asio/endpoint.hpp — a fabric endpoint whose operations take Asio completion tokens.
#pragma once

#include <loom/address_vector.hpp>
#include <loom/asio/detail/blocking_operation.hpp>
#include <loom/asio/detail/initiation.hpp>
#include <loom/asio/fabric_service.hpp>
#include <loom/domain.hpp>
#include <loom/fabric_info.hpp>

#include <asio/io_context.hpp>

#include <system_error>

namespace loom::asio {

/// An endpoint bound to completion queues that the io_context's fabric_service reads. Every
/// async_* operation takes any completion token (callbacks, use_awaitable, use_future,
/// deferred, as_tuple, ...) and completes with void(std::error_code, std::size_t): the message
/// length for receives, the bytes moved otherwise. The handler's associated executor,
/// allocator and cancellation slot are honoured; a cancelled operation reports
/// asio::error::operation_aborted. Failures found before submission (a buffer outside its
/// registration, a closed endpoint, ...) are reported through the handler, never thrown.
///
/// Buffers: any Asio buffer sequence, whose elements may be registered buffers
/// (mutable_registered_buffer, const_registered_buffer: their registration's descriptor goes
/// with them). Buffers, registrations, queues and the executor stay borrowed until the handler
/// runs. An operation counts as outstanding work of a handler executor other than the
/// endpoint's; the endpoint's io_context keeps running while operations are outstanding
/// because the started service polls for them.
class endpoint {
public:
    /// The io_context's executor, which runs the handlers unless they name their own.
    using executor_type = ::asio::io_context::executor_type;

    /// Takes `ep` (enabled, bound to `tx_cq` for transmits and `rx_cq` for receives; they may
    /// be the same queue). Register the queues with fabric_service::use(ioc) and start it.
    endpoint(::asio::io_context& ioc, loom::endpoint ep, completion_queue& tx_cq, completion_queue& rx_cq);
    /// Takes over `other`'s endpoint and outstanding operations.
    endpoint(endpoint&& other) noexcept;
    /// Cancels the operations of the endpoint this one held (see the destructor).
    auto operator=(endpoint&& other) noexcept -> endpoint&;
    endpoint(const endpoint&) = delete;
    auto operator=(const endpoint&) -> endpoint& = delete;
    /// Requests cancellation of every outstanding operation and keeps the native endpoint
    /// open until each has completed. Not a shutdown: drain or close() first.
    ~endpoint();

    /// The endpoint's executor.
    [[nodiscard]] auto get_executor() const noexcept -> executor_type { return ex_; }
    /// The loom endpoint underneath (for queries and core operations).
    [[nodiscard]] auto native() noexcept -> loom::endpoint&;
    /// The loom endpoint underneath (for queries).
    [[nodiscard]] auto native() const noexcept -> const loom::endpoint&;
    /// True while the native endpoint is open.
    [[nodiscard]] auto is_open() const noexcept -> bool { return state_ != nullptr && state_->ep.valid(); }
    /// Where async_send, async_tagged_send and the blocking send go (a peer from the address
    /// vector); fabric_addrs::unspecified (the default) is the endpoint's connection.
    void set_default_peer(fabric_addr peer) noexcept;
    /// The peer set with set_default_peer().
    [[nodiscard]] auto default_peer() const noexcept -> fabric_addr;
    /// Operations started and not yet completed.
    [[nodiscard]] auto outstanding_operations() const noexcept -> std::size_t;

    // ------------------------------------------------------------ messages
    /// Sends the buffers to the default peer.
    template <class ConstBufferSequence, detail::completion_token Token>
    auto async_send(const ConstBufferSequence& buffers, Token&& token);
    /// Receives a message into the buffers, from any source.
    template <class MutableBufferSequence, detail::completion_token Token>
    auto async_receive(const MutableBufferSequence& buffers, Token&& token);
    /// Sends the buffers to `peer`.
    template <class ConstBufferSequence, detail::completion_token Token>
    auto async_send_to(const ConstBufferSequence& buffers, fabric_addr peer, Token&& token);
    /// Only messages from `source` (fabric_addrs::unspecified: any; a specific source needs
    /// capability::directed_recv).
    template <class MutableBufferSequence, detail::completion_token Token>
    auto async_receive_from(const MutableBufferSequence& buffers, fabric_addr source, Token&& token);

    // ------------------------------------------------------------ tagged messages
    /// Sends the buffers as a tagged message to the default peer.
    template <class ConstBufferSequence, detail::completion_token Token>
    auto async_tagged_send(const ConstBufferSequence& buffers, std::uint64_t tag, Token&& token);
    /// Messages whose tag equals `tag` in every bit not set in `ignore`.
    template <class MutableBufferSequence, detail::completion_token Token>
    auto async_tagged_receive(const MutableBufferSequence& buffers, std::uint64_t tag, std::uint64_t ignore,
                              Token&& token);
    /// Receives a message whose tag equals `tag` exactly.
    template <class MutableBufferSequence, detail::completion_token Token>
    auto async_tagged_receive(const MutableBufferSequence& buffers, std::uint64_t tag, Token&& token);
    /// Sends the buffers as a tagged message to `peer`.
    template <class ConstBufferSequence, detail::completion_token Token>
    auto async_tagged_send_to(const ConstBufferSequence& buffers, fabric_addr peer, std::uint64_t tag, Token&& token);
    /// Receives a tagged message from `source` whose tag equals `tag` in every bit not set in `ignore`.
    template <class MutableBufferSequence, detail::completion_token Token>
    auto async_tagged_receive_from(const MutableBufferSequence& buffers, fabric_addr source, std::uint64_t tag,
                                   std::uint64_t ignore, Token&& token);
    /// Receives a tagged message from `source` whose tag equals `tag` exactly.
    template <class MutableBufferSequence, detail::completion_token Token>
    auto async_tagged_receive_from(const MutableBufferSequence& buffers, fabric_addr source, std::uint64_t tag,
                                   Token&& token);

    // ------------------------------------------------------------ RMA
    /// Reads the buffers' total length from the start of `remote` (at least that long) at
    /// `peer`; every buffer must lie in `local_mr` (invalid_argument otherwise, before
    /// submission).
    template <class MutableBufferSequence, detail::completion_token Token>
    auto async_read_from(const MutableBufferSequence& buffers, const memory_region& local_mr, fabric_addr peer,
                         const remote_memory& remote, Token&& token);
    /// Writes the buffers' total length to the start of `remote` (at least that long) at `peer`; every buffer must lie
    /// in `local_mr`.
    template <class ConstBufferSequence, detail::completion_token Token>
    auto async_write_to(const ConstBufferSequence& buffers, const memory_region& local_mr, fabric_addr peer,
                        const remote_memory& remote, Token&& token);
    /// The connected peer, no local registration: for configurations where both are valid.
    template <class MutableBufferSequence, detail::completion_token Token>
    auto async_read(const MutableBufferSequence& buffers, std::uint64_t remote_addr, std::uint64_t key, Token&& token);
    /// The connected peer, no local registration: a write to `remote_addr` under `key`.
    template <class ConstBufferSequence, detail::completion_token Token>
    auto async_write(const ConstBufferSequence& buffers, std::uint64_t remote_addr, std::uint64_t key, Token&& token);

    // ------------------------------------------------------------ blocking forms
    /// Submits the whole sequence to the default peer and reads the transmit queue until this
    /// send completes, without running any executor (other events stay in the queue's
    /// registry for its other readers). Throws std::system_error on failure.
    template <class ConstBufferSequence>
    auto send(const ConstBufferSequence& buffers) -> std::size_t;
    /// send() reporting failure in `ec` instead of throwing.
    template <class ConstBufferSequence>
    auto send(const ConstBufferSequence& buffers, std::error_code& ec) -> std::size_t;
    /// The same for a receive: the message length (with an error, the bytes it reports).
    template <class MutableBufferSequence>
    auto receive(const MutableBufferSequence& buffers) -> std::size_t;
    /// receive() reporting failure in `ec` instead of throwing.
    template <class MutableBufferSequence>
    auto receive(const MutableBufferSequence& buffers, std::error_code& ec) -> std::size_t;

    // ------------------------------------------------------------ shutdown
    /// Requests cancellation of every outstanding operation (fi_cancel; one still waiting for
    /// resubmission ends at once): cancelled ones report asio::error::operation_aborted.
    void cancel();
    /// Closes the native endpoint. On success the operations still registered are released
    /// and their handlers posted with errc::canceled; on failure (ec) the endpoint and its
    /// operations stay as they were. Stop the service's polling (and other readers of the
    /// queues) first; blocking calls must have returned.
    void close(std::error_code& ec);
    /// The same; throws std::system_error on failure.
    void close();

private:
    [[nodiscard]] auto target(bool transmit) const noexcept -> detail::op_target;
    template <detail::op_kind Kind, class Seq, class Token>
    auto start(bool transmit, const detail::op_params& params, const Seq& buffers, Token&& token);
    template <detail::op_kind Kind, class Seq>
    auto run_blocking(bool transmit, const Seq& buffers, std::error_code& ec) -> std::size_t;
    void cancel_all() noexcept;

    executor_type ex_;
    detail::endpoint_state* state_;
};

/// Creates an endpoint from `info`, binds `cq` for transmits and receives and `av`, enables it
/// and wraps it for Asio (the queue's registration with the service stays the caller's).
[[nodiscard]] auto make_endpoint(::asio::io_context& ioc, domain& dom, const fabric_info& info, completion_queue& cq,
                                 address_vector& av) -> result<endpoint>;
/// The same with a queue per direction.
[[nodiscard]] auto make_endpoint(::asio::io_context& ioc, domain& dom, const fabric_info& info, completion_queue& tx_cq,
                                 completion_queue& rx_cq, address_vector& av) -> result<endpoint>;

}  // namespace loom::asio

#include <loom/asio/impl/endpoint.hpp>
