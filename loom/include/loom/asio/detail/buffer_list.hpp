// loom/asio/detail/buffer_list.hpp — the IOVs and descriptors an Asio operation hands the
// provider, kept in the operation state (four inline, more through the handler's allocator).
#pragma once

#include <loom/asio/registered_buffer.hpp>
#include <loom/endpoint.hpp>

#include <sys/uio.h>

#include <memory>
#include <span>
#include <system_error>
#include <type_traits>

namespace loom::asio::detail {

template <class T>
concept registered_buffer_view = std::is_same_v<std::remove_cvref_t<T>, mutable_registered_buffer> ||
                                 std::is_same_v<std::remove_cvref_t<T>, const_registered_buffer>;
template <class T>
concept single_buffer = registered_buffer_view<T> || std::is_convertible_v<const T&, ::asio::const_buffer>;
template <class T>
concept writable_buffer = std::is_same_v<std::remove_cvref_t<T>, mutable_registered_buffer> ||
                          std::is_convertible_v<const T&, ::asio::mutable_buffer>;

/// One buffer of a sequence: its bytes and its registration (null for a plain Asio buffer).
struct buffer_piece {
    void* data;
    std::size_t size;
    const memory_region* mr;
};

template <bool Writable, class B>
auto piece_of(const B& b) noexcept -> buffer_piece {
    if constexpr (registered_buffer_view<B>) {
        static_assert(!Writable || writable_buffer<B>, "a receive or read needs writable buffers");
        return {const_cast<void*>(static_cast<const void*>(b.data())), b.size(), b.registration()};
    } else if constexpr (Writable) {
        static_assert(writable_buffer<B>, "a receive or read needs writable buffers");
        const ::asio::mutable_buffer m(b);
        return {m.data(), m.size(), nullptr};
    } else {
        const ::asio::const_buffer c(b);
        return {const_cast<void*>(c.data()), c.size(), nullptr};
    }
}

/// Calls f(buffer_piece) for each buffer of `seq`: a single buffer (plain or registered) or a
/// range of them.
template <bool Writable, class Seq, class F>
void for_each_piece(const Seq& seq, F&& f) {
    if constexpr (single_buffer<Seq>) {
        f(piece_of<Writable>(seq));
    } else {
        for (const auto& b : seq) f(piece_of<Writable>(b));
    }
}

/// Puts `p` in `iov` with its registration's descriptor (`all`'s where given) in `desc`; false
/// when that registration does not hold it or is not usable with `ep`.
inline auto describe_piece(const buffer_piece& p, const memory_region* all, const endpoint& ep, ::iovec& iov,
                           void*& desc) noexcept -> bool {
    const memory_region* mr = all != nullptr ? all : p.mr;
    iov = {p.data, p.size};
    desc = mr != nullptr ? mr->descriptor() : nullptr;
    return mr == nullptr || (mr->contains(p.data, p.size) && (all != nullptr || mr->usable_with(ep)));
}

/// What an operation on one buffer (plain or registered) keeps: its IOV and descriptor, in the
/// operation state. The same interface as buffer_list, with nothing to allocate or release.
class one_buffer {
public:
    one_buffer() noexcept = default;
    one_buffer(const one_buffer&) = delete;
    auto operator=(const one_buffer&) -> one_buffer& = delete;
    ~one_buffer() = default;

    template <bool Writable, single_buffer B>
    auto assign(const B& b, const endpoint& ep) noexcept -> std::error_code {
        return fill<Writable>(b, nullptr, ep);
    }
    template <bool Writable, single_buffer B>
    auto assign_within(const B& b, const memory_region& mr, const endpoint& ep) noexcept -> std::error_code {
        if (!mr.usable_with(ep)) return make_error_code(errc::invalid_argument);
        return fill<Writable>(b, &mr, ep);
    }
    [[nodiscard]] auto iov() const noexcept -> std::span<const ::iovec> { return {&iov_, 1}; }
    [[nodiscard]] auto desc() const noexcept -> std::span<void* const> {
        return {&desc_, has_desc_ ? std::size_t{1} : std::size_t{0}};
    }
    [[nodiscard]] auto total() const noexcept -> std::size_t { return iov_.iov_len; }

private:
    template <bool Writable, class B>
    auto fill(const B& b, const memory_region* all, const endpoint& ep) noexcept -> std::error_code {
        const buffer_piece p = piece_of<Writable>(b);
        has_desc_ = all != nullptr || p.mr != nullptr;
        return describe_piece(p, all, ep, iov_, desc_) ? std::error_code{} : make_error_code(errc::invalid_argument);
    }

    ::iovec iov_{};
    void* desc_{nullptr};
    bool has_desc_{false};
};

/// The retained arrays. Allocator: the handler's associated allocator (std::allocator for the
/// blocking forms); each array beyond the inline capacity is allocated once, at assign.
template <class Allocator>
class buffer_list {
public:
    static constexpr std::size_t inline_count = 4;

