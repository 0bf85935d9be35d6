#include "dispatch/sys/run_as_child.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>

#include <fmt/format.h>

#include "base/child_process.h"

namespace sbx::dispatch {

int SwitchToIds(const runtime::SandboxSpec::HostIds& ids) {
  if (int err = base::SwitchToIds(ids.uid, ids.gid); err != 0) return err;
  // The switch cleared every capability set; make sure no exec can add any back.
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 ? 0 : errno;
}

base::Result<int> RunInChildAs(const std::optional<runtime::SandboxSpec::HostIds>& ids,
                               const std::function<int()>& body,
                               const std::function<void(pid_t)>& while_running) {
  // The switch's failure comes back on the report; the report's end is closed before the
  // body runs, so reading it returns as soon as the child is its new ids.
  auto report = base::ChildReport::Open();
  if (!report) return report.error();
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return base::ErrnoError("Can't fork");
  if (pid == 0) {
    report->CloseReadEnd();
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(kChildCantSwitchIds);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (ids) {
      if (int err = SwitchToIds(*ids); err != 0) report->Fail(0, err, kChildCantSwitchIds);
      // HOME still names the caller's home, which these ids cannot read: git would warn
      // about every file it looks for there (/root/.config/git/attributes). Nothing done
      // as them has a home; their files go where the dispatch says.
      ::setenv("HOME", "/nonexistent", 1);
      ::unsetenv("XDG_CONFIG_HOME");
    }
    // A change of credentials clears the parent-death signal: set it again, as the new ids.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(kChildCantSwitchIds);
    report->CloseWriteEnd();
    ::_exit(body());
  }
  report->CloseWriteEnd();
  auto failure = report->Read();
  if (failure && !*failure && while_running) while_running(pid);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return base::ErrnoError("waitpid");
  }
  if (!failure) return failure.error();
  if (*failure) {
    return base::Error((*failure)->err, "Can't switch to", fmt::format("uid {}", ids->uid));
  }
  return status;
}

}  // namespace sbx::dispatch
