// The monitor's side of --userns and --pidns (docs/bwrap-behaviour.md, "The sequence"):
// joining the caller's user namespace before clone, and finding and adopting the process
// the child forks into the caller's pid namespace.
#include "runtime/joined_namespaces.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "base/socket_message.h"
#include "base/syscalls.h"

namespace sbx::runtime {
namespace {

using base::Error;
using base::UniqueFd;

}  // namespace

// --userns: the monitor itself enters the namespace before clone, so the namespaces the
// clone creates are owned by it (the monitor joins --userns before the clone).
base::Status JoinUserNamespace(int fd) {
  if (::setns(fd, CLONE_NEWUSER) == 0) return {};
  if (errno == EINVAL) {
    return Error::Message(
        "Joining the specified user namespace failed, it might not be a descendant of the "
        "current user namespace.");
  }
  return base::ErrnoError("Joining specified user namespace failed");
}

// --pidns: the monitor becomes a child subreaper, so the process the child forks into the
// joined pid namespace is re-parented to it once the intermediate processes exit, and
// gets a socket pair whose [0] end receives that process's pid.
base::Result<base::FdPair> PreparePidSocket() {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  auto pair = base::MakeSocketPair(SOCK_SEQPACKET);
  if (!pair) return Error(pair.error().err(), "Can't create intermediate pids socket");
  int enable = 1;
  if (::setsockopt(pair->read_end.get(), SOL_SOCKET, SO_PASSCRED, &enable, sizeof(enable)) != 0) {
    return base::ErrnoError("Can't set SO_PASSCRED");
  }
  return pair;
}

// The pid the sandbox's final process sent (in this process's pid namespace), with
// bwrap's messages. EOF without credentials means the child died before sending.
base::Result<pid_t> ReceivePid(int socket_fd) {
  char byte = 0;
  base::SocketMessage<ucred> message(&byte, 1);
  if (message.Receive(socket_fd, 0) < 0) return base::ErrnoError("Can't read pid from socket");
  if (!message.HasControl()) return Error::Message("Unexpected short read from pid socket");
  ucred cred{};
  if (!message.Find(SOL_SOCKET, SCM_CREDENTIALS, &cred)) {
    return Error::Message("No pid returned on socket");
  }
  return cred.pid;
}

// Reaps the intermediate processes of --pidns (the clone child, and with --unshare-pid
// the one it forked) until `target` is this monitor's own child, so that waitid() on it
// works. `target` itself waits for the go signal, so it is never the one reaped here
// unless it was killed, in which case the loop stops too.
void AdoptSandboxProcess(int first_pidfd, pid_t target) {
  siginfo_t info{};
  while (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(first_pidfd), &info, WEXITED) !=
             0 &&
         errno == EINTR) {
  }
  const pid_t self = ::getpid();
  while (base::ParentPidOf(target) != self) {
    info = {};
    if (::waitid(P_ALL, 0, &info, WEXITED | WNOWAIT) != 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (info.si_pid == target) return;
    ::waitid(P_PID, static_cast<id_t>(info.si_pid), &info, WEXITED);
  }
}

}  // namespace sbx::runtime
