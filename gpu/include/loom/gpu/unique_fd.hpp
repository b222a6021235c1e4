// loom/gpu/unique_fd.hpp — an owning file descriptor (closed in the destructor, movable).
#pragma once

#include <unistd.h>

#include <utility>

namespace loom::gpu {

/// An owning file descriptor: closed by the destructor, movable.
class unique_fd {
public:
    unique_fd() noexcept = default;
    /// Takes ownership of `fd` (-1: none).
    explicit unique_fd(int fd) noexcept : fd_(fd) {}
    /// Takes over `other`'s descriptor; `other` is left empty.
    unique_fd(unique_fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    /// Closes the owned descriptor and takes over `other`'s.
    auto operator=(unique_fd&& other) noexcept -> unique_fd& {
        if (this != &other) reset(std::exchange(other.fd_, -1));
        return *this;
    }
    unique_fd(const unique_fd&) = delete;
    auto operator=(const unique_fd&) -> unique_fd& = delete;
    ~unique_fd() { reset(); }

    /// The descriptor; -1 for none.
    [[nodiscard]] auto get() const noexcept -> int { return fd_; }
    /// True when a descriptor is owned.
    [[nodiscard]] explicit operator bool() const noexcept { return fd_ >= 0; }
    /// Gives up ownership: the caller closes the returned descriptor.
    [[nodiscard]] auto release() noexcept -> int { return std::exchange(fd_, -1); }
    /// Closes the owned descriptor (if any) and takes `fd`.
    void reset(int fd = -1) noexcept {
        if (fd_ >= 0) ::close(fd_);
        fd_ = fd;
    }

private:
    int fd_ = -1;
};

}  // namespace loom::gpu
