// loom/detail/single_threaded.hpp — whether the process runs one thread, as the C library knows.
#pragma once

#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#define LOOM_DETAIL_HAS_LIBC_SINGLE_THREADED 1
#endif

namespace loom::detail {

/// True while the process has never run a second thread, as the C library knows it (glibc 2.32
/// and later; always false where the C library does not say). pthread_create clears the flag
/// before the new thread runs, and starting a thread orders everything its creator did before:
/// a section that cannot start a thread needs no lock and no atomic read-modify-write while
/// this holds (libstdc++'s shared_ptr counts rely on the same flag). Threads made with a raw
/// clone() are not seen.
[[nodiscard]] inline auto process_is_single_threaded() noexcept -> bool {
#ifdef LOOM_DETAIL_HAS_LIBC_SINGLE_THREADED
    return ::__libc_single_threaded != 0;
#else
    return false;
#endif
}

}  // namespace loom::detail
