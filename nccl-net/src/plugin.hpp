// The NCCL adaptor's one implementation of the net ABI (plugin.cpp), with size_t sizes and
// NCCL's v12 types; versions.cpp exports the per-version tables over it.
#pragma once

#include <loom/nccl/net_abi.hpp>

#include <cstddef>
#include <cstdint>

namespace loom::nccl_net {

using namespace loom::nccl_abi;

auto init_common(logger_t log, profiler_callback_t prof = nullptr) -> result_t;
auto finalize_common() -> result_t;
auto devices(int* ndev) -> result_t;
auto get_properties(int dev, properties_v12& p) -> result_t;

auto listen(int dev, void* handle, void** listen_comm) -> result_t;
auto connect(int dev, void* handle, void** send_comm, device_handle_v7** dev_comm) -> result_t;
auto accept(void* listen_comm, void** recv_comm, device_handle_v7** dev_comm) -> result_t;
auto close_listen(void* comm) -> result_t;
auto close_send(void* comm) -> result_t;
auto close_recv(void* comm) -> result_t;

auto reg_mr_dmabuf(void* comm, void* data, std::size_t size, int type, std::uint64_t offset, int fd, void** mhandle)
    -> result_t;
auto reg_mr(void* comm, void* data, std::size_t size, int type, void** mhandle) -> result_t;
auto dereg_mr(void* comm, void* mhandle) -> result_t;

auto isend(void* send_comm, void* data, std::size_t size, int tag, void* mhandle, void* phandle, void** request)
    -> result_t;
auto isend_int(void* send_comm, void* data, int size, int tag, void* mhandle, void** request) -> result_t;
auto irecv(void* recv_comm, int n, void** data, const std::size_t* sizes, int* tags, void** mhandles, void** phandles,
           void** request) -> result_t;
auto irecv_int(void* recv_comm, int n, void** data, int* sizes, int* tags, void** mhandles, void** request) -> result_t;
auto iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles, void** request) -> result_t;
auto test(void* request, int* done, int* sizes) -> result_t;
auto get_device_mr(void* comm, void* mhandle, void** dptr) -> result_t;
auto irecv_consumed(void* recv_comm, int n, void* request) -> result_t;
auto make_vdevice(int* d, int ndevs, const int* devs, int max_devs) -> result_t;

}  // namespace loom::nccl_net
