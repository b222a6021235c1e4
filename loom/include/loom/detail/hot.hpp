// loom/detail/hot.hpp — marks for the data paths.
#pragma once

/// On the submission and completion paths (gated sends and receives, batch CQ reads): a handful
/// of instructions around one provider call that the compiler must not keep out of line. GCC 12
/// did for the receive helpers and completion_queue::read_tagged when called from many places:
/// a call and a result through memory per operation cost 2-4 % of shm 64-128 B streams.
#if defined(__GNUC__) || defined(__clang__)
#define LOOM_SUBMIT_INLINE [[gnu::always_inline]] inline
#else
#define LOOM_SUBMIT_INLINE inline
#endif
