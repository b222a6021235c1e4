// loom/memory_region.hpp — memory registration (fi_mr) and exported remote descriptors.
#pragma once

#include <loom/detail/fid.hpp>
#include <loom/domain.hpp>

#include <rdma/fi_domain.h>

#include <cstddef>
#include <cstdint>
#include <span>

namespace loom {

class endpoint;

/// Full registration request.
struct memory_registration {
    mr_access_flags access{};
    std::uint64_t offset{0};         ///< requested offset for non-virtual-address domains
    std::uint64_t requested_key{0};  ///< 0: loom picks a unique key when the provider does not
    bool rma_events{false};          ///< FI_RMA_EVENT: count remote accesses via a bound counter
};

class memory_region {
public:
    memory_region() = default;
    [[nodiscard]] static auto register_memory(domain& dom, std::span<std::byte> buffer,
                                              mr_access_flags access,
                                              std::pmr::memory_resource* mr = nullptr)
        -> result<memory_region>;
    /// Read-only memory: only send/read/remote_read access is accepted.
    [[nodiscard]] static auto register_memory(domain& dom, std::span<const std::byte> buffer,
                                              mr_access_flags access,
                                              std::pmr::memory_resource* mr = nullptr)
        -> result<memory_region>;
    /// Fixed-extent spans (std::span{array}) of writable or read-only bytes.
    template <std::size_t N>
        requires(N != std::dynamic_extent)
    [[nodiscard]] static auto register_memory(domain& dom, std::span<std::byte, N> buffer,
                                              mr_access_flags access,
                                              std::pmr::memory_resource* mr = nullptr)
        -> result<memory_region> {
        return register_memory(dom, std::span<std::byte>{buffer}, access, mr);
    }
    template <std::size_t N>
        requires(N != std::dynamic_extent)
    [[nodiscard]] static auto register_memory(domain& dom, std::span<const std::byte, N> buffer,
                                              mr_access_flags access,
                                              std::pmr::memory_resource* mr = nullptr)
        -> result<memory_region> {
        return register_memory(dom, std::span<const std::byte>{buffer}, access, mr);
    }
    [[nodiscard]] static auto register_memory(domain& dom, std::span<std::byte> buffer,
                                              const memory_registration& request,
                                              std::pmr::memory_resource* mr = nullptr)
        -> result<memory_region>;

    /// The local descriptor to pass with operations (may be null for a valid registration).
    [[nodiscard]] auto descriptor() const noexcept -> void* { return desc_; }
    /// The remote protection key; not_supported for raw-key domains, again when the provider
    /// cannot report it yet, invalid_argument for an empty region.
    [[nodiscard]] auto key() const noexcept -> result<std::uint64_t>;
    [[nodiscard]] auto address() const noexcept -> std::byte* { return base_; }
    [[nodiscard]] auto size() const noexcept -> std::size_t { return length_; }
    [[nodiscard]] auto access() const noexcept -> mr_access_flags { return access_; }
    [[nodiscard]] auto mode() const noexcept -> mr_mode_flags { return mode_; }
    /// True when [p, p+n) lies inside the registration (false for wrapping ranges and for an
    /// empty or closed region).
    [[nodiscard]] auto contains(const void* p, std::size_t n) const noexcept -> bool {
        if (h_.get() == nullptr) return false;
        const auto b = reinterpret_cast<std::uintptr_t>(base_);
        const auto a = reinterpret_cast<std::uintptr_t>(p);
        if (a < b || a + n < a) return false;
        return a - b <= length_ && n <= length_ - (a - b);
    }
    [[nodiscard]] auto contains(std::span<const std::byte> s) const noexcept -> bool {
        return contains(s.data(), s.size());
    }
    /// True when the registration belongs to the endpoint's domain.
    [[nodiscard]] auto usable_with(const endpoint& ep) const noexcept -> bool;

    [[nodiscard]] auto native() const noexcept -> ::fid_mr* { return h_.get(); }
    [[nodiscard]] auto domain_native() const noexcept -> ::fid_domain* { return domain_; }
    [[nodiscard]] auto valid() const noexcept -> bool { return static_cast<bool>(h_); }
    auto close() noexcept -> void_result { return h_.close(); }

private:
    detail::unique_fid<::fid_mr> h_;
    void* desc_{nullptr};
    std::byte* base_{nullptr};
    std::size_t length_{0};
    std::uint64_t offset_{0};
    mr_access_flags access_{};
    mr_mode_flags mode_{};
    ::fid_domain* domain_{nullptr};
};

/// What a peer needs to reach a registration with RMA: address (virtual or offset), key, length.
struct remote_memory {
    std::uint64_t addr{0};
    std::uint64_t key{0};
    std::size_t length{0};

    /// Exports a local registration (virtual address when the domain uses FI_MR_VIRT_ADDR,
    /// otherwise its offset).
    [[nodiscard]] static auto from_mr(const memory_region& mr) noexcept -> result<remote_memory>;
    /// [offset, offset+len) of this region; invalid_argument outside it or on overflow.
    [[nodiscard]] auto subregion(std::size_t offset, std::size_t len) const noexcept -> result<remote_memory>;
    /// The tail from offset on.
    [[nodiscard]] auto offset_by(std::size_t offset) const noexcept -> result<remote_memory>;
    friend auto operator==(const remote_memory&, const remote_memory&) noexcept -> bool = default;
};

}  // namespace loom
