// loom/domain.hpp — the access domain (fi_domain).
#pragma once

#include <loom/detail/fid.hpp>
#include <loom/fabric.hpp>
#include <loom/fabric_info.hpp>

#include <rdma/fi_domain.h>

namespace loom {

/// An access domain (fid_domain): one provider's view of a NIC, where endpoints, queues and registrations are opened.
class domain {
public:
    domain() = default;
    /// Opens the domain of a discovery result under `fab` (fi_domain); `mr` holds the count of its open children.
    [[nodiscard]] static auto create(fabric& fab, const fabric_info& info, std::pmr::memory_resource* mr = nullptr)
        -> result<domain>;

    /// The native fid_domain; null once closed.
    [[nodiscard]] auto native() const noexcept -> ::fid_domain* { return h_.get(); }
    /// True while the domain is open.
    [[nodiscard]] auto valid() const noexcept -> bool { return static_cast<bool>(h_); }
    /// The fabric the domain was opened under.
    [[nodiscard]] auto fabric_native() const noexcept -> ::fid_fabric* { return fabric_; }
    /// Open objects created from this one (close() is busy while any remain).
    [[nodiscard]] auto open_children() const noexcept -> long { return h_.open_children(); }
    /// The count that objects opened from this domain join while they are open.
    [[nodiscard]] auto child_tracker() const noexcept -> const detail::child_count& { return h_.children(); }
    /// The discovery result the domain was opened with.
    [[nodiscard]] auto info() const noexcept -> const fabric_info& { return info_; }
    /// The negotiated memory-registration modes.
    [[nodiscard]] auto get_memory_region_mode() const noexcept -> mr_mode_flags { return mr_mode_; }
    /// The native address format of the domain's endpoints.
    [[nodiscard]] auto addr_format() const noexcept -> address_format { return info_.addr_format(); }
    /// The resource the factory was given.
    [[nodiscard]] auto memory_resource() const noexcept -> std::pmr::memory_resource* { return mr_; }
    /// Busy while endpoints, queues, vectors, counters or registrations created from this
    /// domain are open (fi_close is not called then).
    auto close() noexcept -> void_result { return h_.close(); }

private:
    detail::unique_fid<::fid_domain> h_;
    fabric_info info_;
    mr_mode_flags mr_mode_{};
    std::pmr::memory_resource* mr_{nullptr};
    ::fid_fabric* fabric_{nullptr};
};

}  // namespace loom
