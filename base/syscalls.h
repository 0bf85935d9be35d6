// Thin wrappers for the system calls glibc 2.36 does not wrap (clone3, pivot_root,
// openat2). They follow the libc convention: -1 and errno on failure. The new mount API
// (open_tree, move_mount, mount_setattr, fsopen/fsconfig/fsmount) comes from <sys/mount.h>.
#pragma once

#include <linux/openat2.h>
#include <sys/types.h>

#include <cstdint>

namespace sbx::base {

struct Clone3Args {
  uint64_t flags = 0;
  uint64_t pidfd = 0;  // out: pointer to int
  uint64_t child_tid = 0;
  uint64_t parent_tid = 0;
  uint64_t exit_signal = 0;
  uint64_t stack = 0;
  uint64_t stack_size = 0;
  uint64_t tls = 0;
  uint64_t set_tid = 0;
  uint64_t set_tid_size = 0;
  uint64_t cgroup = 0;
};
static_assert(sizeof(Clone3Args) == 88, "struct clone_args, CLONE_ARGS_SIZE_VER2");

// Fork-like clone3 (no new stack): returns 0 in the child, the pid in the parent.
pid_t Clone3(Clone3Args* args);
int PivotRoot(const char* new_root, const char* put_old);
int OpenAt2(int dirfd, const char* path, const open_how* how);
int PidfdSendSignal(int pidfd, int sig);
int PidfdOpen(pid_t pid);

// The parent pid of `pid` (PPid: of /proc/PID/status), or -1 when it cannot be read.
pid_t ParentPidOf(pid_t pid);

}  // namespace sbx::base
