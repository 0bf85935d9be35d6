#include "base/syscalls.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace sbx::base {

pid_t Clone3(Clone3Args* args) {
  return static_cast<pid_t>(::syscall(SYS_clone3, args, sizeof(*args)));
}

int PivotRoot(const char* new_root, const char* put_old) {
  return static_cast<int>(::syscall(SYS_pivot_root, new_root, put_old));
}

int OpenAt2(int dirfd, const char* path, const open_how* how) {
  return static_cast<int>(::syscall(SYS_openat2, dirfd, path, how, sizeof(*how)));
}

int PidfdSendSignal(int pidfd, int sig) {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
}

int PidfdOpen(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

pid_t ParentPidOf(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/status";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[4096];
  const ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  const char* field = std::strstr(buf, "\nPPid:");
  return field == nullptr ? -1 : static_cast<pid_t>(std::strtol(field + 6, nullptr, 10));
}

}  // namespace sbx::base
