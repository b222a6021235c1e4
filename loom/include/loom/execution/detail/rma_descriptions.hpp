// loom/execution/detail/rma_descriptions.hpp — what RMA and atomic senders submit.
#pragma once

#include <loom/atomic.hpp>
#include <loom/detail/async_submission.hpp>
#include <loom/execution/detail/fabric_operation.hpp>
#include <loom/rma.hpp>

#include <span>

namespace loom::execution::detail {

/// A read or write of local.size() bytes; `mr` null: no local descriptor (the original forms).
struct rma_description {
    using value_signature = set_value_t(std::size_t);
    std::span<std::byte> local;
    const memory_region* mr;
    fabric_addr peer;
    remote_memory remote;
    bool is_read;

    [[nodiscard]] auto check(const endpoint& ep, const completion_queue&) const noexcept -> std::error_code {
        if (mr != nullptr && !mr->covers(ep, local)) return make_error_code(errc::invalid_argument);
        if (!remote.holds(local.size())) return make_error_code(errc::invalid_argument);
        return {};
    }
    [[nodiscard]] auto submit(endpoint& ep, void* ctx) noexcept -> void_result {
        const ::iovec iov{local.data(), local.size()};
        void* const desc = mr != nullptr ? mr->descriptor() : nullptr;
        const remote_memory exact{remote.addr, remote.key, local.size()};
        return loom::detail::submit_rma(ep, is_read, {&iov, 1}, {&desc, mr != nullptr ? 1u : 0u}, peer, exact, ctx);
    }
    template <class R>
    void complete(R&& r, const completion_event&) const noexcept {
        execution::set_value(static_cast<R&&>(r), local.size());
    }
};

/// A fetching or compare atomic on one value of T: the remote value before the operation comes
/// back through set_value. The borrowed forms point at the caller's objects; the copying forms
/// point `operand`/`compare` at `copies` inside the description (so inside the operation state).
template <class T>
struct atomic_description {
    using value_signature = set_value_t(T);
    atomic::operation op;
    const T* operand;
    const memory_region* operand_mr;
    const T* compare;
    const memory_region* compare_mr;
    T* result;
    const memory_region* result_mr;
    fabric_addr peer;
    remote_memory remote;
    T copies[2]{};
    bool copied{false};

    [[nodiscard]] auto check(const endpoint& ep, const completion_queue&) const noexcept -> std::error_code {
        for (const memory_region* m : {operand_mr, compare_mr, result_mr})
            if (m != nullptr && !m->usable_with(ep)) return make_error_code(errc::invalid_argument);
        if (result == nullptr || remote.length < sizeof(T)) return make_error_code(errc::invalid_argument);
        return {};
    }
    [[nodiscard]] auto submit(endpoint& ep, void* ctx) noexcept -> void_result {
        const bool is_compare = atomic::in_family(op, atomic::family::compare);
        const T* src = copied ? &copies[0] : operand;
        const T* cmp = copied ? &copies[1] : compare;
        atomic::detail::request r{};
        r.fam = is_compare ? atomic::family::compare : atomic::family::fetch;
        r.op = op;
        r.dt = atomic::datatype_of<T>;
        r.count = 1;
        r.element_size = sizeof(T);
        r.operand = {src, sizeof(T), operand_mr};
        if (is_compare) r.compare = {cmp, sizeof(T), compare_mr};
        r.result = {result, sizeof(T), result_mr};
        r.peer = peer;
        r.remote = remote;
        r.context = ctx;
        const op_flag flags =
            effective_flags<operation_defaults::inherit_without_more>(op_flag::completion, ep.tx_op_flags());
        return atomic::detail::submit(ep, r, &flags);
    }
    template <class R>
    void complete(R&& r, const completion_event&) const noexcept {
        execution::set_value(static_cast<R&&>(r), *result);
    }
};

}  // namespace loom::execution::detail
