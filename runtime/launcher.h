// Launch: the parent side of a native sandbox. Clones the child with the plan's
// namespaces, feeds it, watches it, and turns how it ended into an exit code.
//
// Parent-side contract: must be called from a single-threaded process (checked), because
// the child after clone uses malloc (libnl, libcap) and exec-time state.
#pragma once

#include "base/error.h"
#include "base/unique_fd.h"
#include "runtime/plan.h"

namespace sbx::runtime {

// A sandbox whose command has been exec'd. Owns the child's pidfd; destroying it before
// the command finished kills the sandbox (SIGKILL to its pid 1) and reaps it.
class StartedSandbox {
 public:
  StartedSandbox(const Plan& plan, pid_t pid, base::UniqueFd pidfd, base::UniqueFd status_fd)
      : plan_(&plan), pid_(pid), pidfd_(std::move(pidfd)), status_fd_(std::move(status_fd)) {}
  StartedSandbox(StartedSandbox&&) = default;
  StartedSandbox& operator=(StartedSandbox&&) = delete;
  StartedSandbox(const StartedSandbox&) = delete;
  StartedSandbox& operator=(const StartedSandbox&) = delete;
  ~StartedSandbox();

  [[nodiscard]] pid_t pid() const { return pid_; }
  // Readable once the sandbox's first process has exited (for an event loop).
  [[nodiscard]] int pidfd() const { return pidfd_.get(); }

  // Blocks until the command is done: the reaper's report when there is one (other
  // sandbox processes may go on, as with bwrap), else the child's exit. Returns the exit
  // code (status, or 128+signal) and writes the --json-status-fd exit line.
  int Wait();
  // Sends `sig` to the sandbox's first process (pid 1 of its pid namespace: SIGKILL there
  // ends every process of the sandbox).
  void Signal(int sig) const;
  // The caller reaped the child itself (waitid on pidfd()): nothing left to kill.
  void MarkReaped() { done_ = true; }
  // --pidns: the sandbox is the process the child forked into the joined pid namespace
  // (now a child of this monitor, a subreaper), no longer the cloned child itself.
  void FollowTo(pid_t pid, base::UniqueFd pidfd);

 private:
  const Plan* plan_;
  pid_t pid_;
  base::UniqueFd pidfd_;
  base::UniqueFd status_fd_;
  bool done_ = false;
};

// Clones the sandbox and returns once its command was exec'd, or with the Error the
// child reported (rendered as bwrap's message).
base::Result<StartedSandbox> Start(const Plan& plan);

// Runs the plan. Returns the exit code bwrap would: the command's status, 128+signal, or
// an Error (setup or exec failure, rendered as bwrap's message) for which bwrap exits 1.
base::Result<int> Launch(const Plan& plan);

}  // namespace sbx::runtime
