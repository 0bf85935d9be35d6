#include "dispatch/sys/run_as_child.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>

#include <fmt/format.h>

namespace sbx::dispatch {

int SwitchToIds(const runtime::SandboxSpec::HostIds& ids) {
  if (int err = base::SwitchToIds(ids.uid, ids.gid); err != 0) return err;
  // The switch cleared every capability set; make sure no exec can add any back.
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 ? 0 : errno;
}

base::Result<ChildRun> RunChildAs(const std::optional<runtime::SandboxSpec::HostIds>& ids,
                                  const std::function<int(const base::ChildReport&)>& body,
                                  const std::function<void(pid_t)>& while_running) {
  // One report for the switch (step 0) and the body's steps; the child's end closes when it
  // execs or exits, so it is read once the child is gone.
  auto report = base::ChildReport::Open();
  if (!report) return report.error();
  const pid_t parent = ::getpid();
  // Fork, not clone: the body runs ordinary code.
  auto child = base::ForkWithPidfd("a child to switch ids in");
  if (!child) return child.error();
  if (child->pid == 0) {
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
    ::_exit(body(*report));
  }
  report->CloseWriteEnd();
  if (while_running) while_running(child->pid);
  ChildRun run;
  while (::waitpid(child->pid, &run.status, 0) < 0) {
    if (errno != EINTR) return base::ErrnoError("waitpid");
  }
  auto failure = report->Read();
  if (!failure) return failure.error();
  if (*failure && (*failure)->step == 0) {
    return base::Error((*failure)->err, "Can't switch to", fmt::format("uid {}", ids->uid));
  }
  run.failure = *failure;
  return run;
}

base::Result<int> RunInChildAs(const std::optional<runtime::SandboxSpec::HostIds>& ids,
                               const std::function<int()>& body,
                               const std::function<void(pid_t)>& while_running) {
  auto run = RunChildAs(
      ids, [&body](const base::ChildReport&) { return body(); }, while_running);
  if (!run) return run.error();
  return run->status;
}

}  // namespace sbx::dispatch
