#include "dispatch/sys/run_as_child.h"

#include <grp.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

namespace sbx::dispatch {

int SwitchToIds(const runtime::SandboxSpec::HostIds& ids) {
  // Groups first: after setresuid we could no longer drop root's supplementary groups.
  if (::setgroups(0, nullptr) != 0) return errno;
  if (::setresgid(ids.gid, ids.gid, ids.gid) != 0) return errno;
  if (::setresuid(ids.uid, ids.uid, ids.uid) != 0) return errno;
  // From uid 0 to non-zero without keep-caps the kernel clears permitted, effective and
  // ambient; check rather than trust it, and make sure no exec can add any back.
  uid_t r = 0;
  uid_t e = 0;
  uid_t s = 0;
  if (::getresuid(&r, &e, &s) != 0 || r != ids.uid || e != ids.uid || s != ids.uid) return EPERM;
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  return 0;
}

base::Result<int> RunInChildAs(const std::optional<runtime::SandboxSpec::HostIds>& ids,
                               const std::function<int()>& body,
                               const std::function<void(pid_t)>& while_running) {
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return base::ErrnoError("Can't fork");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(kChildCantSwitchIds);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (ids && SwitchToIds(*ids) != 0) ::_exit(kChildCantSwitchIds);
    // A change of credentials clears the parent-death signal: set it again, as the new ids.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(kChildCantSwitchIds);
    ::_exit(body());
  }
  if (while_running) while_running(pid);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return base::ErrnoError("waitpid");
  }
  return status;
}

}  // namespace sbx::dispatch
