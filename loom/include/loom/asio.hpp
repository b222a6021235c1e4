// loom/asio.hpp — the Asio front end (target loom::asio): fabric operations that take Asio
// completion tokens, driven by the io_context's fabric_service.
//
//   loom::asio::fabric_service    reads registered completion queues, runs handlers
//   loom::asio::endpoint          async_send/receive (+ _to/_from, tagged), async_read_from,
//                                 async_write_to, blocking send/receive, cancel, close
//   loom::asio::make_endpoint     creates, binds and enables an endpoint for Asio
//   loom::asio::mutable_registered_buffer / const_registered_buffer / registered_buffer_id /
//   loom::asio::buffer            buffers that carry their memory registration
//   loom::asio::initiate_fabric_* the same operations on a borrowed loom::endpoint
#pragma once

#include <loom/loom.hpp>

#include <loom/asio/endpoint.hpp>
#include <loom/asio/fabric_service.hpp>
#include <loom/asio/initiate.hpp>
#include <loom/asio/registered_buffer.hpp>
