#include "dispatch/dispatch.h"

#include <sys/stat.h>
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
#include "dispatch/git/workspace.h"
#include "dispatch/host/dir.h"
#include "dispatch/host/prepare.h"
#include "dispatch/host/write_access.h"
#include "dispatch/identity/dispatch_identity.h"
#include "dispatch/identity/hand_back.h"
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

// Removes the dispatch directory (and a missing --out) this run made unless told to keep
// it: a run that fails before the agent started leaves nothing behind.
class MadeDirCleanup {
 public:
  MadeDirCleanup(DispatchDirs* dirs, const std::optional<runtime::SandboxSpec::HostIds>& owner)
      : dirs_(dirs), owner_(owner) {}
  MadeDirCleanup(const MadeDirCleanup&) = delete;
  MadeDirCleanup& operator=(const MadeDirCleanup&) = delete;
  ~MadeDirCleanup() {
    if (keep_) return;
    if (dirs_->given_out) dirs_->given_out->RemoveIfMade();  // a --out this run made
    if (dirs_->made_dir.empty()) return;
    dirs_->given_workspace.reset();
    dirs_->given_out.reset();
    (void)RemoveDispatchDir(dirs_->root_fd.get(), dirs_->made_dir, owner_);
  }
  void Keep() { keep_ = true; }

 private:
  DispatchDirs* dirs_;
  std::optional<runtime::SandboxSpec::HostIds> owner_;
  bool keep_ = false;
};

// Acquire's first step for a root caller without --run-as: the leased ids replace the
// overflow ids Resolve chose as the host side; inside, the agent keeps those.
base::Status LeaseIdentity(ResolvedRequest* r, const std::string& id,
                           std::optional<IdLease>* lease) {
  if (!WantsLeasedIdentity(r->request, r->host, r->run_as)) return {};
  auto identity = LeaseDispatchIdentity(r->host, id, LeaseHoldPaths(r->request, id));
  if (!identity) return identity.error();
  if (!*identity) return {};
  r->run_as = (*identity)->host;
  r->inside_ids = (*identity)->inside;
  *lease = std::move((*identity)->lease);
  return {};
}

// The commit the agent starts from (the fresh clone's HEAD, or the given workspace's, read
// by the harvest sandbox under the stop signals: `*stopped` is one that stopped it). Needed
// only with --patch.
base::Status RecordBaseCommit(const ResolvedRequest& r, const GitGuard& guard,
                              const HarvestPlan& harvest, int stop_fd, int* stopped,
                              DispatchResult* result) {
  HarvestBounds read{.stop_fd = stop_fd};
  auto base_commit = guard.clone_head() ? base::Result<std::string>(*guard.clone_head())
                                        : ReadBaseCommit(harvest, &read);
  *stopped = read.stopped_by;
  if (*stopped != 0) return {};
  if (!base_commit && r.request.patch) return base_commit.error();
  if (base_commit) result->base_commit = *base_commit;
  return {};
}

// --id-file, checked before anything is made; nullopt without one.
base::Result<std::optional<base::OutputFile>> PrepareIdFile(const DispatchRequest& request) {
  if (!request.id_file) return std::optional<base::OutputFile>();
  auto prepared = base::OutputFile::Prepare("--id-file", *request.id_file);
  if (!prepared) return prepared.error();
  return std::optional<base::OutputFile>(std::move(*prepared));
}

// Once the stop signals are taken as events: one deadline for every step from here (the
// clone, the sandbox, the harvest), and --die-with-parent's stop when `parent` goes.
base::Status ArmDeadlineAndParent(const DispatchRequest& request, pid_t parent,
                                  Clock::time_point start) {
  if (request.timeout_seconds) {
    if (auto st = ArmDispatchDeadline(*request.timeout_seconds, MsSince(start) / 1000); !st) {
      return st;
    }
  }
  if (request.die_with_parent) return StopWhenParentDies(parent);
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

// The workspace's git guard, each --rw directory's git metadata guarded like a given
// workspace's, and the output files checked to lie outside the dispatch's directories.
// Its walks end on a stop signal or the deadline on `stop_fd`, which is left there.
base::Result<GitGuard> GuardDispatchDirs(const DispatchRequest& request, const DispatchDirs& dirs,
                                         int stop_fd) {
  auto guard = GitGuard::Prepare(dirs.workspace, !request.workspace,
                                 request.repo ? CloneOriginUrl(*request.repo) : "", dirs.submodules,
                                 stop_fd);
  if (!guard) return guard.error();
  if (!dirs.object_cache.empty()) guard->BorrowStore(dirs.object_cache);
  for (const std::string& path : request.rw_paths) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    if (auto st_guard = guard->GuardAlso(path); !st_guard) return st_guard.error();
  }
  for (const auto& [flag, file] :
       {std::pair{"--ledger", request.ledger}, std::pair{"--status-json", request.status_json}}) {
    if (file) {
      if (auto st = CheckFileOutside(flag, *file, dirs); !st) return st.error();
    }
  }
  return guard;
}

