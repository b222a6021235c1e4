// Unit tests for the endpoint-option helpers of loom/endpoint.hpp. All argument checks must
// happen before any provider call: a default-constructed endpoint has no native object, so a
// call that got past them would report bad_state (or crash), never invalid_argument.
#include <loom/endpoint.hpp>

#include "unit_support.hpp"

#include <rdma/fi_endpoint.h>

#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <utility>

namespace {

using loom::errc;
using loom::test::error_of;
namespace ep_opt = loom::ep_opt;

struct option_row {
    ep_opt::option o;
    int native;
    std::size_t size;
};

constexpr std::array<option_row, 20> all_options{{
    {ep_opt::min_multi_recv, FI_OPT_MIN_MULTI_RECV, sizeof(std::size_t)},
    {ep_opt::cm_data_size, FI_OPT_CM_DATA_SIZE, sizeof(std::size_t)},
    {ep_opt::buffered_min, FI_OPT_BUFFERED_MIN, sizeof(std::size_t)},
    {ep_opt::buffered_limit, FI_OPT_BUFFERED_LIMIT, sizeof(std::size_t)},
    {ep_opt::send_buf_size, FI_OPT_SEND_BUF_SIZE, sizeof(std::size_t)},
    {ep_opt::recv_buf_size, FI_OPT_RECV_BUF_SIZE, sizeof(std::size_t)},
    {ep_opt::tx_size, FI_OPT_TX_SIZE, sizeof(std::size_t)},
    {ep_opt::rx_size, FI_OPT_RX_SIZE, sizeof(std::size_t)},
    {ep_opt::hmem_p2p, FI_OPT_FI_HMEM_P2P, sizeof(int)},
    {ep_opt::xpu_trigger, FI_OPT_XPU_TRIGGER, 0},  // reserved: not usable
    {ep_opt::cuda_api_permitted, FI_OPT_CUDA_API_PERMITTED, sizeof(bool)},
    {ep_opt::shared_memory_permitted, FI_OPT_SHARED_MEMORY_PERMITTED, sizeof(bool)},
    {ep_opt::max_msg_size, FI_OPT_MAX_MSG_SIZE, sizeof(std::size_t)},
    {ep_opt::max_tagged_size, FI_OPT_MAX_TAGGED_SIZE, sizeof(std::size_t)},
    {ep_opt::max_rma_size, FI_OPT_MAX_RMA_SIZE, sizeof(std::size_t)},
    {ep_opt::max_atomic_size, FI_OPT_MAX_ATOMIC_SIZE, sizeof(std::size_t)},
    {ep_opt::inject_msg_size, FI_OPT_INJECT_MSG_SIZE, sizeof(std::size_t)},
    {ep_opt::inject_tagged_size, FI_OPT_INJECT_TAGGED_SIZE, sizeof(std::size_t)},
    {ep_opt::inject_rma_size, FI_OPT_INJECT_RMA_SIZE, sizeof(std::size_t)},
    {ep_opt::inject_atomic_size, FI_OPT_INJECT_ATOMIC_SIZE, sizeof(std::size_t)},
}};

constexpr std::array<int, 6> out_of_range_options{-1, 20, 21, 100, 0x7fffffff, -0x7fffffff};

TEST(EndpointOptionSize, EveryOption) {
    for (const auto& row : all_options) {
        EXPECT_EQ(static_cast<int>(row.o), row.native) << row.native;
        EXPECT_EQ(ep_opt::value_size(row.o), row.size) << row.native;
    }
    EXPECT_EQ(static_cast<int>(ep_opt::level_endpoint), FI_OPT_ENDPOINT);
    // Unknown identifiers have no size.
    for (int bad : out_of_range_options) EXPECT_EQ(ep_opt::value_size(static_cast<ep_opt::option>(bad)), 0u) << bad;
}

TEST(GetEndpointOption, RejectsNullPointers) {
    const loom::endpoint ep;
    std::size_t value = 0;
    std::size_t len = sizeof value;
    for (const auto& row : all_options) {
        len = sizeof value;
        EXPECT_EQ(error_of(loom::get_endpoint_option(ep, ep_opt::level_endpoint, row.o, nullptr, &len)),
                  errc::invalid_argument)
            << row.native;
        EXPECT_EQ(error_of(loom::get_endpoint_option(ep, ep_opt::level_endpoint, row.o, &value, nullptr)),
                  errc::invalid_argument)
            << row.native;
        EXPECT_EQ(error_of(loom::get_endpoint_option(ep, ep_opt::level_endpoint, row.o, nullptr, nullptr)),
                  errc::invalid_argument)
            << row.native;
    }
}

TEST(GetEndpointOption, RejectsShortBuffers) {
    const loom::endpoint ep;
    std::array<std::byte, 64> buf{};
    for (const auto& row : all_options) {
        if (row.size == 0) continue;
        std::size_t len = row.size - 1;
        EXPECT_EQ(error_of(loom::get_endpoint_option(ep, ep_opt::level_endpoint, row.o, buf.data(), &len)),
                  errc::invalid_argument)
            << row.native;
        len = 0;
        EXPECT_EQ(error_of(loom::get_endpoint_option(ep, ep_opt::level_endpoint, row.o, buf.data(), &len)),
                  errc::invalid_argument)
            << row.native;
    }
}

TEST(GetEndpointOption, RejectsXpuTriggerAndUnknownOptions) {
    const loom::endpoint ep;
    std::array<std::byte, 64> buf{};
    std::size_t len = buf.size();
    EXPECT_EQ(error_of(loom::get_endpoint_option(ep, ep_opt::level_endpoint, ep_opt::xpu_trigger, buf.data(), &len)),
              errc::invalid_argument);
    for (int bad : out_of_range_options) {
        len = buf.size();
        EXPECT_EQ(error_of(loom::get_endpoint_option(ep, ep_opt::level_endpoint, static_cast<ep_opt::option>(bad),
                                                     buf.data(), &len)),
                  errc::invalid_argument)
            << bad;
    }
    // Levels other than FI_OPT_ENDPOINT.
    for (int level : {1, -1, 42}) {
        len = buf.size();
        EXPECT_EQ(error_of(loom::get_endpoint_option(ep, static_cast<ep_opt::level>(level), ep_opt::tx_size, buf.data(),
                                                     &len)),
                  errc::invalid_argument)
            << level;
    }
}

TEST(GetEndpointOption, ValidArgumentsReachTheEndpointCheck) {
    // Proves the cases above were rejected by the argument checks: with good arguments the call
    // gets as far as the (absent) native endpoint and reports bad_state.
    const loom::endpoint ep;
    std::array<std::byte, 64> buf{};
    for (const auto& row : all_options) {
        if (row.size == 0) continue;
        std::size_t len = row.size;
        EXPECT_EQ(error_of(loom::get_endpoint_option(ep, ep_opt::level_endpoint, row.o, buf.data(), &len)),
                  errc::bad_state)
            << row.native;
        len = buf.size();  // a larger buffer is fine for a get
        EXPECT_EQ(error_of(loom::get_endpoint_option(ep, ep_opt::level_endpoint, row.o, buf.data(), &len)),
                  errc::bad_state)
            << row.native;
    }
    std::size_t len = buf.size();
    EXPECT_EQ(error_of(loom::get_native_endpoint_option(ep, FI_OPT_ENDPOINT, FI_OPT_XPU_TRIGGER, buf.data(), &len)),
              errc::bad_state);
}

TEST(SetEndpointOption, RejectsNullValueAndWrongLengths) {
    loom::endpoint ep;
    std::array<std::byte, 64> buf{};
    for (const auto& row : all_options) {
        if (row.size == 0) continue;
        EXPECT_EQ(error_of(loom::set_endpoint_option(ep, ep_opt::level_endpoint, row.o, nullptr, row.size)),
                  errc::invalid_argument)
            << row.native;
        for (std::size_t wrong : {std::size_t{0}, row.size - 1, row.size + 1, 2 * row.size, buf.size()}) {
            if (wrong == row.size) continue;
            EXPECT_EQ(error_of(loom::set_endpoint_option(ep, ep_opt::level_endpoint, row.o, buf.data(), wrong)),
                      errc::invalid_argument)
                << row.native << " len " << wrong;
        }
    }
}

TEST(SetEndpointOption, RejectsXpuTriggerAndUnknownOptions) {
    loom::endpoint ep;
    std::array<std::byte, 64> buf{};
    for (std::size_t len : {std::size_t{0}, sizeof(int), sizeof(std::size_t), buf.size()})
        EXPECT_EQ(error_of(loom::set_endpoint_option(ep, ep_opt::level_endpoint, ep_opt::xpu_trigger, buf.data(), len)),
                  errc::invalid_argument)
            << len;
    for (int bad : out_of_range_options) {
        EXPECT_EQ(error_of(loom::set_endpoint_option(ep, ep_opt::level_endpoint, static_cast<ep_opt::option>(bad),
                                                     buf.data(), sizeof(std::size_t))),
                  errc::invalid_argument)
            << bad;
        EXPECT_EQ(error_of(loom::set_endpoint_option(ep, ep_opt::level_endpoint, static_cast<ep_opt::option>(bad),
                                                     buf.data(), 0)),
                  errc::invalid_argument)
            << bad;
    }
    EXPECT_EQ(error_of(loom::set_endpoint_option(ep, static_cast<ep_opt::level>(3), ep_opt::tx_size, buf.data(),
                                                 sizeof(std::size_t))),
              errc::invalid_argument);
}

TEST(SetEndpointOption, ValidArgumentsReachTheEndpointCheck) {
    loom::endpoint ep;
    std::array<std::byte, 64> buf{};
    for (const auto& row : all_options) {
        if (row.size == 0) continue;
        EXPECT_EQ(error_of(loom::set_endpoint_option(ep, ep_opt::level_endpoint, row.o, buf.data(), row.size)),
                  errc::bad_state)
            << row.native;
    }
    EXPECT_EQ(error_of(ep.set_min_multi_recv(4096)), errc::bad_state);
    EXPECT_EQ(error_of(loom::set_native_endpoint_option(ep, FI_OPT_ENDPOINT, FI_OPT_TX_SIZE, buf.data(), 8)),
              errc::bad_state);
}

}  // namespace
