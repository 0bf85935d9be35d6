#include "dispatch/finish.h"

#include <algorithm>
#include <csignal>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/exit_status.h"
#include "dispatch/git/harvest.h"
#include "dispatch/host/cgroup.h"
#include "dispatch/host/start_report.h"
#include "dispatch/sys/stop_signals.h"

namespace sbx::dispatch {
namespace {

// The value of PATH in an environment ("" without one).
std::string PathOf(const std::vector<std::string>& env) {
  std::string path;
  for (const std::string& entry : env) {
    if (entry.starts_with("PATH=")) path = entry.substr(5);
  }
  return path;
}

// After the sandbox: an agent the OOM killer ended in the dispatch's cgroup is reported as
// such. The cgroup stays for the harvest.
void RecordOom(const DispatchCgroup& cgroup, uint64_t memory, DispatchResult* result) {
  if (result->exit_code == base::kSignalExitBase + SIGKILL && cgroup.OomKills() > 0) {
    result->reason = DispatchReason::kOom;
    result->error = fmt::format(
        "out of memory: the sandbox reached --memory {} bytes and the kernel killed it", memory);
  }
}

// A step after the agent that failed fails the run: reason `failed`, exit 125, unless the
// dispatch already ended otherwise (a timeout, an interrupt, the OOM killer, the disk),
// whose reason and nonzero code stay. A step the deadline (SIGALRM) or a stop signal ended
// makes the dispatch `timeout` or `interrupted`, as the same during the agent would have.
void RecordStepFailure(DispatchReason failed, int stopped_by, DispatchResult* result) {
  if (result->reason != DispatchReason::kExited && result->exit_code != 0) return;
  if (stopped_by == SIGALRM) {
    result->reason = DispatchReason::kTimeout;
    result->exit_code = kTimeoutExit;
  } else if (stopped_by != 0) {
    result->reason = DispatchReason::kInterrupted;
    result->stop_signal = stopped_by;
    result->exit_code = base::kSignalExitBase + stopped_by;
  } else {
    result->reason = failed;
    result->exit_code = kRuntimeFailureExit;
  }
}

// A --patch that could not be written: `harvest-failed`; `patch_error` says why either way.
void RecordHarvestFailure(const std::string& why, int stopped_by, DispatchResult* result) {
  result->patch_error = why;
  RecordStepFailure(DispatchReason::kHarvestFailed, stopped_by, result);
}

// Fail closed: git metadata the guard's check did not look at may run commands in git on
// the host, so the workspace is tainted and no --patch (`wants_patch`) is harvested from it:
// `git-guard-incomplete`, or `timeout`/`interrupted` when that is what cut the check short.
void RecordUncheckedWorkspace(const std::string& why, int stop_fd, bool wants_patch,
                              DispatchResult* result) {
  result->workspace_tainted = true;
  result->workspace_taint.push_back(why + "; don't run git in it before looking");
  if (wants_patch) result->patch_error = "not written: " + why;
  RecordStepFailure(DispatchReason::kGitGuardIncomplete, TakeStopSignal(stop_fd), result);
}

// The supervisor could not start the command (dispatch/host/start_report.h): the exit code
// a shell would give, the reason, and the line that says what would make it work.
// `sandbox_env`: the environment the plan gave the agent.
void RecordStartFailure(const ResolvedRequest& r, int err, const std::string& workspace,
                        const std::vector<std::string>& sandbox_env, DispatchResult* result) {
  if (result->reason != DispatchReason::kExited) return;  // a timeout or a signal came first
  const StartFailure failure = DescribeStartFailure(err, r.request.command.front(), workspace,
                                                    PathOf(sandbox_env), PathOf(r.host_env));
  result->exit_code = failure.exit_code;
  result->reason =
      failure.missing ? DispatchReason::kCommandNotFound : DispatchReason::kCommandNotExecutable;
  result->error = failure.message;
}

// What the runtime cannot see from outside: the agent's refused connects. Under the default
// Landlock policy any TCP connect but to the routes, and any TCP bind, fails with EACCES;
// an agent that then exits non-zero may have failed for that, so it is said once. Not when
// the supervisor never ran (the sandbox itself failed to start): no agent ran to be refused.
void NoteLandlockNetwork(bool supervisor_ran, DispatchResult* result) {
  if (!supervisor_ran) return;
  if (result->reason != DispatchReason::kExited || result->exit_code == 0) return;
  if (std::find(result->landlock_parts.begin(), result->landlock_parts.end(), "net") ==
      result->landlock_parts.end()) {
    return;
  }
  result->network_note =
      "the agent's TCP connects go only to its --allow routes and it binds no TCP port (the "
      "default Landlock policy): any other connect or bind, a local test server's included, "
      "fails with EACCES (Permission denied); if that is why it failed, --landlock-allow net "
      "lifts that rule (the network still leads nowhere but the routes)";
}

}  // namespace

// Finish: the sandbox reaped and its end recorded, then what the agent left in the git
// metadata undone before the harvest reads the workspace, then the cgroup gone.
// The harvest (its plan compiled with the dispatch's, inside the dispatch's cgroup) reads
// the workspace into `patch_file`, when there is one, under the deadline and stop signals
// (`stop_fd`).
void Finish(const ResolvedRequest& r, const LoopOutcome& outcome, runtime::SandboxProcess* sandbox,
            HostResources* held, GitGuard* guard, const std::string& workspace,
            const DispatchPlan& planned, int stop_fd, std::optional<base::OutputFile>* patch_file,
            DispatchResult* result) {
  RecordExit(sandbox->Reap(), outcome, result);
  RecordDiskEnd(held->disk.get(), stop_fd, result);
  held->report->Settle();
  if (auto err = held->report->exec_errno())
    RecordStartFailure(r, *err, workspace, planned.plan.env, result);
  NoteLandlockNetwork(held->report->supervisor_reached(), result);
  if (held->cgroup) RecordOom(*held->cgroup, r.limits.memory, result);
  result->workspace_taint = guard->CheckAndRestore();
  result->workspace_tainted = !result->workspace_taint.empty();
  if (!guard->unchecked().empty()) {
    RecordUncheckedWorkspace(guard->unchecked(), stop_fd, patch_file->has_value(), result);
  }
  if (*patch_file && !held->report->supervisor_reached()) {
    // The sandbox never started (bwrap's setup refused a mount, say): no agent ran, so
    // there is nothing to harvest, and the workspace is not read on the way out.
    result->patch_error = "not written: the sandbox never started";
  } else if (*patch_file && guard->unchecked().empty()) {
    HarvestBounds bounds{.stop_fd = stop_fd};
    auto st = WritePatchFile(**patch_file, planned.harvest, result->base_commit, &bounds);
    if (!st) RecordHarvestFailure(st.error().Render(), bounds.stopped_by, result);
  }
  if (held->cgroup) held->cgroup->Remove();
}

}  // namespace sbx::dispatch
