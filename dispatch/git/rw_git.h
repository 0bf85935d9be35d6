// --rw over git metadata. A --rw directory is guarded like a given workspace (git_guard.h:
// its git directories' config and hooks read-only inside, checked after); a --rw path
// inside a git directory (a .git, or a bare repository: e.g. --rw project/.git/hooks) is
// refused, because the guard could not tell the agent's hook from the user's there.
#pragma once

#include <string>

#include "base/error.h"

namespace sbx::dispatch {

// One line when `path` (absolute) is a `.git` file, or lies inside a git directory.
base::Status RefuseRwInsideGitDir(const std::string& path);

}  // namespace sbx::dispatch
