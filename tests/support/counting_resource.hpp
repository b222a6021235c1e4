// tests/support/counting_resource.hpp — a memory resource that counts what it hands out, to see
// which resource an object's allocations come from.
#pragma once

#include <cstddef>
#include <memory_resource>

namespace loom::test {

class counting_resource : public std::pmr::memory_resource {
public:
    explicit counting_resource(std::pmr::memory_resource* upstream = std::pmr::new_delete_resource()) noexcept
        : up_(upstream) {}
    long allocations{0};
    long live_bytes{0};

private:
    auto do_allocate(std::size_t bytes, std::size_t align) -> void* override {
        void* p = up_->allocate(bytes, align);
        ++allocations;
        live_bytes += static_cast<long>(bytes);
        return p;
    }
    void do_deallocate(void* p, std::size_t bytes, std::size_t align) override {
        live_bytes -= static_cast<long>(bytes);
        up_->deallocate(p, bytes, align);
    }
    [[nodiscard]] auto do_is_equal(const std::pmr::memory_resource& o) const noexcept -> bool override {
        return this == &o;
    }
    std::pmr::memory_resource* up_;
};

}  // namespace loom::test
