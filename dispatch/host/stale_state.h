// State on the host that no dispatch owns any more: relay state directories
// (relay/state_dir.h) of the caller whose lock nobody holds. A run's janitor removes its
// own even after a SIGKILL of `run`'s whole group; what a lost janitor left (the host's
// OOM killer, a kill of every process of the user) is for `gc` to find.
#pragma once

#include <string>
#include <vector>

#include "base/unique_fd.h"

namespace sbx::dispatch {

struct StaleStateReport {
  std::vector<std::string> removed;  // paths (or, with dry_run, those that would go)
  std::vector<std::string> failed;   // one line each
};

// Looks where `run` makes state directories for this caller (root: /run/ateam-sandbox-0;
// others: $XDG_RUNTIME_DIR and /tmp/ateam-sandbox-<uid>) for `dispatch-*` directories
// of the caller, unlocked and unchanged for a minute (a run makes and locks its own in one
// step), and removes them through fds.
StaleStateReport RemoveStaleState(bool dry_run);

// Where `run` makes this caller's state directories (the bases above).
std::vector<std::string> StateDirBases();

// Opens `base` when it is the caller's own and private (nothing another uid could have put
// there); an invalid fd otherwise.
base::UniqueFd OpenPrivateBase(const std::string& base);

}  // namespace sbx::dispatch
