#include "dispatch/dispatch.h"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <functional>

#include <fmt/format.h>

#include "base/exit_status.h"
#include "dispatch/acquire.h"
#include "dispatch/dispatch_plan.h"
#include "dispatch/dry_run_plan.h"
#include "dispatch/finish.h"
#include "dispatch/git/git_guard.h"
#include "dispatch/git/harvest.h"
#include "dispatch/launch.h"
#include "dispatch/record/announce.h"
#include "dispatch/record/record.h"
#include "dispatch/resolve.h"
#include "dispatch/serve.h"
#include "dispatch/sys/stop_signals.h"
#include "dispatch/terminal/tty_session.h"
#include "relay/ledger.h"

namespace sbx::dispatch {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The commit the agent starts from (the fresh clone's HEAD, or the given workspace's, read
// by the harvest sandbox under the stop signals: `*stopped` is one that stopped it). Needed
// only with --patch.
base::Status RecordBaseCommit(const ResolvedRequest& r, const GitGuard& guard,
                              const HarvestPlan& harvest, int stop_fd, int* stopped,
                              DispatchResult* result) {
  // A workspace with no git directory anywhere has no base commit: no sandbox is started
  // to find that out (the harvest's own error stands when --patch asks for one).
  if (!guard.clone_head() && guard.guarded().empty() && !r.request.patch) return {};
  HarvestBounds read{.stop_fd = stop_fd};
  auto base_commit = guard.clone_head() ? base::Result<std::string>(*guard.clone_head())
                                        : ReadBaseCommit(harvest, &read);
  *stopped = read.stopped_by;
  if (*stopped != 0) return {};
  if (!base_commit && r.request.patch) return base_commit.error();
  if (base_commit) result->base_commit = *base_commit;
  return {};
}

// The stop signal (or the deadline, SIGALRM) that came before the agent could start:
// nothing is started then.
base::Status StoppedBeforeStart(int sig, DispatchResult* result) {
  if (sig == SIGALRM) {
    result->reason = DispatchReason::kTimeout;
    result->exit_code = kTimeoutExit;
    result->error = "--timeout expired before the agent started: nothing ran";
    return {};
  }
  result->stop_signal = sig;
  result->signal = sig;
  result->reason = DispatchReason::kInterrupted;
  result->exit_code = base::kSignalExitBase + sig;
  result->error =
      fmt::format("interrupted by {} before the agent started: nothing ran", StopSignalName(sig));
  return {};
}

// One dispatch from request to exit status, in the order of its stages: Resolve (every
// check, nothing created), then the dry run's print or Acquire (everything the dispatch
// holds on the host, in one owner that lets it go in reverse order on every path out), the
// plan (CompileDispatchPlan), Launch through the backend, Serve (the event loop), then
// Finish: reap, the git guard's check, the harvest. The stop signals are taken as events
// from Acquire on.
base::Status Dispatch(const DispatchRequest& given, const std::string& self_exe,
                      DispatchResult* result, Clock::time_point start, DispatchDirEnd* dir_end) {
  const pid_t parent = ::getppid();
  auto resolved = Resolve(given);
  if (!resolved) return resolved.error();
  if (resolved->request.dry_run) return DryRun(*resolved, self_exe, result);
  AcquiredDispatch acquired;
  if (auto st = acquired.Acquire(&*resolved, {start, parent, dir_end}, result); !st) return st;
  if (acquired.stopped_by != 0) return StoppedBeforeStart(acquired.stopped_by, result);
  const ResolvedRequest& r = *resolved;
  const DispatchRequest& request = r.request;
  const int stop_fd = acquired.stop_fd.get();
  auto planned = CompileDispatchPlan(r, acquired.Facts(self_exe));
  if (!planned) return planned.error();
  ReportPlan(*planned, result);
  // After the plan, not in Acquire: a given workspace's base commit is read by git in the
  // harvest's own sandbox, which the plan compiles.
  int stop = 0;
  if (auto st = RecordBaseCommit(r, *acquired.guard, planned->harvest, stop_fd, &stop, result); !st)
    return st;
  if (stop == 0) stop = TakeStopSignal(stop_fd);
  if (stop != 0) return StoppedBeforeStart(stop, result);
  AnnounceDispatch(result->id, acquired.dirs->workspace, acquired.dirs->out);
  HostResources& held = acquired.held;
  std::unique_ptr<TtySession>& tty = held.tty;
  auto sandbox = Launch(request, tty.get(), planned->plan);
  if (!sandbox) return sandbox.error();
  // The agent may write from now on: what it leaves is the caller's, whatever follows.
  acquired.cleanup->Keep();
  // From now on the channels have a supervisor to check their peers against.
  held.gate.Expect([&sandbox] { return (*sandbox)->SupervisorPidfd(); },
                   r.run_as ? r.run_as->uid : r.host.euid);
  held.hosts_fd.reset();
  if (auto st = held.report->Start(); !st) return st;
  if (tty) {
    if (auto st = tty->Start(); !st) return st;
  }
  result->setup_ms = MsSince(start);
  // Serve.
  std::function<void()> hang_up;
  if (tty) hang_up = [&tty] { tty->HangUp(); };
  LoopOutcome outcome =
      ServeUntilExit(*held.loop, **sandbox, stop_fd, request, hang_up, held.disk.get());
  if (tty) tty->Finish();
  Finish(r, outcome, sandbox->get(), &held, &*acquired.guard, acquired.dirs->workspace, *planned,
         stop_fd, &acquired.patch_file, result);
  return {};
}

}  // namespace

DispatchResult RunDispatch(const DispatchRequest& request, const std::string& self_exe) {
  DispatchResult result;
  auto start = Clock::now();
  result.id = NewDispatchId();
  result.backend = request.backend;
  result.labels = request.labels;
  result.started_at = relay::FormatRfc3339Utc(std::chrono::system_clock::now());
  DispatchDirEnd dir_end;  // <root>/<id> after the run: its record, or --rm
  if (auto st = Dispatch(request, self_exe, &result, start, &dir_end); !st) {
    result.reason = DispatchReason::kRuntimeError;
    result.exit_code = kRuntimeFailureExit;
    result.error = st.error().Render();
  }
  result.total_ms = MsSince(start);
  dir_end.Finish(result);
  return result;
}

}  // namespace sbx::dispatch
