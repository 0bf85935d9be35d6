// Process endings as a shell reports them: the exit status, or 128 + the signal that ended
// the process. The one conversion every waiter in the project uses (the launcher, the
// sandbox's pid 1, the bwrap backend, the supervisor, `run`'s helper children).
#pragma once

#include <sys/wait.h>

#include <csignal>

namespace sbx::base {

// Added to the number of the signal that ended a process.
inline constexpr int kSignalExitBase = 128;

// A waitpid() status. Pure and allocation-free: the sandbox's child uses it after clone.
// A status that is neither an exit nor a signal (a stopped process, which no caller
// passes on) gives 255.
constexpr int ExitCodeFromWaitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return kSignalExitBase + WTERMSIG(status);
  return 255;
}

// The same from waitid()'s siginfo: CLD_EXITED carries the exit status, CLD_KILLED and
// CLD_DUMPED the signal.
constexpr int ExitCodeFromSiginfo(const siginfo_t& info) {
  return info.si_code == CLD_EXITED ? info.si_status : kSignalExitBase + info.si_status;
}

}  // namespace sbx::base
