// The dispatch's writable places on the host: a fresh clone of the repository (or an
// existing directory) as the workspace, and the out dir. Host-side, before clone.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "base/error.h"

namespace sbx::dispatch {

// 12 hex digits from getrandom: names the dispatch's directory and its status document.
std::string NewDispatchId();

// `git clone --quiet --no-hardlinks SOURCE DEST`: a copy whose object files share no inode
// with the original, so nothing the sandbox does to its clone reaches the original.
base::Status CloneRepository(const std::string& source, const std::string& dest);

// mkdir -p with `mode` for every created component; returns the absolute path.
base::Result<std::string> MakeDirectories(const std::string& path, mode_t mode);

// Changes the owner of `path` and everything below it (symlinks themselves, never their
// targets), for a root caller whose sandbox runs as `uid`:`gid`.
base::Status ChownTree(const std::string& path, uid_t uid, gid_t gid);

// The default parent of per-dispatch directories: $XDG_CACHE_HOME or $HOME/.cache, then
// ateam-sandbox/dispatches.
std::string DefaultWorkspaceRoot();

}  // namespace sbx::dispatch
