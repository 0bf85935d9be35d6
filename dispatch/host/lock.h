// How `gc` and `ls` tell a dispatch whose run is still going from a finished one: `run`
// holds an exclusive flock on its <root>/<id> directory for its whole life. The kernel drops
// the lock when the last descriptor of it closes, so a run that was SIGKILLed (or crashed)
// leaves its directory unlocked: nothing to clean up, no pid to check or reuse.
//
// One gap is closed by a second lock: between `run`'s mkdir of <id> and its flock of it, the
// directory would look unlocked. So `run` makes and locks <id> while holding a shared flock
// on <root>, and `ls`/`gc` test an <id> while holding an exclusive one: they never see an
// <id> between the two steps. Both are held for microseconds. Only the caller can open
// <root> and <id> (0700, or root's 0711 without read permission for others), so nobody
// else can hold either lock.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "base/error.h"
#include "base/unique_fd.h"

namespace sbx::dispatch {

// `run`: mkdirat(root_fd, id, mode) of a name that must not exist, returned open
// (O_RDONLY | O_DIRECTORY) with the exclusive lock held by that descriptor (and every dup
// of it, also across fork: the lock goes with the last copy).
base::Result<base::UniqueFd> MakeLockedDispatchDir(int root_fd, const std::string& id, mode_t mode,
                                                   const std::string& shown_path);

// `gc`: <root_fd>/<id> opened without following a symlink, with the exclusive lock, taken
// without waiting; `gc` holds it while it removes the directory. nullopt when a run (or
// another `gc`) holds it.
base::Result<std::optional<base::UniqueFd>> TryLockDispatchDir(int root_fd, const std::string& id);

// `ls`: whether a run holds the lock of <root_fd>/<id> (tested, and let go at once).
base::Result<bool> DispatchDirLocked(int root_fd, const std::string& id);

}  // namespace sbx::dispatch
