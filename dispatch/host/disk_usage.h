// What a set of directory trees holds on the host's disk: the allocated blocks and the
// number of names in them, measured by walking them through directory fds. Used by the
// disk watcher (dispatch/host/disk_watch.h) on the workspace and out dir, which the agent
// writes: every name there is the agent's choice, so nothing is followed or trusted.
#pragma once

#include <cstdint>
#include <vector>

#include "base/error.h"

namespace sbx::dispatch {

struct DiskUsage {
  uint64_t bytes = 0;  // allocated blocks (st_blocks), a file with several links once
  uint64_t names = 0;  // every name below the roots: files, directories, links, each link
};

// Walks the trees of the open directories `root_fds`. Symbolic links are counted, never
// followed; a directory on another filesystem (a mount point) is counted, never entered; a
// name removed or replaced while the walk passes it is skipped. The walk stops as soon as
// the totals pass `stop_above` (the answer then passes it as well), so its work is bounded
// by that many names. A directory that cannot be opened (its mode, more levels than this
// process may hold descriptors for) is an error: what it holds would go unmeasured.
base::Result<DiskUsage> MeasureTrees(const std::vector<int>& root_fds, DiskUsage stop_above);

}  // namespace sbx::dispatch
