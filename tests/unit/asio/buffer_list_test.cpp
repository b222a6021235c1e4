// What an Asio operation keeps of its buffers: four IOVs inline, more through the handler's
// allocator (one allocation per array, freed with the state); one buffer in the state itself
// (one_buffer); registered views.
#include <loom/asio/detail/buffer_list.hpp>

#include <gtest/gtest.h>

#include <array>
#include <vector>

namespace {

struct counts {
    int allocations{0};
    int deallocations{0};
};

template <class T>
struct counting_allocator {
    using value_type = T;
    counts* c;
    explicit counting_allocator(counts* c) noexcept : c(c) {}
    template <class U>
    counting_allocator(const counting_allocator<U>& o) noexcept : c(o.c) {}  // NOLINT: rebinding
    auto allocate(std::size_t n) -> T* {
        ++c->allocations;
        return std::allocator<T>{}.allocate(n);
    }
    void deallocate(T* p, std::size_t n) noexcept {
        ++c->deallocations;
        std::allocator<T>{}.deallocate(p, n);
    }
    template <class U>
    friend auto operator==(const counting_allocator&, const counting_allocator<U>&) noexcept -> bool {
        return true;
    }
};

TEST(AsioBufferList, up_to_four_pieces_stay_inline) {
    counts c;
    std::array<std::byte, 64> area{};
    const loom::endpoint ep;
    {
        loom::asio::detail::buffer_list<counting_allocator<void>> list{counting_allocator<void>{&c}};
        const std::array<::asio::const_buffer, 4> seq{::asio::buffer(&area[0], 1), ::asio::buffer(&area[8], 2),
                                                      ::asio::buffer(&area[16], 3), ::asio::buffer(&area[32], 4)};
        EXPECT_FALSE(list.assign<false>(seq, ep));
        ASSERT_EQ(list.iov().size(), 4u);
        EXPECT_EQ(list.iov()[2].iov_base, &area[16]);
        EXPECT_EQ(list.iov()[3].iov_len, 4u);
        EXPECT_EQ(list.total(), 10u);
        EXPECT_TRUE(list.desc().empty()) << "plain buffers carry no descriptors";
    }
    EXPECT_EQ(c.allocations, 0);
}

TEST(AsioBufferList, longer_sequences_allocate_each_array_once_through_the_allocator) {
    counts c;
    std::vector<std::byte> area(600);
    const loom::endpoint ep;
    {
        loom::asio::detail::buffer_list<counting_allocator<void>> list{counting_allocator<void>{&c}};
        std::vector<::asio::mutable_buffer> seq;
        for (int i = 0; i < 6; ++i) seq.push_back(::asio::buffer(&area[i * 100], 50));
        EXPECT_FALSE(list.assign<true>(seq, ep));
        EXPECT_EQ(c.allocations, 2);  // IOVs and descriptors
        ASSERT_EQ(list.iov().size(), 6u);
        EXPECT_EQ(list.iov()[5].iov_base, &area[500]);
        EXPECT_EQ(list.total(), 300u);
    }
    EXPECT_EQ(c.deallocations, 2);
}

TEST(AsioBufferList, an_empty_sequence_is_one_empty_buffer) {
    const loom::endpoint ep;
    loom::asio::detail::buffer_list<std::allocator<void>> list{std::allocator<void>{}};
    const std::vector<::asio::const_buffer> none;
    EXPECT_FALSE(list.assign<false>(none, ep));
    ASSERT_EQ(list.iov().size(), 1u);
    EXPECT_EQ(list.total(), 0u);
}

TEST(AsioBufferList, a_registered_piece_outside_its_registration_is_refused) {
    const loom::endpoint ep;
    const loom::memory_region unregistered;  // empty: contains nothing
    std::array<std::byte, 16> area{};
    loom::asio::detail::buffer_list<std::allocator<void>> list{std::allocator<void>{}};
    const loom::asio::const_registered_buffer piece{::asio::buffer(area), &unregistered};
    EXPECT_EQ(list.assign<false>(piece, ep), loom::make_error_code(loom::errc::invalid_argument));
    EXPECT_EQ(list.assign_within<false>(::asio::buffer(area), unregistered, ep),
              loom::make_error_code(loom::errc::invalid_argument));
}

TEST(AsioOneBuffer, a_plain_buffer_is_one_iov_without_a_descriptor) {
    const loom::endpoint ep;
    std::array<std::byte, 32> area{};
    loom::asio::detail::one_buffer one;
    EXPECT_FALSE(one.assign<true>(::asio::buffer(area.data() + 4, 20), ep));
    ASSERT_EQ(one.iov().size(), 1u);
    EXPECT_EQ(one.iov()[0].iov_base, area.data() + 4);
    EXPECT_EQ(one.iov()[0].iov_len, 20u);
    EXPECT_EQ(one.total(), 20u);
    EXPECT_TRUE(one.desc().empty());
}

TEST(AsioOneBuffer, a_registered_buffer_outside_its_registration_is_refused) {
    const loom::endpoint ep;
    const loom::memory_region unregistered;
    std::array<std::byte, 16> area{};
    loom::asio::detail::one_buffer one;
    const loom::asio::const_registered_buffer piece{::asio::buffer(area), &unregistered};
    EXPECT_EQ(one.assign<false>(piece, ep), loom::make_error_code(loom::errc::invalid_argument));
    ASSERT_EQ(one.desc().size(), 1u) << "a registered buffer carries its descriptor";
    EXPECT_EQ(one.assign_within<false>(::asio::buffer(area), unregistered, ep),
              loom::make_error_code(loom::errc::invalid_argument));
}

TEST(AsioRegisteredBuffer, views_keep_registration_and_identifier) {
    std::array<std::byte, 100> area{};
    const loom::memory_region mr;
    const loom::asio::mutable_registered_buffer whole{::asio::buffer(area), &mr, loom::asio::registered_buffer_id{3}};
    const auto first = loom::asio::buffer(whole, 10);
    EXPECT_EQ(first.size(), 10u);
    EXPECT_EQ(first.registration(), &mr);
    EXPECT_EQ(first.id(), loom::asio::registered_buffer_id{3});
    const auto later = whole + 40;
    EXPECT_EQ(later.data(), &area[40]);
    EXPECT_EQ(later.size(), 60u);
    const loom::asio::const_registered_buffer read_only = later;
    EXPECT_EQ(read_only.registration(), &mr);
    EXPECT_EQ((read_only + 100).size(), 0u);
    EXPECT_FALSE(loom::asio::registered_buffer_id{}.valid());
    const loom::asio::const_registered_buffer none{::asio::buffer(area), nullptr};
    EXPECT_EQ(none.descriptor(), nullptr);
    EXPECT_EQ(none.key().error(), loom::make_error_code(loom::errc::invalid_argument));
    EXPECT_FALSE(none.within_registration());
}

}  // namespace
