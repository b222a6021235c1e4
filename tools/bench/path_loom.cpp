// tools/bench/path_loom.cpp — the loom (core API) path (path_loom.hpp).
#include "path_loom.hpp"

namespace loom::bench {

auto make_loom_path(std::size_t offset, std::size_t copy) -> path_ptr {
    return place_copy<loom_paths::core_path>(copy, offset);
}

}  // namespace loom::bench
