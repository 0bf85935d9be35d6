#include "base/syscalls.h"

#include <sys/syscall.h>
#include <unistd.h>

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

}  // namespace sbx::base