// One dispatch from request to exit status, in the order of its steps: Resolve (every
// check, nothing created), the directories and HostResources (Acquire), the plan
// (CompileDispatchPlan), Launch through the backend, Serve (the event loop), then Finish:
// reap, the git guard's check, the harvest. The stop signals are taken as events from
// the start.
base::Status Dispatch(const DispatchRequest& given, const std::string& self_exe,
                      DispatchResult* result, Clock::time_point start, DispatchDirEnd* dir_end) {
  const pid_t parent = ::getppid();
  auto resolved = Resolve(given);
  if (!resolved) return resolved.error();
  const ResolvedRequest& r = *resolved;
  const DispatchRequest& request = r.request;
  if (request.dry_run) return DryRun(r, self_exe, result);
  auto id_file = PrepareIdFile(request);
  if (!id_file) return id_file.error();
  // A root caller's sandbox gets host ids of its own, leased before anything is created
  // and held until this run ends (dispatch/identity/lease.h).
  std::optional<IdLease> lease;
  if (auto st = LeaseIdentity(&*resolved, result->id, &lease); !st) return st;
  auto signal_fd = BlockStopSignals();
  if (!signal_fd) return signal_fd.error();
  if (auto st = ArmDeadlineAndParent(request, parent, start); !st) return st;
  int stopped_by = 0;
  auto dirs = PrepareDispatchDirs(request, result->id, r.run_as, signal_fd->get(), &stopped_by);
  if (!dirs) {
    if (stopped_by != 0) return StoppedBeforeStart(stopped_by, result);
    return dirs.error();
  }
  MadeDirCleanup cleanup(&*dirs, r.run_as);
  if (auto st = dir_end->Hold(*dirs, r.run_as, request.rm); !st) return st;
  result->workspace = dirs->workspace;
  result->out = dirs->out;
  // Known from now on: <id> and its record ("running"), and the id for --id-file.
  dir_end->WriteRunning(*result);
  if (*id_file) {
    if (auto st = WriteIdFile(**id_file, result->id); !st) return st;
  }
  // A leased identity borrows a given --workspace/--out; every directory is handed back to
  // the caller when `lent` goes, after the sandbox and the harvest (identity/hand_back.h).
  auto lent = LentDirs::LendIfLeased(&*dirs, lease ? &*lease : nullptr);
  if (!lent) return lent.error();
  auto guard = GuardDispatchDirs(request, *dirs, signal_fd->get());
  if (!guard) return guard.error();
  // --patch is checked with the other output files, before the host resources exist.
  auto patch_file = PreparePatchFile("--patch", request.patch, dirs->workspace, dirs->out);
  if (!patch_file) return patch_file.error();
  HostResources held;
  if (auto st = held.Acquire(r, result->id, dirs->workspace); !st) return st;
  auto planned = CompileDispatchPlan(r, held.Facts(dirs->workspace, dirs->out, self_exe, &*guard));
  if (!planned) return planned.error();
  ReportPlan(*planned, result);
  int stop = 0;
  if (auto st = RecordBaseCommit(r, *guard, planned->harvest, signal_fd->get(), &stop, result); !st)
    return st;
  if (stop == 0) {
    auto st = WatchDispatchDisk(*dirs, r.run_as, r.limits, signal_fd->get(), &held.disk);
    if (!st) return st;
    stop = TakeStopSignal(signal_fd->get());
  }
  if (stop != 0) return StoppedBeforeStart(stop, result);
  WarnUnwritablePlaces(request, *dirs, r.run_as);  // --rw, --workspace: said, never chowned
  AnnounceDispatch(result->id, dirs->workspace, dirs->out);
  std::unique_ptr<TtySession>& tty = held.tty;
  auto sandbox = Launch(request, tty.get(), planned->plan);
  if (!sandbox) return sandbox.error();
  // The agent may write from now on: what it leaves is the caller's, whatever follows.
  cleanup.Keep();
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
      ServeUntilExit(*held.loop, **sandbox, signal_fd->get(), request, hang_up, held.disk.get());
  if (tty) tty->Finish();
  Finish(r, outcome, sandbox->get(), &held, &*guard, dirs->workspace, *planned, signal_fd->get(),
         &*patch_file, result);
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
