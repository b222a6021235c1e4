// loom/address_vector.hpp — address vectors (fi_av): peer addresses to fabric_addr handles.
#pragma once

#include <loom/address.hpp>
#include <loom/context.hpp>
#include <loom/detail/fid.hpp>
#include <loom/detail/resource_alloc.hpp>
#include <loom/domain.hpp>

#include <rdma/fi_domain.h>

#include <memory_resource>
#include <span>
#include <unordered_set>
#include <vector>

namespace loom {

/// How an address vector is opened (fi_av_attr).
struct address_vector_attr {
    av_type type{av_type::unspecified};  ///< map or table (unspecified: the provider's choice)
    std::size_t count{0};                ///< expected number of peers (0: provider default)
    int rx_ctx_bits{0};                  ///< bits reserved for named receive-context indices (0..64)
};
/// Short name of address_vector_attr.
using av_attr = address_vector_attr;

/// How addresses are inserted.
struct av_insert_options {
    /// The peers are behind a firewall: this side may not open connections to them, only use
    /// ones they open (FI_FIREWALL_ADDR, libfabric 2.2; not_supported with an older libfabric).
    /// Untested on hardware: no provider here honours it.
    bool behind_firewall{false};
};

/// An address vector (fid_av): native peer addresses turned into fabric_addr handles that operations take.
class address_vector {
public:
    address_vector() = default;
    /// Opens an address vector in `dom`; `mr` holds its record of inserted handles.
    [[nodiscard]] static auto create(domain& dom, const address_vector_attr& attr = {},
                                     std::pmr::memory_resource* mr = nullptr) -> result<address_vector>;

    /// Inserts one peer; invalid_argument when the address's format does not suit the domain.
    /// The handle is a peer_addr: sends to it skip the destination check.
    [[nodiscard]] auto insert(const address& peer, const av_insert_options& options = {}) -> result<peer_addr>;
    /// Inserts native address bytes as they came from the peer's fi_getname.
    [[nodiscard]] auto insert_raw(std::span<const std::byte> native_address, const av_insert_options& options = {})
        -> result<peer_addr>;
    /// Inserts native addresses of one length stored back to back (`packed.size()` a multiple of
    /// `address_size`): `out` gets one handle per address, fabric_addrs::not_available where
    /// the provider refused it. Returns how many were inserted. invalid_argument before the
    /// provider is asked: a zero size, a remainder, `out` of another count, an address
    /// malformed for the domain's format, or a string-format vector (insert_strings).
    [[nodiscard]] auto insert_batch(std::span<const std::byte> packed, std::size_t address_size,
                                    std::span<fabric_addr> out, const av_insert_options& options = {})
        -> result<std::size_t>;
    /// String addresses (address_format::str vectors) of any lengths, e.g. "fi_shm://...".
    /// libfabric 2.1 reads a string batch as consecutive null-terminated strings: loom packs
    /// them so. The same refusals as insert_batch (null or malformed strings).
    [[nodiscard]] auto insert_strings(std::span<const char* const> addresses, std::span<fabric_addr> out,
                                      const av_insert_options& options = {}) -> result<std::size_t>;
    /// The address stored under a handle.
    [[nodiscard]] auto lookup(fabric_addr handle) const -> result<address>;
    /// Removes a peer (fi_av_remove): the handle no longer names it.
    [[nodiscard]] auto remove(fabric_addr handle) -> void_result;
    /// The bits reserved for receive-context indices (attr.rx_ctx_bits).
    [[nodiscard]] auto receive_context_bits() const noexcept -> int { return attr_.rx_ctx_bits; }

    /// The destination that reaches receive context `index` of the peer inserted as `base`
    /// (fi_rx_addr; the peer needs capability::named_rx_ctx and a scalable endpoint with that
    /// context). invalid_argument for: a reserved base (FI_ADDR_NOTAVAIL/UNSPEC), a base with
    /// bits in the reserved top receive_context_bits(), a negative index or one that does not
    /// fit those bits, a result equal to a reserved value, or a base this wrapper did not
    /// return from insert/insert_raw (or has removed since). With zero reserved bits only index
    /// zero is valid and returns the base unchanged. Whether the remote context exists cannot
    /// be checked here. bad_state for a closed vector.
    [[nodiscard]] auto receive_context_address(fabric_addr base, int index) const -> result<peer_addr>;
    /// The encoding alone (no membership check): the rules above for a vector with
    /// `rx_ctx_bits` reserved bits; invalid_argument also for bits outside 0..64.
    [[nodiscard]] static auto encode_receive_context(fabric_addr base, int index, int rx_ctx_bits) noexcept
        -> result<fabric_addr>;
    /// True when `handle` came from this wrapper's insert/insert_raw and was not removed.
    [[nodiscard]] auto contains(fabric_addr handle) const -> bool {
        return inserted_ && inserted_->contains(handle.get());
    }
    /// Where the vector's own state (its record of inserted handles) lives.
    [[nodiscard]] auto memory_resource() const noexcept -> std::pmr::memory_resource* {
        return inserted_ ? inserted_->get_allocator().resource() : nullptr;
    }

    /// The native fid_av; null once closed.
    [[nodiscard]] auto native() const noexcept -> ::fid_av* { return h_.get(); }
    /// The native domain the vector was opened in.
    [[nodiscard]] auto domain_native() const noexcept -> ::fid_domain* { return domain_; }
    /// True while the vector is open.
    [[nodiscard]] auto valid() const noexcept -> bool { return static_cast<bool>(h_); }
    /// Closes the native vector now; on failure it stays open and the call can be retried.
    auto close() noexcept -> void_result { return h_.close(); }

private:
    detail::unique_fid<::fid_av> h_;
    address_vector_attr attr_{};
    address_format format_{address_format::unspecified};
    ::fid_domain* domain_{nullptr};
    /// Handles returned by insert/insert_raw and not removed (receive_context_address bases).
    /// Like the inserts themselves, not synchronized. Held by pointer, allocated with its
    /// nodes from the factory's resource, so that moves keep both.
    detail::resource_ptr<std::pmr::unordered_set<::fi_addr_t>> inserted_;
};

}  // namespace loom
