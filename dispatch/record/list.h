// The dispatch directories of this caller, for `ateam-sandbox ls` and `gc`: every <id> in
// the caller's dispatch root with its age, its size on disk, whether its run is still going
// (dispatch/host/lock.h) and how it ended (dispatch/record/record.h).
//
// Everything is read through directory fds without following a symlink. A root caller's
// <id> holds `workspace/` and `out/` of the sandbox's ids: those are walked (and removed,
// dispatch/host/dir.h) by a child that became their owner first, so root never works
// inside another uid's files.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "dispatch/git/workspace.h"
#include "dispatch/record/record.h"

namespace sbx::dispatch {

struct DispatchRoot {
  std::string path;   // as `run` would use it (--workspace-root made absolute, or the default)
  base::UniqueFd fd;  // O_PATH; empty when the root does not exist yet: no dispatches
};

// The caller's dispatch root, picked as `run` picks it: `workspace_root` (relative to the
// cwd) when given, else DefaultWorkspaceRoot for a root caller (one whose sandbox runs as
// other ids) or an unprivileged one. Opened with the checks `run` makes, never created.
base::Result<DispatchRoot> OpenCallerDispatchRoot(const std::optional<std::string>& workspace_root);

struct DispatchEntry {
  std::string id;
  std::string path;                      // <root>/<id>
  int64_t age_seconds = 0;               // since <id> last changed: made, or its record written
  uint64_t size_bytes = 0;               // du: blocks of everything below, each inode once
  bool running = false;                  // its run holds the lock
  std::optional<DispatchRecord> record;  // none: running, or the run was killed
  RunAsIds owner;                        // a root caller's: the ids owning workspace/ and out/
  std::string problem;                   // why gc must leave it alone ("" when it may remove it)
};

// The 12-hex-digit directories of `root` that belong to the caller, oldest first. `now`:
// seconds since the epoch.
base::Result<std::vector<DispatchEntry>> ListDispatches(const DispatchRoot& root, int64_t now);

// The one dispatch `id` of `root` (12 hex digits), looked at as ListDispatches does; nullopt
// when `root` holds no such directory of the caller's.
std::optional<DispatchEntry> FindDispatch(const DispatchRoot& root, const std::string& id,
                                          int64_t now);

// The du-like size of everything below `dirfd` (not itself), on its filesystem, without
// following a symlink; hard-linked files once. Directories the walker cannot open count for
// themselves only. `walk_uid`: only directories this uid owns are entered (a root caller's
// rule), or every one when nullopt.
uint64_t DiskUsageBelow(int dirfd, std::optional<uid_t> walk_uid);

// gc and rm: removes <root>/<id> unless its run still holds the lock (then false). The lock is
// taken first and held through the removal.
base::Result<bool> RemoveFinishedDispatch(const DispatchRoot& root, const DispatchEntry& entry);

}  // namespace sbx::dispatch
