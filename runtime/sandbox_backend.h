// The one way a compiled Plan is started, whichever backend runs it: the native launcher
// (runtime/launcher.h) or bwrap (runtime/bwrap_backend.h). Both give back a
// SandboxProcess: the sandbox's first process, how to signal it and how to wait for it.
#pragma once

#include <csignal>
#include <memory>
#include <string>

#include "base/error.h"
#include "base/unique_fd.h"
#include "runtime/plan.h"

namespace sbx::runtime {

class SandboxProcess {
 public:
  SandboxProcess() = default;
  SandboxProcess(const SandboxProcess&) = delete;
  SandboxProcess& operator=(const SandboxProcess&) = delete;
  virtual ~SandboxProcess() = default;

  // Readable once the sandbox's first process has ended.
  [[nodiscard]] virtual int pidfd() const = 0;
  // SIGKILL goes to the first process: the sandbox dies with it. Other signals are for the
  // supervisor (the sandbox's pid 1), which passes them to the agent.
  virtual void Signal(int sig) const = 0;
  // After pidfd() turned readable: the wait status of the sandbox's first process.
  virtual siginfo_t Reap() = 0;
  // A pidfd of the sandbox's supervisor, taken before it could have ended (so it names that
  // process also after it was reaped): the first process natively; under bwrap, bwrap's
  // child, taken while bwrap held it before the command (an invalid fd when bwrap failed
  // before it forked). What the dispatch's channels check their peer against
  // (relay/peer_check.h).
  [[nodiscard]] virtual base::UniqueFd SupervisorPidfd() const = 0;
};

class SandboxBackend {
 public:
  SandboxBackend() = default;
  SandboxBackend(const SandboxBackend&) = delete;
  SandboxBackend& operator=(const SandboxBackend&) = delete;
  virtual ~SandboxBackend() = default;

  // Starts `plan`, which must outlive the returned process.
  [[nodiscard]] virtual base::Result<std::unique_ptr<SandboxProcess>> Start(
      const Plan& plan) const = 0;
};

// The native launcher: runtime::Start.
std::unique_ptr<SandboxBackend> NativeBackend();
// bwrap at `bwrap_path`, in a child that enters the plan's cgroups, takes the sandbox's ids
// when the plan maps the sandbox onto other host ids (bwrap cannot), lowers the rlimits
// that mean the same across bwrap's exec, then becomes bwrap. A step of that child that
// fails (or the exec) is Start's error, with its errno. bwrap's --info-fd and --block-fd
// are the backend's own (SandboxProcess::SupervisorPidfd): a plan must not name them.
std::unique_ptr<SandboxBackend> BwrapBackend(std::string bwrap_path);

}  // namespace sbx::runtime
