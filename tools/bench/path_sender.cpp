// tools/bench/path_sender.cpp — the sender path (path_loom.hpp).
#include "path_loom.hpp"

namespace loom::bench {

auto make_sender_path(std::size_t offset, std::size_t copy) -> path_ptr {
    return place_copy<loom_paths::sender_path>(copy, offset);
}

}  // namespace loom::bench
