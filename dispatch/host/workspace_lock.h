// One running dispatch per given --workspace: two agents writing one tree at once would
// undo each other's work, and the second run's lending and git guard would change what
// the first one's sandbox is using.
//
// The lock is an exclusive flock, held by `run` for the whole dispatch (the kernel drops it
// when `run` ends, however it ends), on a file named by the workspace directory's device
// and inode (so every spelling of the path, a bind mount or a symlink, is the same
// workspace). The file lives in a directory of the caller's own in the dispatch root the
// run uses (<root>/.workspace-locks: --workspace-root or the caller's default), 0700,
// reached and made as base/safe_path.h does: never in the workspace itself, where the
// agent or any user who can read the directory could open the file, and hold or remove
// the lock. Runs of one caller on one dispatch root exclude each other; the files stay
// (empty, one per workspace ever used).
#pragma once

#include <string>

#include "base/error.h"
#include "base/unique_fd.h"

namespace sbx::dispatch {

// Takes the lock of the open workspace directory `workspace_fd` without waiting; the
// returned descriptor (close-on-exec) holds it. A one-line error when another running
// dispatch of this caller holds it. `dispatch_root`: the run's dispatch root (absolute),
// made as the dispatch directories' is when missing; `root_caller` sets its mode.
base::Result<base::UniqueFd> LockWorkspace(int workspace_fd, const std::string& shown_path,
                                           const std::string& dispatch_root, bool root_caller);

}  // namespace sbx::dispatch
