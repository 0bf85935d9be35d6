// Cgroups that no dispatch owns any more. A dispatch's cgroup (dispatch/host/cgroup.h) is
// removed by its run, or by its janitor after a SIGKILL of `run`; when both are killed at
// once (a `kill -9` of every process of the caller, the OOM killer) it stays, empty, under
// whatever cgroup `run` was in. `gc` finds it by its name, ateam-sandbox-<id> (and the
// ateam-sandbox-run-<id> leaf a v2 run moves itself into), anywhere in the cgroup
// hierarchies, and removes it unless a running dispatch owns it.
//
// Which dispatch is running: `run` writes its id into its state directory (relay/
// state_dir.h) before it makes the cgroup, and that directory stays flock'ed for as long as
// the run or its janitor lives. A cgroup whose id no locked state directory names is an
// orphan. A locked state directory that names no id yet (a run between the two steps)
// keeps every cgroup this time.
#pragma once

#include <string>
#include <vector>

#include "base/error.h"

namespace sbx::dispatch {

// The name of the file in a state directory that says which dispatch it is.
inline constexpr const char* kStateDirIdFile = "dispatch-id";

// `run`: writes `id` into its state directory at `state_dir`.
base::Status MarkStateDirDispatch(const std::string& state_dir, const std::string& id);

struct OrphanCgroupReport {
  std::vector<std::string> removed;  // directories (or, with dry_run, those that would go)
  std::vector<std::string> failed;   // one line each
  // Dispatch cgroups left alone because a held state directory names no dispatch (a run
  // between its two steps, or one of a version that did not write its id).
  size_t kept_unsure = 0;
};

// Removes the caller's orphaned dispatch cgroups (only cgroups the caller owns: for a
// normal user, a delegated v2 subtree), killing what is left in them first.
OrphanCgroupReport RemoveOrphanCgroups(bool dry_run);

}  // namespace sbx::dispatch
