// Registrations: host memory through the MR caches, device memory and DMA-BUFs exactly.
#include "engine_internals.hpp"

#include <loom/gpu/cuda.hpp>
#include <loom/plugins/log.hpp>

#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <algorithm>
#include <cstring>

namespace loom::plugins {

using namespace engine_detail;
using match_bits::make_tag;

// ---------------------------------------------------------------- registration
auto engine::hmem() const noexcept -> bool {
    const ::fi_info* info = nic_.info.native();
    return info != nullptr && (info->caps & FI_HMEM) != 0;
}

auto locate_cuda_memory(const engine& e, const void* data, std::size_t size) -> result<device_memory> {
    if (!e.hmem()) {
        LOOM_WARN("CUDA memory registration requested, but {} was not opened with FI_HMEM", e.nic_info().provider);
        return make_unexpected(errc::not_supported);
    }
    auto cuda = gpu::cuda_driver::instance();
    if (!cuda) {
        LOOM_WARN("CUDA memory registration requested without a CUDA driver: {}",
                  gpu::cuda_driver::unavailable_reason());
        return make_unexpected(errc::not_supported);
    }
    auto where = (*cuda)->pointer_info(data);
    if (!where || where->type != gpu::memory_type::device ||
        reinterpret_cast<std::uintptr_t>(data) + size > where->base + where->size) {
        LOOM_WARN("registration of {} bytes of device memory at {}: not inside one device allocation", size, data);
        return make_unexpected(errc::invalid_argument);
    }
    return device_memory{.iface = hmem_iface::cuda, .device = static_cast<std::uint64_t>(where->device)};
}

auto engine::register_memory(void* data, std::size_t size, const device_memory* dev) -> result<memory_handle*> {
    if (data == nullptr || size == 0) return make_unexpected(errc::invalid_argument);
    const std::span<std::byte> buf{static_cast<std::byte*>(data), size};
    if (dev != nullptr && dev->iface != hmem_iface::system && !hmem()) return make_unexpected(errc::not_supported);
    if (dev != nullptr && dev->dmabuf_fd >= 0 &&
        (dev->dmabuf_offset > reinterpret_cast<std::uintptr_t>(data)))  // base = data - offset must not wrap
        return make_unexpected(errc::invalid_argument);
    auto lookup = [&](int k) -> result<mr_handle> {
        if (dev == nullptr) return rail_cache(k).lookup(buf, full_access);
        auto& c = *rail_at(k).dev_cache;
        if (dev->dmabuf_fd < 0) return c.lookup_device(buf, dev->iface, dev->device, full_access);
        const dmabuf_region region{.fd = dev->dmabuf_fd,
                                   .offset = dev->dmabuf_offset,
                                   .length = size,
                                   .base_addr = static_cast<std::byte*>(data) - dev->dmabuf_offset};
        return c.lookup_dmabuf(region, dev->iface, dev->device, full_access);
    };
    auto h = lookup(0);
    if (!h) return std::unexpected(h.error());
    memory_handle* m = slab_of<memory_handle>().get();
    for (int k = 1; k < rail_count(); ++k) {
        auto x = lookup(k);
        if (!x) {
            for (auto& y : m->extra) y.release();
            slab_of<memory_handle>().put(m);
            return std::unexpected(x.error());
        }
        m->extra[static_cast<std::size_t>(k - 1)] = std::move(*x);
    }
    m->device = dev != nullptr && dev->iface != hmem_iface::system;
    m->eng = this;
    m->reg = std::move(*h);
    m->base = static_cast<std::byte*>(data);
    m->length = size;
    m->magic.store(magic_mr);
    return m;
}

auto engine::atomics() const noexcept -> bool {
    const ::fi_info* info = nic_.info.native();
    return info != nullptr && (info->caps & FI_ATOMIC) != 0;
}

auto engine::export_key(const memory_handle& m) const -> result<memory_key> {
    // A key per rail: large one-sided operations are striped over every rail both sides have.
    if (!nic_.rma) return make_unexpected(errc::not_supported);
    memory_key k{.length = m.length, .rails = rail_count()};
    for (int i = 0; i < rail_count(); ++i) {
        const mr_handle& reg = i == 0 ? m.reg : m.extra[static_cast<std::size_t>(i - 1)];
        const rail& r = i == 0 ? *main_ : *extra_[static_cast<std::size_t>(i - 1)];
        auto key = reg.key();
        if (!key) return make_unexpected(errc::io_error);
        k.rail[static_cast<std::size_t>(i)] = {.base = r.virt_addr ? reinterpret_cast<std::uintptr_t>(m.base)
                                                                   : static_cast<std::uint64_t>(m.base - reg.address()),
                                               .key = *key};
    }
    return k;
}

void engine::deregister(memory_handle& m) noexcept {
    m.magic.store(magic_dead);
    m.reg.release();
    for (auto& x : m.extra) x.release();
    m.eng = nullptr;
    slab_of<memory_handle>().put(&m);
}

}  // namespace loom::plugins
