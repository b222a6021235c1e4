// loom/execution/message_senders.hpp — senders of messaging operations: loom::async(ep).
#pragma once

#include <loom/execution/detail/message_descriptions.hpp>

namespace loom {

/// Senders of an endpoint's message operations. Each sender borrows the endpoint, the queue its
/// operation completes on (bind the endpoint to it), the buffer and any registration until
/// completion; it copies descriptors, addresses and tags. Sends complete with set_value(),
/// receives with set_value(std::size_t message_length); failures with
/// set_error(std::error_code) (errc::truncated for a message longer than the buffer), and a
/// cancelled operation with set_stopped(). Progress: loom::execution::poll_completions(cq).
class message_senders {
public:
    /// The sender of a send: completes with set_value().
    using send_sender = execution::detail::fabric_sender<execution::detail::send_description>;
    /// The sender of a receive: completes with set_value(std::size_t message_length).
    using receive_sender = execution::detail::fabric_sender<execution::detail::receive_description>;

    /// The senders of `ep` (borrowed).
    explicit message_senders(endpoint& ep) noexcept : ep_(&ep) {}

    /// To the endpoint's connection (or its only peer): no descriptor.
    [[nodiscard]] auto send(std::span<const std::byte> buffer, completion_queue* cq) const -> send_sender {
        return send_to(buffer, nullptr, fabric_addrs::unspecified, cq);
    }
    /// From the endpoint's connection (or anyone): no descriptor.
    [[nodiscard]] auto recv(std::span<std::byte> buffer, completion_queue* cq) const -> receive_sender {
        return recv_from(buffer, nullptr, fabric_addrs::unspecified, cq);
    }
    /// To `peer`, with the registration's descriptor `desc` (or null).
    [[nodiscard]] auto send_to(std::span<const std::byte> buffer, void* desc, fabric_addr peer,
                               completion_queue* cq) const -> send_sender {
        return sender_of(execution::detail::send_description{buffer, desc, peer, 0, false}, cq);
    }
    /// `source`: fabric_addrs::unspecified for any sender (a specific one needs directed receive).
    [[nodiscard]] auto recv_from(std::span<std::byte> buffer, void* desc, fabric_addr source,
                                 completion_queue* cq) const -> receive_sender {
        return sender_of(execution::detail::receive_description{buffer, desc, source, 0, 0, false}, cq);
    }
    /// A tagged send to the endpoint's connection (or its only peer): no descriptor.
    [[nodiscard]] auto tagged_send(std::span<const std::byte> buffer, std::uint64_t tag, completion_queue* cq) const
        -> send_sender {
        return tagged_send_to(buffer, nullptr, fabric_addrs::unspecified, tag, cq);
    }
    /// A tagged receive of messages whose tag equals `tag` in every bit not set in `ignore`, from anyone.
    [[nodiscard]] auto tagged_recv(std::span<std::byte> buffer, std::uint64_t tag, std::uint64_t ignore,
                                   completion_queue* cq) const -> receive_sender {
        return tagged_recv_from(buffer, nullptr, fabric_addrs::unspecified, tag, ignore, cq);
    }
    /// A tagged send to `peer`, with descriptor `desc` (or null).
    [[nodiscard]] auto tagged_send_to(std::span<const std::byte> buffer, void* desc, fabric_addr peer,
                                      std::uint64_t tag, completion_queue* cq) const -> send_sender {
        return sender_of(execution::detail::send_description{buffer, desc, peer, tag, true}, cq);
    }
    /// A tagged receive from `source` only (unspecified: anyone), with descriptor `desc` (or null).
    [[nodiscard]] auto tagged_recv_from(std::span<std::byte> buffer, void* desc, fabric_addr source, std::uint64_t tag,
                                        std::uint64_t ignore, completion_queue* cq) const -> receive_sender {
        return sender_of(execution::detail::receive_description{buffer, desc, source, tag, ignore, true}, cq);
    }

private:
    template <class D>
    [[nodiscard]] auto sender_of(const D& d, completion_queue* cq) const -> execution::detail::fabric_sender<D> {
        return {d, ep_, cq};
    }
    endpoint* ep_;
};

/// The message senders of `ep` (borrowed).
[[nodiscard]] inline auto async(endpoint& ep) noexcept -> message_senders { return message_senders{ep}; }

}  // namespace loom
