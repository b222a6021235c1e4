// The set-up of the Asio tests between two processes: a local stack whose endpoint becomes a
// loom::asio::endpoint, registered buffers, a loom-test-peer process for the same provider,
// and the io_context's fabric service reading the local queue.
#pragma once

#include "asio_progress.hpp"
#include "peer_process.hpp"

#include <loom/asio.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>

namespace loom_test {

/// Param is the gtest parameter; the derived fixture says which asio_case it names.
template <class Param>
class asio_peer_fixture : public ::testing::TestWithParam<Param> {
protected:
    explicit asio_peer_fixture(loom::capability caps) : caps_(caps) {}
    [[nodiscard]] virtual auto provider_case() const -> const asio_case& = 0;
    /// Called once every operation has ended, before the local objects close: what a test
    /// registered with the local domain goes here.
    virtual void release_registrations() {}

    void SetUp() override {
        const auto& c = provider_case();
        auto st = open_stack(c.provider, caps_, 0, {.size = 256, .wait_obj = c.wait_obj});
        ASSERT_TRUE(st) << c.provider << ": " << st.error().message();
        local_ = std::make_unique<stack>(std::move(*st));
        bufs_ = std::make_unique<local_buffers>(local_->domain);
        peer_ = std::make_unique<peer_process>(c.provider, caps_, *local_);
        ASSERT_TRUE(peer_->ok()) << peer_->error();
        ep_.emplace(ioc_, std::move(local_->ep), local_->cq, local_->cq);
        ASSERT_TRUE(service().register_cq(local_->cq));
        service().start();
    }
    void TearDown() override {
        ep_.reset();
        EXPECT_TRUE(run_until(
            ioc_, [&] { return service().outstanding_operations() == 0; }, std::chrono::seconds(10)))
            << service().outstanding_operations() << " operations never finished";
        service().stop();
        if (local_) {
            EXPECT_FALSE(service().deregister_cq(local_->cq)) << "an event was left unhandled";
        }
        release_registrations();
        peer_.reset();
        bufs_.reset();
        local_.reset();
    }

    auto service() -> loom::asio::fabric_service& { return loom::asio::fabric_service::use(ioc_); }
    [[nodiscard]] auto peer() const -> loom::fabric_addr { return peer_->address(); }
    /// Runs a peer command, which must succeed.
    auto peer_run(const command& c) -> reply {
        auto r = peer_->run(c);
        EXPECT_EQ(r.status, 0) << r.text;
        return r;
    }

    ::asio::io_context ioc_;
    std::unique_ptr<stack> local_;
    std::unique_ptr<local_buffers> bufs_;
    std::unique_ptr<peer_process> peer_;
    std::optional<loom::asio::endpoint> ep_;

private:
    loom::capability caps_;
};

}  // namespace loom_test
