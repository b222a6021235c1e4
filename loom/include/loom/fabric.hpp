// loom/fabric.hpp — the fabric object (fi_fabric).
#pragma once

#include <loom/detail/fid.hpp>
#include <loom/fabric_info.hpp>

#include <memory_resource>

namespace loom {

/// A fabric (fid_fabric): the top of a provider's object tree; domains and listeners are opened from it.
class fabric {
public:
    fabric() = default;
    /// Opens the fabric of a discovery result (fi_fabric); `mr` holds the count of its open children.
    [[nodiscard]] static auto create(const fabric_info& info, std::pmr::memory_resource* mr = nullptr)
        -> result<fabric>;

    /// The native fid_fabric; null once closed.
    [[nodiscard]] auto native() const noexcept -> ::fid_fabric* { return h_.get(); }
    /// True while the fabric is open.
    [[nodiscard]] auto valid() const noexcept -> bool { return static_cast<bool>(h_); }
    /// Open objects created from this one (close() is busy while any remain).
    [[nodiscard]] auto open_children() const noexcept -> long { return h_.open_children(); }
    /// The count that objects opened from this fabric join while they are open.
    [[nodiscard]] auto child_tracker() const noexcept -> const detail::child_count& { return h_.children(); }
    /// The resource the factory was given.
    [[nodiscard]] auto memory_resource() const noexcept -> std::pmr::memory_resource* { return mr_; }
    /// Closes the fabric; busy while domains created from it are open (the handle is kept
    /// for a retry and fi_close is not called).
    auto close() noexcept -> void_result { return h_.close(); }

private:
    detail::unique_fid<::fid_fabric> h_;
    std::pmr::memory_resource* mr_{nullptr};
};

}  // namespace loom
