#include "loom/tagged_claim.hpp"

#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <sys/uio.h>

#include <exception>
#include <tuple>

namespace loom::msg {

tagged_claim::~tagged_claim() {
    // An outstanding operation still uses ctx_ (and maybe a borrowed buffer) inside the
    // provider: leaving would let it write freed memory. Only a closed endpoint releases it.
    if (phase_ != claim_phase::idle && ep_->valid()) std::terminate();
}

auto tagged_claim::submit(std::span<std::byte> buffer, void* desc, std::uint64_t flags) noexcept -> void_result {
    ::iovec iov{buffer.data(), buffer.size()};
    const bool with_buffer = (flags & FI_DISCARD) == 0 && (flags & FI_PEEK) == 0;
    const ::fi_msg_tagged m{with_buffer ? &iov : nullptr,
                            with_buffer ? &desc : nullptr,
                            with_buffer ? std::size_t{1} : std::size_t{0},
                            source_.get(),
                            tag_,
                            ignore_,
                            &ctx_,
                            0};
    return check_native(::fi_trecvmsg(ep_->native(), &m, flags | FI_COMPLETION));
}

auto tagged_claim::probe(std::uint64_t tag, std::uint64_t ignore, fabric_addr source) noexcept -> void_result {
    if (phase_ != claim_phase::idle) return make_unexpected(errc::bad_state);
    if (const int e = ep_->check_rx(capability::tagged, source, &ctx_)) return loom::detail::fail_code(e);
    const auto saved = std::tuple{tag_, ignore_, source_};
    tag_ = tag;
    ignore_ = ignore;
    source_ = source;
    ctx_.native = {};  // fresh provider scratch for a new reservation (user_data is kept)
    auto r = submit({}, nullptr, FI_PEEK | FI_CLAIM);
    if (!r) {
        std::tie(tag_, ignore_, source_) = saved;
        return r;
    }
    last_.reset();
    phase_ = claim_phase::probing;
    return r;
}

auto tagged_claim::observe(const completion_event& ev) -> result<claim_state> {
    if (ev.context != context()) return make_unexpected(errc::invalid_argument);
    const auto was = phase_;
    if (was != claim_phase::probing && was != claim_phase::receiving && was != claim_phase::discarding)
        return make_unexpected(errc::bad_state);
    last_ = ev;
    if (ev.has_error()) {
        phase_ = claim_phase::idle;  // the operation retired either way
        if (was == claim_phase::probing && ev.error == make_error_code(errc::no_message)) return claim_state::no_match;
        return std::unexpected(ev.error);
    }
    switch (was) {
        case claim_phase::probing: phase_ = claim_phase::reserved; return claim_state::reserved;
        case claim_phase::receiving: phase_ = claim_phase::idle; return claim_state::completed;
        default: phase_ = claim_phase::idle; return claim_state::discarded;
    }
}

auto tagged_claim::receive(std::span<std::byte> buffer, void* desc) noexcept -> void_result {
    if (phase_ != claim_phase::reserved) return make_unexpected(errc::bad_state);
    if (buffer.data() == nullptr && !buffer.empty()) return make_unexpected(errc::invalid_argument);
    if (const int e = ep_->check_rx(capability::tagged, source_, &ctx_)) return loom::detail::fail_code(e);
    auto r = submit(buffer, desc, FI_CLAIM);
    if (r) phase_ = claim_phase::receiving;
    return r;
}

auto tagged_claim::discard() noexcept -> void_result {
    if (phase_ != claim_phase::reserved) return make_unexpected(errc::bad_state);
    if (const int e = ep_->check_rx(capability::tagged, source_, &ctx_)) return loom::detail::fail_code(e);
    auto r = submit({}, nullptr, FI_CLAIM | FI_DISCARD);
    if (r) phase_ = claim_phase::discarding;
    return r;
}

auto tagged_claim::retire_after_close() noexcept -> void_result {
    if (ep_->valid()) return make_unexpected(errc::bad_state);
    phase_ = claim_phase::idle;
    last_.reset();
    ctx_.native = {};
    return {};
}

}  // namespace loom::msg
