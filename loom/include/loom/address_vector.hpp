// loom/address_vector.hpp — address vectors (fi_av): peer addresses to fabric_addr handles.
#pragma once

#include <loom/address.hpp>
#include <loom/context.hpp>
#include <loom/detail/fid.hpp>
#include <loom/domain.hpp>

#include <rdma/fi_domain.h>

#include <span>
#include <vector>

namespace loom {

struct address_vector_attr {
    av_type type{av_type::unspecified};
    std::size_t count{0};  ///< expected number of peers (0: provider default)
    int rx_ctx_bits{0};    ///< bits reserved for named receive-context indices
};
using av_attr = address_vector_attr;

class address_vector {
public:
    address_vector() = default;
    [[nodiscard]] static auto create(domain& dom, const address_vector_attr& attr = {},
                                     std::pmr::memory_resource* mr = nullptr) -> result<address_vector>;

    /// Inserts one peer; invalid_argument when the address's format does not suit the domain.
    [[nodiscard]] auto insert(const address& peer) -> result<fabric_addr>;
    /// Inserts native address bytes as they came from the peer's fi_getname.
    [[nodiscard]] auto insert_raw(std::span<const std::byte> native_address) -> result<fabric_addr>;
    /// The address stored under a handle.
    [[nodiscard]] auto lookup(fabric_addr handle) const -> result<address>;
    [[nodiscard]] auto remove(fabric_addr handle) -> void_result;
    [[nodiscard]] auto receive_context_bits() const noexcept -> int { return attr_.rx_ctx_bits; }

    [[nodiscard]] auto native() const noexcept -> ::fid_av* { return h_.get(); }
    [[nodiscard]] auto domain_native() const noexcept -> ::fid_domain* { return domain_; }
    [[nodiscard]] auto valid() const noexcept -> bool { return static_cast<bool>(h_); }
    auto close() noexcept -> void_result { return h_.close(); }

private:
    detail::unique_fid<::fid_av> h_;
    address_vector_attr attr_{};
    address_format format_{address_format::unspecified};
    ::fid_domain* domain_{nullptr};
};

}  // namespace loom
