// The monitor's side of --userns and --pidns: namespaces the caller hands in as fds,
// joined instead of created. Called only by the monitor (runtime/launcher.cc), in the
// order bwrap uses; the child's side is in runtime/child/identity.cc and child_main.cc.
#pragma once

#include <sys/types.h>

#include "base/error.h"
#include "base/unique_fd.h"

namespace sbx::runtime {

// --userns: enters the user namespace `fd` before clone, so every namespace the clone
// creates is owned by it. bwrap's messages (EINVAL: not a descendant of ours).
base::Status JoinUserNamespace(int fd);

// --pidns: makes this process a child subreaper and returns a SOCK_SEQPACKET pair with
// SO_PASSCRED on read_end; the sandbox's final process sends its pid on write_end.
base::Result<base::FdPair> PreparePidSocket();

// The pid (in this process's pid namespace) the sandbox's final process sent on
// `socket_fd`, with bwrap's messages when none came.
base::Result<pid_t> ReceivePid(int socket_fd);

// Reaps the intermediate processes of --pidns (the clone child `first_pidfd`, and with
// --unshare-pid the process it forked) until `target` is this process's own child.
void AdoptSandboxProcess(int first_pidfd, pid_t target);

}  // namespace sbx::runtime
