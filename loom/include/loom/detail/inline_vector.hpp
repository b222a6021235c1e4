// loom/detail/inline_vector.hpp — a vector that keeps up to N entries inline.
#pragma once

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <span>
#include <type_traits>

namespace loom::detail {

/// Up to N trivially copyable entries live inside the object; larger sizes use the heap.
/// Used for native IOV, descriptor and remote-IOV arrays so small submissions allocate nothing.
template <class T, std::size_t N = 16>
class inline_vector {
    static_assert(std::is_trivially_copyable_v<T>);

public:
    inline_vector() noexcept = default;
    inline_vector(std::initializer_list<T> init) { assign(init.begin(), init.size()); }
    explicit inline_vector(std::span<const T> init) { assign(init.data(), init.size()); }
    inline_vector(const inline_vector& o) { assign(o.data(), o.size()); }
    inline_vector(inline_vector&& o) noexcept { steal(o); }
    auto operator=(const inline_vector& o) -> inline_vector& {
        if (this != &o) assign(o.data(), o.size());
        return *this;
    }
    auto operator=(inline_vector&& o) noexcept -> inline_vector& {
        if (this != &o) steal(o);
        return *this;
    }
    ~inline_vector() = default;

    [[nodiscard]] auto data() noexcept -> T* { return heap_ ? heap_.get() : inline_; }
    [[nodiscard]] auto data() const noexcept -> const T* { return heap_ ? heap_.get() : inline_; }
    [[nodiscard]] auto size() const noexcept -> std::size_t { return size_; }
    [[nodiscard]] auto empty() const noexcept -> bool { return size_ == 0; }
    [[nodiscard]] auto is_inline() const noexcept -> bool { return !heap_; }
    [[nodiscard]] auto begin() noexcept -> T* { return data(); }
    [[nodiscard]] auto end() noexcept -> T* { return data() + size_; }
    [[nodiscard]] auto begin() const noexcept -> const T* { return data(); }
    [[nodiscard]] auto end() const noexcept -> const T* { return data() + size_; }
    [[nodiscard]] auto operator[](std::size_t i) noexcept -> T& { return data()[i]; }
    [[nodiscard]] auto operator[](std::size_t i) const noexcept -> const T& { return data()[i]; }
    [[nodiscard]] operator std::span<const T>() const noexcept { return {data(), size_}; }

    void push_back(const T& v) {
        if (size_ == capacity()) grow(std::max<std::size_t>(2 * capacity(), N + 1));
        data()[size_++] = v;
    }
    void resize(std::size_t n) {
        if (n > capacity()) grow(n);
        std::fill(data() + size_, data() + std::max(n, size_), T{});
        size_ = n;
    }
    void clear() noexcept { size_ = 0; }

private:
    [[nodiscard]] auto capacity() const noexcept -> std::size_t { return heap_ ? heap_cap_ : N; }
    void grow(std::size_t cap) {
        auto fresh = std::make_unique_for_overwrite<T[]>(cap);
        std::copy_n(data(), size_, fresh.get());
        heap_ = std::move(fresh);
        heap_cap_ = cap;
    }
    void assign(const T* p, std::size_t n) {
        if (n > capacity()) grow(n);
        std::copy_n(p, n, data());
        size_ = n;
    }
    void steal(inline_vector& o) noexcept {
        if (o.heap_) {
            heap_ = std::move(o.heap_);
            heap_cap_ = o.heap_cap_;
        } else {
            heap_.reset();
            std::copy_n(o.inline_, o.size_, inline_);
        }
        size_ = o.size_;
        o.size_ = 0;
    }

    T inline_[N]{};
    std::unique_ptr<T[]> heap_;
    std::size_t heap_cap_{0};
    std::size_t size_{0};
};

}  // namespace loom::detail
