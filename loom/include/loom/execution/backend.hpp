// loom/execution/backend.hpp — which P2300 implementation loom's senders speak, and the
// names loom::execution forwards to it.
//
// Exactly one of LOOM_EXECUTION_USE_STD, LOOM_EXECUTION_USE_STDEXEC or LOOM_EXECUTION_USE_BEMAN
// selects a backend (the loom::execution CMake target defines the one the build chose). With
// none defined the headers look for one: the standard library (__cpp_lib_senders >= 202406L),
// then stdexec, then beman.execution. With no backend at all (or LOOM_EXECUTION_USE_NONE),
// loom supplies the protocol and the algorithms its examples use itself.
#pragma once

#include <version>

#if (defined(LOOM_EXECUTION_USE_STD) + defined(LOOM_EXECUTION_USE_STDEXEC) + defined(LOOM_EXECUTION_USE_BEMAN) + \
     defined(LOOM_EXECUTION_USE_NONE)) > 1
#error "loom: define at most one of LOOM_EXECUTION_USE_STD, _STDEXEC, _BEMAN, _NONE"
#endif

#if !defined(LOOM_EXECUTION_USE_STD) && !defined(LOOM_EXECUTION_USE_STDEXEC) && !defined(LOOM_EXECUTION_USE_BEMAN) && \
    !defined(LOOM_EXECUTION_USE_NONE)
#if defined(__cpp_lib_senders) && __cpp_lib_senders >= 202406L
#define LOOM_EXECUTION_USE_STD 1
#elif __has_include(<stdexec/execution.hpp>)
#define LOOM_EXECUTION_USE_STDEXEC 1
#elif __has_include(<beman/execution/execution.hpp>)
#define LOOM_EXECUTION_USE_BEMAN 1
#else
#define LOOM_EXECUTION_USE_NONE 1
#endif
#endif

#if defined(LOOM_EXECUTION_USE_STD)
#if !defined(__cpp_lib_senders) || __cpp_lib_senders < 202406L
#error "loom: LOOM_EXECUTION_USE_STD needs a standard library with __cpp_lib_senders >= 202406L"
#endif
#include <execution>
#define LOOM_EXECUTION_NS ::std::execution
#define LOOM_EXECUTION_STOP_NS ::std
#define LOOM_EXECUTION_BACKEND_NAME "std::execution"
#elif defined(LOOM_EXECUTION_USE_STDEXEC)
#include <stdexec/execution.hpp>
#define LOOM_EXECUTION_NS ::stdexec
#define LOOM_EXECUTION_STOP_NS ::stdexec
#define LOOM_EXECUTION_BACKEND_NAME "stdexec"
#elif defined(LOOM_EXECUTION_USE_BEMAN)
#include <beman/execution/execution.hpp>
#define LOOM_EXECUTION_NS ::beman::execution
#define LOOM_EXECUTION_STOP_NS ::beman::execution
#define LOOM_EXECUTION_BACKEND_NAME "beman::execution"
#endif

#if defined(LOOM_EXECUTION_NS)
namespace loom::execution {
// Tags, customization points, concepts and algorithms of the selected backend.
using LOOM_EXECUTION_NS::completion_signatures;
using LOOM_EXECUTION_NS::connect;
using LOOM_EXECUTION_NS::connect_result_t;
using LOOM_EXECUTION_NS::get_completion_scheduler;
using LOOM_EXECUTION_NS::get_completion_scheduler_t;
using LOOM_EXECUTION_NS::get_env;
using LOOM_EXECUTION_NS::get_stop_token;
using LOOM_EXECUTION_NS::get_stop_token_t;
using LOOM_EXECUTION_NS::just;
using LOOM_EXECUTION_NS::let_value;
using LOOM_EXECUTION_NS::operation_state;
using LOOM_EXECUTION_NS::operation_state_t;
using LOOM_EXECUTION_NS::receiver;
using LOOM_EXECUTION_NS::receiver_t;
using LOOM_EXECUTION_NS::schedule;
using LOOM_EXECUTION_NS::scheduler;
using LOOM_EXECUTION_NS::scheduler_t;
using LOOM_EXECUTION_NS::sender;
using LOOM_EXECUTION_NS::sender_t;
using LOOM_EXECUTION_NS::set_error;
using LOOM_EXECUTION_NS::set_error_t;
using LOOM_EXECUTION_NS::set_stopped;
using LOOM_EXECUTION_NS::set_stopped_t;
using LOOM_EXECUTION_NS::set_value;
using LOOM_EXECUTION_NS::set_value_t;
using LOOM_EXECUTION_NS::start;
using LOOM_EXECUTION_NS::starts_on;
using LOOM_EXECUTION_NS::sync_wait;
using LOOM_EXECUTION_NS::then;
using LOOM_EXECUTION_NS::upon_error;
using LOOM_EXECUTION_NS::when_all;
/// The empty environment.
using env = LOOM_EXECUTION_NS::env<>;
using LOOM_EXECUTION_STOP_NS::inplace_stop_source;
using LOOM_EXECUTION_STOP_NS::inplace_stop_token;
using LOOM_EXECUTION_STOP_NS::never_stop_token;
/// The stop token type an environment of type Env provides.
template <class Env>
using stop_token_of_t = std::remove_cvref_t<decltype(get_stop_token(std::declval<const Env&>()))>;
/// The environment type of a sender or receiver T.
template <class T>
using env_of_t = decltype(get_env(std::declval<const T&>()));
/// The stop callback type of Token for callback F.
template <class Token, class F>
using stop_callback_for_t = typename Token::template callback_type<F>;
/// True: a P2300 backend supplies the names above.
inline constexpr bool has_execution_backend = true;
}  // namespace loom::execution
#else
#include <loom/execution/detail/algorithms.hpp>
#include <loom/execution/detail/protocol.hpp>
#define LOOM_EXECUTION_BACKEND_NAME "none"
namespace loom::execution {
/// False: loom supplies the protocol and algorithms itself.
inline constexpr bool has_execution_backend = false;
}  // namespace loom::execution
#endif

/// The P2300 sender front end: senders for fabric operations, and the selected backend's names.
namespace loom::execution {
/// "std::execution", "stdexec", "beman::execution"; "none" when loom supplies the protocol.
inline constexpr const char* execution_backend_name = LOOM_EXECUTION_BACKEND_NAME;
/// The algorithms loom::execution names (every backend has them; so does loom's own set).
namespace features {
inline constexpr bool has_then = true;        ///< execution::then is available
inline constexpr bool has_upon_error = true;  ///< execution::upon_error is available
inline constexpr bool has_let_value = true;   ///< execution::let_value is available
inline constexpr bool has_when_all = true;    ///< execution::when_all is available
inline constexpr bool has_sync_wait = true;   ///< execution::sync_wait is available
inline constexpr bool has_starts_on = true;   ///< execution::starts_on is available
/// loom's own in-place stop tokens (no backend) or the backend's.
inline constexpr bool has_inplace_stop_token = true;
}  // namespace features
}  // namespace loom::execution
