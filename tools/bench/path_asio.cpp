// tools/bench/path_asio.cpp — the asio path (path_loom.hpp).
#include "path_loom.hpp"

namespace loom::bench {

auto make_asio_path(std::size_t offset, std::size_t copy) -> path_ptr {
    return place_copy<loom_paths::asio_path>(copy, offset);
}

}  // namespace loom::bench
