// loom/asio/detail/initiation.hpp — what asio::async_initiate calls for every fabric operation.
#pragma once

#include <loom/asio/detail/operation.hpp>

#include <asio/async_result.hpp>

#include <type_traits>

namespace loom::asio::detail {

/// The initiation object: the I/O executor (the handler's default executor) and the target.
template <class IoExecutor>
class initiate_operation {
public:
    using executor_type = IoExecutor;

    initiate_operation(const IoExecutor& ex, const op_target& target) noexcept : ex_(ex), target_(target) {}
    [[nodiscard]] auto get_executor() const noexcept -> executor_type { return ex_; }

    template <class Handler, op_kind Kind, class Seq>
    void operator()(Handler&& h, std::integral_constant<op_kind, Kind>, const op_params& params,
                    const Seq& buffers) const {
        using handler_type = std::decay_t<Handler>;
        handler_type handler(static_cast<Handler&&>(h));
        operation<handler_type, IoExecutor, single_buffer<Seq>>::template start<Kind>(std::move(handler), ex_, target_,
                                                                                      params, buffers);
    }

private:
    IoExecutor ex_;
    op_target target_;
};

/// Starts one operation for `token` (signature void(std::error_code, std::size_t)).
template <op_kind Kind, class IoExecutor, class Seq, class Token>
auto initiate(const IoExecutor& ex, const op_target& target, const op_params& params, const Seq& buffers,
              Token&& token) {
    return ::asio::async_initiate<Token, void(std::error_code, std::size_t)>(
        initiate_operation<IoExecutor>{ex, target}, token, std::integral_constant<op_kind, Kind>{}, params, buffers);
}

/// Tokens are anything but a tag or an address (keeps the overloads with and without ignore
/// bits apart).
template <class T>
concept completion_token =
    !std::is_integral_v<std::remove_cvref_t<T>> && !std::is_same_v<std::remove_cvref_t<T>, fabric_addr>;

}  // namespace loom::asio::detail
