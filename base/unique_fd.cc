#include "base/unique_fd.h"

#include <sys/socket.h>

namespace sbx::base {

Result<FdPair> MakePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) < 0) return ErrnoError("pipe2");
  return FdPair{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

Result<FdPair> MakeSocketPair(int type) {
  int fds[2];
  if (::socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, fds) < 0) return ErrnoError("socketpair");
  return FdPair{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

}  // namespace sbx::base