    explicit buffer_list(const Allocator& a) noexcept : alloc_(a) {}
    buffer_list(const buffer_list&) = delete;
    auto operator=(const buffer_list&) -> buffer_list& = delete;
    ~buffer_list() { release(); }

    /// Takes the pieces of `seq`, each with its own registration's descriptor. A registered
    /// piece must lie in its registration, which must be usable with `ep`
    /// (memory_region::covers); invalid_argument otherwise, or when the total overflows.
    /// Throws what the allocator throws.
    template <bool Writable, class Seq>
    auto assign(const Seq& seq, const endpoint& ep) -> std::error_code {
        return fill<Writable>(seq, nullptr, ep);
    }
    /// The same with every piece inside `mr` (the RMA forms): its descriptor for each.
    template <bool Writable, class Seq>
    auto assign_within(const Seq& seq, const memory_region& mr, const endpoint& ep) -> std::error_code {
        if (!mr.usable_with(ep)) return make_error_code(errc::invalid_argument);
        return fill<Writable>(seq, &mr, ep);
    }

    [[nodiscard]] auto iov() const noexcept -> std::span<const ::iovec> { return {iov_, count_}; }
    /// One descriptor per IOV, or none at all when no piece has a registration.
    [[nodiscard]] auto desc() const noexcept -> std::span<void* const> {
        return {desc_, has_desc_ ? count_ : std::size_t{0}};
    }
    [[nodiscard]] auto total() const noexcept -> std::size_t { return total_; }

private:
    using iov_alloc = typename std::allocator_traits<Allocator>::template rebind_alloc<::iovec>;
    using desc_alloc = typename std::allocator_traits<Allocator>::template rebind_alloc<void*>;

    template <bool Writable, class Seq>
    auto fill(const Seq& seq, const memory_region* all, const endpoint& ep) -> std::error_code {
        has_desc_ = all != nullptr;
        std::size_t n = 0;
        for_each_piece<Writable>(seq, [&](const buffer_piece&) { ++n; });
        reserve(n == 0 ? 1 : n);
        std::error_code ec;
        count_ = 0;
        total_ = 0;
        for_each_piece<Writable>(seq, [&](const buffer_piece& p) {
            if (!store(count_, p, all, ep) || total_ + p.size < total_) ec = make_error_code(errc::invalid_argument);
            total_ += p.size;
            ++count_;
        });
        if (count_ == 0) {  // an empty sequence: one empty buffer
            iov_[0] = {nullptr, 0};
            desc_[0] = nullptr;
            count_ = 1;
        }
        return ec;
    }
    /// Puts `p` at index i with its registration's descriptor (`all`'s where given); false when
    /// that registration does not hold it or is not usable with `ep`.
    auto store(std::size_t i, const buffer_piece& p, const memory_region* all, const endpoint& ep) noexcept -> bool {
        if (all != nullptr || p.mr != nullptr) has_desc_ = true;
        return describe_piece(p, all, ep, iov_[i], desc_[i]);
    }
    void reserve(std::size_t n) {
        if (n <= capacity_) return;
        release();
        iov_alloc ia(alloc_);
        desc_alloc da(alloc_);
        ::iovec* iov = std::allocator_traits<iov_alloc>::allocate(ia, n);
        try {
            desc_ = std::allocator_traits<desc_alloc>::allocate(da, n);
        } catch (...) {
            std::allocator_traits<iov_alloc>::deallocate(ia, iov, n);
            throw;
        }
        iov_ = iov;
        capacity_ = n;
    }
    void release() noexcept {
        if (iov_ == inline_iov_) return;
        iov_alloc ia(alloc_);
        desc_alloc da(alloc_);
        std::allocator_traits<iov_alloc>::deallocate(ia, iov_, capacity_);
        std::allocator_traits<desc_alloc>::deallocate(da, desc_, capacity_);
        iov_ = inline_iov_;
        desc_ = inline_desc_;
        capacity_ = inline_count;
    }

    Allocator alloc_;
    ::iovec inline_iov_[inline_count];
    void* inline_desc_[inline_count];
    ::iovec* iov_{inline_iov_};
    void** desc_{inline_desc_};
    std::size_t capacity_{inline_count};
    std::size_t count_{0};
    std::size_t total_{0};
    bool has_desc_{false};
};

/// What an operation keeps of its buffers: one_buffer for a single buffer (`Single`), else a
/// buffer_list allocating through `Allocator`.
template <bool Single, class Allocator>
using buffer_storage = std::conditional_t<Single, one_buffer, buffer_list<Allocator>>;

/// A buffer_storage; `a` serves the buffer_list (a single buffer allocates nothing).
template <bool Single, class Allocator>
auto make_buffer_storage(const Allocator& a) -> buffer_storage<Single, Allocator> {
    if constexpr (Single)
        return one_buffer{};
    else
        return buffer_list<Allocator>(a);
}

}  // namespace loom::asio::detail
