// Acquire, the stage between Resolve and the plan: everything one dispatch holds on the
// host, owned by one object, AcquiredDispatch, whose members are listed here in the order
// they are made (but that the --id-file is checked before the lease is taken) and go in
// the reverse order on every path out (a failure half-way, a stop signal before the agent
// started, the end of the run):
//
//   lease       a root caller's own host ids (dispatch/identity/lease.h), let go last of
//               all: until then no other dispatch can be given these ids, and the
//               directories, the lending and the sandbox are theirs.
//   id_file     --id-file, checked before anything is made (a bad path makes nothing);
//               written once <id> exists. Its fd is closed just before the lease goes
//               (nothing depends on it).
//   stop_fd     the signalfd of the stop signals and the deadline, which stay blocked
//               from here to the end of `run`: a stop while the members below are let go
//               (a directory removed, handed back) waits, it does not end `run` half-way.
//               The walks and children below end on it; closed once none is left.
//   dirs        the dispatch directory, the workspace (the clone) and the out dir, and a
//               given --workspace's lock, held until they are gone.
//   cleanup     removes the directories made when the agent never started (Keep() once it
//               has): after the lending and the git guard are undone, before the lock goes.
//   lent        a given --workspace/--out lent to the leased ids: handed back to the
//               caller after the sandbox, the harvest and the git guard are done with
//               them, before the directories are removed and the lease is let go.
//   guard       the git guard of the workspace (and of each --rw directory): its binds
//               are in the plan; Finish checks and undoes what the agent did before the
//               harvest reads the workspace.
//   patch_file  --patch, checked with the other output files before the host resources
//               exist; written by the harvest.
//   env         the agent's environment (SandboxEnvironment), built once: the agent's
//               state files are made from it and the plan hands it to the sandbox.
//   held        HostResources (dispatch/host_resources.h): the state directory, the
//               cgroup, the janitor, the event loop, the relays, the generated files, the
//               terminal and the disk watch. First to go: the relays and the terminal serve
//               the sandbox, which is gone by then.
//
// Built in place and never moved: the cleanup and the lending point at `dirs`, the
// lending at `lease`, HostResources at itself.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/output_file.h"
#include "base/unique_fd.h"
#include "dispatch/dispatch_plan.h"
#include "dispatch/git/git_guard.h"
#include "dispatch/host/prepare.h"
#include "dispatch/host_resources.h"
#include "dispatch/identity/hand_back.h"
#include "dispatch/identity/lease.h"
#include "dispatch/record/record.h"
#include "dispatch/request/result.h"
#include "dispatch/resolve.h"

namespace sbx::dispatch {

// Removes the dispatch directory (and a missing --out) this run made unless told to keep
// it: a run that fails before the agent started leaves nothing behind.
class MadeDirCleanup {
 public:
  MadeDirCleanup(DispatchDirs* dirs, const std::optional<runtime::SandboxSpec::HostIds>& owner)
      : dirs_(dirs), owner_(owner) {}
  MadeDirCleanup(const MadeDirCleanup&) = delete;
  MadeDirCleanup& operator=(const MadeDirCleanup&) = delete;
  ~MadeDirCleanup();
  void Keep() { keep_ = true; }

 private:
  DispatchDirs* dirs_;
  std::optional<runtime::SandboxSpec::HostIds> owner_;
  bool keep_ = false;
};

// What Acquire needs beside the request: when `run` started (the deadline counts from
// then), its parent (--die-with-parent) and the record of <id> (dispatch/record/record.h).
struct AcquireContext {
  std::chrono::steady_clock::time_point start;
  pid_t parent = 0;
  DispatchDirEnd* dir_end = nullptr;
};

// The members, declared in the order of the list above (why each goes before the next).
struct AcquiredDispatch {
  std::optional<IdLease> lease;  // nullopt: no leased identity (not root, --run-as)
  std::optional<base::OutputFile> id_file;
  base::UniqueFd stop_fd;
  std::optional<DispatchDirs> dirs;
  // Both point at `dirs`.
  std::optional<MadeDirCleanup> cleanup;
  std::optional<LentDirs> lent;
  std::optional<GitGuard> guard;
  std::optional<base::OutputFile> patch_file;  // nullopt without --patch
  std::vector<std::string> env;
  HostResources held;
  // A stop signal or the deadline that came while acquiring (0: none): nothing more was
  // acquired then, and the agent must not start.
  int stopped_by = 0;

  AcquiredDispatch() = default;
  AcquiredDispatch(const AcquiredDispatch&) = delete;
  AcquiredDispatch& operator=(const AcquiredDispatch&) = delete;

  // Acquires all of the above in order, for `r` (a leased identity replaces its host ids),
  // and records in `result` what is known from then on (the workspace, the out dir).
  base::Status Acquire(ResolvedRequest* r, const AcquireContext& context, DispatchResult* result);
  // What the plan needs of them.
  [[nodiscard]] PlanFacts Facts(const std::string& self_exe) const;

 private:
  base::Status AcquireDirs(ResolvedRequest* r, const AcquireContext& context,
                           DispatchResult* result);
};

}  // namespace sbx::dispatch
