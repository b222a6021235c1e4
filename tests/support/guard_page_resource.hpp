// tests/support/guard_page_resource.hpp — a memory resource whose freed blocks stay mapped
// without access until the resource goes: code that touches an object after it was destroyed
// (its memory from here) stops at once with SIGSEGV, in any build, instead of reading stale
// values.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <memory_resource>
#include <new>
#include <vector>

namespace loom::test {

class guard_page_resource : public std::pmr::memory_resource {
public:
    guard_page_resource() = default;
    guard_page_resource(const guard_page_resource&) = delete;
    auto operator=(const guard_page_resource&) -> guard_page_resource& = delete;
    ~guard_page_resource() override {
        for (const auto& b : blocks_) ::munmap(b.p, b.len);
    }

    /// Blocks freed so far (each now without access).
    [[nodiscard]] auto freed() const noexcept -> std::size_t { return freed_; }

private:
    struct block {
        void* p;
        std::size_t len;
    };
    static auto page_rounded(std::size_t bytes) noexcept -> std::size_t {
        const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
        return (bytes + page - 1) / page * page;
    }
    auto do_allocate(std::size_t bytes, std::size_t align) -> void* override {
        const std::size_t len = page_rounded(bytes == 0 ? 1 : bytes);
        if (align > static_cast<std::size_t>(::sysconf(_SC_PAGESIZE))) throw std::bad_alloc();
        void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) throw std::bad_alloc();
        blocks_.push_back({p, len});
        return p;
    }
    void do_deallocate(void* p, std::size_t bytes, std::size_t /*align*/) override {
        ::mprotect(p, page_rounded(bytes == 0 ? 1 : bytes), PROT_NONE);
        ++freed_;
    }
    [[nodiscard]] auto do_is_equal(const std::pmr::memory_resource& o) const noexcept -> bool override {
        return this == &o;
    }
    std::vector<block> blocks_;
    std::size_t freed_{0};
};

}  // namespace loom::test
