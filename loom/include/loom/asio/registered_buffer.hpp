// loom/asio/registered_buffer.hpp — Asio buffers that carry the memory registration they lie in.
#pragma once

#include <loom/memory_region.hpp>

#include <asio/buffer.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace loom::asio {

/// The application's name for a registered buffer (an index into its own table); loom carries
/// it along and never interprets it. Default: no identifier (-1).
class registered_buffer_id {
public:
    constexpr registered_buffer_id() noexcept = default;
    /// The application's identifier `index`.
    constexpr explicit registered_buffer_id(int index) noexcept : index_(index) {}
    /// The identifier; -1 for none.
    [[nodiscard]] constexpr auto index() const noexcept -> int { return index_; }
    /// True when an identifier is set.
    [[nodiscard]] constexpr auto valid() const noexcept -> bool { return index_ >= 0; }
    /// Same identifier.
    friend constexpr auto operator==(registered_buffer_id, registered_buffer_id) noexcept -> bool = default;

private:
    int index_{-1};
};

namespace detail {
/// What both registered buffer views share: the bytes, the registration, the identifier.
template <class Buffer>
class registered_view {
public:
    registered_view() noexcept = default;
    registered_view(const Buffer& b, const memory_region* mr, registered_buffer_id id = {}) noexcept
        : buffer_(b), mr_(mr), id_(id) {}

    [[nodiscard]] auto buffer() const noexcept -> const Buffer& { return buffer_; }
    [[nodiscard]] auto data() const noexcept { return buffer_.data(); }
    [[nodiscard]] auto size() const noexcept -> std::size_t { return buffer_.size(); }
    [[nodiscard]] auto registration() const noexcept -> const memory_region* { return mr_; }
    [[nodiscard]] auto id() const noexcept -> registered_buffer_id { return id_; }
    /// The registration's local descriptor (null without a registration; a valid registration
    /// may have a null descriptor too).
    [[nodiscard]] auto descriptor() const noexcept -> void* { return mr_ != nullptr ? mr_->descriptor() : nullptr; }
    /// The registration's remote key, checked like memory_region::key(); invalid_argument
    /// without a registration.
    [[nodiscard]] auto key() const noexcept -> result<std::uint64_t> {
        if (mr_ == nullptr) return make_unexpected(errc::invalid_argument);
        return mr_->key();
    }
    /// True when the bytes lie inside the registration (memory_region::contains).
    [[nodiscard]] auto within_registration() const noexcept -> bool {
        return mr_ != nullptr && mr_->contains(buffer_.data(), buffer_.size());
    }

protected:
    Buffer buffer_{};
    const memory_region* mr_{nullptr};
    registered_buffer_id id_{};
};
}  // namespace detail

/// Writable bytes inside a memory registration: what receives and reads take to hand the
/// provider the registration's descriptor. The bytes and the registration stay borrowed until
/// the operation's handler runs.
class mutable_registered_buffer : public detail::registered_view<::asio::mutable_buffer> {
public:
    using registered_view::registered_view;
    /// Drops the first n bytes (all of them when n is larger).
    auto operator+=(std::size_t n) noexcept -> mutable_registered_buffer& {
        buffer_ += n;
        return *this;
    }
};

/// Read-only bytes inside a memory registration (sends, writes).
class const_registered_buffer : public detail::registered_view<::asio::const_buffer> {
public:
    using registered_view::registered_view;
    /// The same bytes, read-only.
    const_registered_buffer(const mutable_registered_buffer& b) noexcept  // NOLINT: as Asio's buffers convert
        : registered_view(::asio::const_buffer(b.buffer()), b.registration(), b.id()) {}
    /// Drops the first n bytes (all of them when n is larger).
    auto operator+=(std::size_t n) noexcept -> const_registered_buffer& {
        buffer_ += n;
        return *this;
    }
};

/// The view without its first n bytes.
[[nodiscard]] inline auto operator+(mutable_registered_buffer b, std::size_t n) noexcept -> mutable_registered_buffer {
    return b += n;
}
/// The view without its first n bytes.
[[nodiscard]] inline auto operator+(std::size_t n, mutable_registered_buffer b) noexcept -> mutable_registered_buffer {
    return b += n;
}
/// The view without its first n bytes.
[[nodiscard]] inline auto operator+(const_registered_buffer b, std::size_t n) noexcept -> const_registered_buffer {
    return b += n;
}
/// The view without its first n bytes.
[[nodiscard]] inline auto operator+(std::size_t n, const_registered_buffer b) noexcept -> const_registered_buffer {
    return b += n;
}

/// The same view (the Asio idiom), or its first max_size bytes; the registration and the
/// identifier come along.
[[nodiscard]] inline auto buffer(const mutable_registered_buffer& b) noexcept -> mutable_registered_buffer { return b; }
/// The view's first `max_size` bytes.
[[nodiscard]] inline auto buffer(const mutable_registered_buffer& b, std::size_t max_size) noexcept
    -> mutable_registered_buffer {
    return {::asio::buffer(b.buffer(), max_size), b.registration(), b.id()};
}
/// The same view (the Asio idiom).
[[nodiscard]] inline auto buffer(const const_registered_buffer& b) noexcept -> const_registered_buffer { return b; }
/// The view's first `max_size` bytes.
[[nodiscard]] inline auto buffer(const const_registered_buffer& b, std::size_t max_size) noexcept
    -> const_registered_buffer {
    return {::asio::buffer(b.buffer(), max_size), b.registration(), b.id()};
}

}  // namespace loom::asio
