// Serve, the event loop of a dispatch, and what the sandbox's end means for its result.
#pragma once

#include <csignal>
#include <functional>

#include "dispatch/host/disk_watch.h"
#include "dispatch/request/request.h"
#include "dispatch/request/result.h"
#include "relay/event_loop.h"
#include "runtime/sandbox_backend.h"

namespace sbx::dispatch {

struct LoopOutcome {
  bool timed_out = false;
  bool killed = false;  // the grace after a stop signal ran out, or a second one came
  int stop_signal = 0;  // the first SIGINT/SIGTERM/SIGHUP `run` got
  int passed_on = 0;    // what it went on to the supervisor as (0: a terminal hang-up)
  bool disk = false;    // the disk watcher stopped it: --disk or --inodes crossed
};

// Serves the relays until the sandbox's first process is gone. SIGINT and SIGTERM are
// passed to the supervisor as they came (it passes them to the agent); SIGHUP without a
// terminal as SIGTERM. A second one, or `grace` without an end, kills the sandbox whole.
// `disk`, when given, stops it the same way (SIGTERM, then the grace) when a bound is crossed.
// The dispatch's deadline (SIGALRM on `signal_fd`, stop_signals.h) kills it whole at once.
// With a terminal (`hang_up` set), SIGHUP is the caller's terminal going away: the agent's
// terminal is hung up instead, so it gets SIGHUP through its own terminal as it would there.
LoopOutcome ServeUntilExit(relay::EventLoop& loop, const runtime::SandboxProcess& sandbox,
                           int signal_fd, const DispatchRequest& request,
                           const std::function<void()>& hang_up, DiskWatch* disk = nullptr);

// What the sandbox's end means. The sandbox's pid 1 (the supervisor; under bwrap, bwrap)
// reports an agent a signal ended as 128 + N, as a shell does, so such a code is read as
// that signal (dispatch/record/exit_reason.h). Every stop signal `run` got makes the
// dispatch `interrupted`: with the agent's own code when it handled the signal and exited
// by itself, with 128 + the stop signal when it died of it (or of the kill after the grace).
void RecordExit(const siginfo_t& info, const LoopOutcome& loop, DispatchResult* result);

}  // namespace sbx::dispatch
