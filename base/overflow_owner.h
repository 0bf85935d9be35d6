// Narrowing the overflow-owner exception of base/safe_path.h (defined in safe_path.cc).
#pragma once

#include <sys/types.h>

#include <vector>

namespace sbx::base {

// In a user namespace that does not map host uid 0, host root's directories show as owned
// by the overflow uid, and safe_path.h's CheckDirStat accepts such a directory as an ancestor.
// Other unmapped users' directories look the same, so where somebody outside the namespace can tell
// them apart (`run --identity subuid`: its outer process, with real ids), the process inside
// narrows that exception to the directories listed here: every other overflow-owned directory is
// refused. Called once, before any check and any thread.
struct DirIdentity {
  dev_t dev = 0;
  ino_t ino = 0;
};
void RestrictOverflowAncestors(std::vector<DirIdentity> host_root_dirs);

}  // namespace sbx::base
