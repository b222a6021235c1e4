// loom/endpoint_options.hpp — the identifiers of endpoint options (fi_getopt / fi_setopt); the
// calls that read and set them are in loom/endpoint.hpp.
#pragma once

#include <cstddef>

/// Scoped endpoint-option identifiers (fi_getopt/fi_setopt).
namespace loom::ep_opt {
/// Option levels (FI_OPT_ENDPOINT).
enum class level : int {
    endpoint = 0  ///< FI_OPT_ENDPOINT: options of the endpoint itself
};
/// Shorthand for level::endpoint.
inline constexpr level level_endpoint = level::endpoint;
/// Endpoint options (FI_OPT_*), same values.
enum class option : int {
    min_multi_recv = 0,       ///< FI_OPT_MIN_MULTI_RECV: space left when a multi-receive buffer is released
    cm_data_size,             ///< FI_OPT_CM_DATA_SIZE: connection data the endpoint can carry
    buffered_min,             ///< FI_OPT_BUFFERED_MIN: bytes of an unexpected message buffered before it is reported
    buffered_limit,           ///< FI_OPT_BUFFERED_LIMIT: largest unexpected message the provider buffers
    send_buf_size,            ///< FI_OPT_SEND_BUF_SIZE: the socket's send buffer
    recv_buf_size,            ///< FI_OPT_RECV_BUF_SIZE: the socket's receive buffer
    tx_size,                  ///< FI_OPT_TX_SIZE: transmit queue depth
    rx_size,                  ///< FI_OPT_RX_SIZE: receive queue depth
    hmem_p2p,                 ///< FI_OPT_FI_HMEM_P2P: peer-to-peer policy for device memory
    xpu_trigger,              ///< FI_OPT_XPU_TRIGGER: triggers for device-initiated operations
    cuda_api_permitted,       ///< FI_OPT_CUDA_API_PERMITTED: whether the provider may call CUDA
    shared_memory_permitted,  ///< FI_OPT_SHARED_MEMORY_PERMITTED: whether the provider may use shared memory
    max_msg_size,             ///< FI_OPT_MAX_MSG_SIZE: largest message
    max_tagged_size,          ///< FI_OPT_MAX_TAGGED_SIZE: largest tagged message
    max_rma_size,             ///< FI_OPT_MAX_RMA_SIZE: largest RMA transfer
    max_atomic_size,          ///< FI_OPT_MAX_ATOMIC_SIZE: largest atomic transfer
    inject_msg_size,          ///< FI_OPT_INJECT_MSG_SIZE: largest injected message
    inject_tagged_size,       ///< FI_OPT_INJECT_TAGGED_SIZE: largest injected tagged message
    inject_rma_size,          ///< FI_OPT_INJECT_RMA_SIZE: largest injected RMA write
    inject_atomic_size,       ///< FI_OPT_INJECT_ATOMIC_SIZE: largest injected atomic
};
/// FI_OPT_MIN_MULTI_RECV: space left when a multi-receive buffer is released.
inline constexpr option min_multi_recv = option::min_multi_recv;
/// FI_OPT_CM_DATA_SIZE: connection data the endpoint can carry.
inline constexpr option cm_data_size = option::cm_data_size;
/// FI_OPT_BUFFERED_MIN: bytes of an unexpected message buffered before it is reported.
inline constexpr option buffered_min = option::buffered_min;
/// FI_OPT_BUFFERED_LIMIT: largest unexpected message the provider buffers.
inline constexpr option buffered_limit = option::buffered_limit;
/// FI_OPT_SEND_BUF_SIZE: the socket's send buffer.
inline constexpr option send_buf_size = option::send_buf_size;
/// FI_OPT_RECV_BUF_SIZE: the socket's receive buffer.
inline constexpr option recv_buf_size = option::recv_buf_size;
/// FI_OPT_TX_SIZE: transmit queue depth.
inline constexpr option tx_size = option::tx_size;
/// FI_OPT_RX_SIZE: receive queue depth.
inline constexpr option rx_size = option::rx_size;
/// FI_OPT_FI_HMEM_P2P: peer-to-peer policy for device memory.
inline constexpr option hmem_p2p = option::hmem_p2p;
/// FI_OPT_XPU_TRIGGER: triggers for device-initiated operations.
inline constexpr option xpu_trigger = option::xpu_trigger;
/// FI_OPT_CUDA_API_PERMITTED: whether the provider may call CUDA.
inline constexpr option cuda_api_permitted = option::cuda_api_permitted;
/// FI_OPT_SHARED_MEMORY_PERMITTED: whether the provider may use shared memory.
inline constexpr option shared_memory_permitted = option::shared_memory_permitted;
/// FI_OPT_MAX_MSG_SIZE: largest message.
inline constexpr option max_msg_size = option::max_msg_size;
/// FI_OPT_MAX_TAGGED_SIZE: largest tagged message.
inline constexpr option max_tagged_size = option::max_tagged_size;
/// FI_OPT_MAX_RMA_SIZE: largest RMA transfer.
inline constexpr option max_rma_size = option::max_rma_size;
/// FI_OPT_MAX_ATOMIC_SIZE: largest atomic transfer.
inline constexpr option max_atomic_size = option::max_atomic_size;
/// FI_OPT_INJECT_MSG_SIZE: largest injected message.
inline constexpr option inject_msg_size = option::inject_msg_size;
/// FI_OPT_INJECT_TAGGED_SIZE: largest injected tagged message.
inline constexpr option inject_tagged_size = option::inject_tagged_size;
/// FI_OPT_INJECT_RMA_SIZE: largest injected RMA write.
inline constexpr option inject_rma_size = option::inject_rma_size;
/// FI_OPT_INJECT_ATOMIC_SIZE: largest injected atomic.
inline constexpr option inject_atomic_size = option::inject_atomic_size;
/// The value size an option takes, or 0 for an unknown/unsupported identifier.
[[nodiscard]] auto value_size(option o) noexcept -> std::size_t;
}  // namespace loom::ep_opt
