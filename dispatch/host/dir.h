// The per-dispatch directory <root>/<id> (its `workspace` and `out`), removed again: after
// a run that failed before the agent started, a dry run, an interrupted clone, and for
// `run --rm`. The caller's own directory fds, never a path: the agent owned what is inside.
#pragma once

#include <optional>
#include <string>

#include "base/error.h"
#include "runtime/spec.h"

namespace sbx::dispatch {

// Removes <root_fd>/<id> and everything below it. The subdirectories that belong to `ids`
// (a root caller's sandbox user) are emptied by a child that became those ids first, so
// root never works inside a directory another uid owns; the then empty directories and
// <id> itself, which are the caller's, are removed by the caller. Without `ids` (an
// unprivileged caller) all of it is the caller's. ENOENT is success. Nothing is followed:
// a symlink is removed as a name, a mount point is refused.
base::Status RemoveDispatchDir(int root_fd, const std::string& id,
                               const std::optional<runtime::SandboxSpec::HostIds>& ids);

}  // namespace sbx::dispatch
