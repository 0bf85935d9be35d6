#include "dispatch/acquire.h"

#include <sys/stat.h>

#include <utility>

#include "dispatch/git/clone_config.h"
#include "dispatch/git/harvest.h"
#include "dispatch/host/dir.h"
#include "dispatch/host/disk_watch.h"
#include "dispatch/host/write_access.h"
#include "dispatch/identity/dispatch_identity.h"
#include "dispatch/record/announce.h"
#include "dispatch/sys/stop_signals.h"

namespace sbx::dispatch {
namespace {

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

// --id-file, checked before anything is made; nullopt without one.
base::Result<std::optional<base::OutputFile>> PrepareIdFile(const DispatchRequest& request) {
  if (!request.id_file) return std::optional<base::OutputFile>();
  auto prepared = base::OutputFile::Prepare("--id-file", *request.id_file);
  if (!prepared) return prepared.error();
  return std::optional<base::OutputFile>(std::move(*prepared));
}

// Once the stop signals are taken as events: one deadline for every step from here (the
// clone, the sandbox, the harvest), and --die-with-parent's stop when `parent` goes.
base::Status ArmDeadlineAndParent(const DispatchRequest& request, const AcquireContext& context) {
  if (request.timeout_seconds) {
    const std::chrono::duration<double> spent = std::chrono::steady_clock::now() - context.start;
    if (auto st = ArmDispatchDeadline(*request.timeout_seconds, spent.count()); !st) return st;
  }
  if (request.die_with_parent) return StopWhenParentDies(context.parent);
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

}  // namespace

MadeDirCleanup::~MadeDirCleanup() {
  if (keep_) return;
  if (dirs_->given_out) dirs_->given_out->RemoveIfMade();  // a --out this run made
  if (dirs_->made_dir.empty()) return;
  dirs_->given_workspace.reset();
  dirs_->given_out.reset();
  (void)RemoveDispatchDir(dirs_->root_fd.get(), dirs_->made_dir, owner_);
}

// The identity, the stop signals and the directories, up to their lending: what the git
// guard and the host resources are made for.
base::Status AcquiredDispatch::AcquireDirs(ResolvedRequest* r, const AcquireContext& context,
                                           DispatchResult* result) {
  const DispatchRequest& request = r->request;
  auto prepared_id_file = PrepareIdFile(request);
  if (!prepared_id_file) return prepared_id_file.error();
  id_file = std::move(*prepared_id_file);
  // A root caller's sandbox gets host ids of its own, leased before anything is created.
  if (auto st = LeaseIdentity(r, result->id, &lease); !st) return st;
  auto signal_fd = BlockStopSignals();
  if (!signal_fd) return signal_fd.error();
  stop_fd = std::move(*signal_fd);
  if (auto st = ArmDeadlineAndParent(request, context); !st) return st;
  auto made = PrepareDispatchDirs(request, result->id, r->run_as, stop_fd.get(), &stopped_by);
  if (!made) {
    if (stopped_by != 0) return {};  // a stop during the clone: nothing is left of it
    return made.error();
  }
  dirs.emplace(std::move(*made));
  cleanup.emplace(&*dirs, r->run_as);
  if (auto st = context.dir_end->Hold(*dirs, r->run_as, request.rm); !st) return st;
  result->workspace = dirs->workspace;
  result->out = dirs->out;
  // Known from now on: <id> and its record ("running"), and the id for --id-file.
  context.dir_end->WriteRunning(*result);
  if (id_file) {
    if (auto st = WriteIdFile(*id_file, result->id); !st) return st;
  }
  // A leased identity borrows a given --workspace/--out (identity/hand_back.h).
  auto lending = LentDirs::LendIfLeased(&*dirs, lease ? &*lease : nullptr);
  if (!lending) return lending.error();
  lent.emplace(std::move(*lending));
  // --rw, --workspace: what the sandbox's uid cannot write is said, never chowned. Checked
  // as that uid once the directories are lent to it.
  WarnUnwritablePlaces(request, *dirs, r->run_as);
  return {};
}

base::Status AcquiredDispatch::Acquire(ResolvedRequest* r, const AcquireContext& context,
                                       DispatchResult* result) {
  if (auto st = AcquireDirs(r, context, result); !st || stopped_by != 0) return st;
  const DispatchRequest& request = r->request;
  auto guarded = GuardDispatchDirs(request, *dirs, stop_fd.get());
  if (!guarded) return guarded.error();
  guard.emplace(std::move(*guarded));
  // --patch is checked with the other output files, before the host resources exist.
  auto patch = PreparePatchFile("--patch", request.patch, dirs->workspace, dirs->out);
  if (!patch) return patch.error();
  patch_file = std::move(*patch);
  auto environment = SandboxEnvironment(*r, dirs->workspace, dirs->out);
  if (!environment) return environment.error();
  env = std::move(*environment);
  if (auto st = held.Acquire(*r, result->id, dirs->workspace, env); !st) return st;
  // The disk watch's baseline walk ends on a stop signal, which is left on the fd.
  if (auto st = WatchDispatchDisk(*dirs, r->run_as, r->limits, stop_fd.get(), &held.disk); !st)
    return st;
  stopped_by = TakeStopSignal(stop_fd.get());
  return {};
}

PlanFacts AcquiredDispatch::Facts(const std::string& self_exe) const {
  PlanFacts facts = held.Facts(dirs->workspace, dirs->out, self_exe, &*guard);
  facts.env = env;
  return facts;
}

}  // namespace sbx::dispatch
