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

// Blocks the stop signals and returns a non-blocking signalfd for them. Children restore
// their own mask (runtime/child, run_as_child.h).
base::Result<base::UniqueFd> BlockStopSignals();

// "SIGINT", "SIGTERM", "SIGHUP" (or "signal N").
std::string StopSignalName(int sig);

// The first stop signal waiting on `signal_fd` (consumed), or 0 when none is.
int TakeStopSignal(int signal_fd);

// Waits until the process `pidfd` exits or a stop signal arrives on `signal_fd`; on a
// signal, kills the process group `pgid` (SIGKILL: a clone has nothing to save) and
// returns the signal, else 0. `other_fd` (or -1) is read to its end meanwhile into
// `output`, up to `limit` bytes kept.
int WaitOrStop(int pidfd, int signal_fd, pid_t pgid, int other_fd, std::string* output,
               size_t limit);

}  // namespace sbx::dispatch
