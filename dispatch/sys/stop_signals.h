// The signals that stop a dispatch (SIGINT, SIGTERM, SIGHUP), taken as events instead of
// deaths from the first step of `run` on: a stop during the clone ends the clone and
// removes what it made, a stop before the sandbox starts starts nothing, and a stop while
// the agent runs is passed to it.
#pragma once

#include <sys/types.h>

#include <string>

#include "base/error.h"
#include "base/unique_fd.h"

namespace sbx::dispatch {

// Blocks the stop signals and SIGALRM (the dispatch's deadline, ArmDispatchDeadline) and
// returns a non-blocking signalfd for them. Children restore their own mask (runtime/child,
// run_as_child.h). A SIGHUP the caller left ignored (nohup) stays ignored: such a caller
// asked for `run` to outlive its terminal.
base::Result<base::UniqueFd> BlockStopSignals();

// The dispatch's one deadline (--timeout): SIGALRM arrives on the signalfd once `seconds`
// have passed since `run` started, `seconds_already_spent` of them gone already (at once
// when all are), whichever step is running then — the clone, the sandbox or the harvest — so every
// step waits on the same fd.
base::Status ArmDispatchDeadline(double seconds, double seconds_already_spent);

// --die-with-parent: SIGTERM, a stop signal, when the process `parent` (our parent when
// `run` started) is gone; at once when it already is.
base::Status StopWhenParentDies(pid_t parent);

// "SIGINT", "SIGTERM", "SIGHUP", "SIGALRM" (or "signal N").
std::string StopSignalName(int sig);

// The first stop signal waiting on `signal_fd` (consumed), or 0 when none is.
int TakeStopSignal(int signal_fd);

// What WaitOrStop returns when its own `timeout_ms` ran out.
inline constexpr int kWaitTimedOut = -1;

// Waits until the process `pidfd` exits or a stop signal arrives on `signal_fd`; on a
// signal, kills the process group `pgid` (SIGKILL: a clone or a harvest has nothing to
// save) and returns the signal, else 0. `other_fd` (or -1) is read to its end meanwhile
// into `output`, up to `limit` bytes kept. With `timeout_ms` >= 0, the group is killed
// after that long too, and kWaitTimedOut returned.
int WaitOrStop(int pidfd, int signal_fd, pid_t pgid, int other_fd, std::string* output,
               size_t limit, int timeout_ms = -1);

}  // namespace sbx::dispatch
