// UniqueFd: the only owner of a file descriptor. A bare `int` parameter anywhere in the
// project means "borrowed, still owned by the caller".
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <utility>

#include "base/error.h"

namespace sbx::base {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    reset(other.release());
    return *this;
  }
  ~UniqueFd() { reset(); }

  [[nodiscard]] int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  [[nodiscard]] int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

struct FdPair {
  UniqueFd read_end;   // [0] for socketpairs
  UniqueFd write_end;  // [1] for socketpairs
};

// Both ends close-on-exec.
Result<FdPair> MakePipe();
// AF_UNIX socketpair of `type`, both ends close-on-exec.
Result<FdPair> MakeSocketPair(int type);

}  // namespace sbx::base
