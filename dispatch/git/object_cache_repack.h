// The object cache's packs kept few (object_cache.h). Every warm dispatch that fetches
// something new adds a pack to the cache, and every git step that reads the cache looks
// through all of them; past kMaxCachePacks they are repacked into one.
//
// Nothing is ever dropped: workspaces handed back borrow the cache's objects through
// objects/info/alternates, also objects no ref of the cache reaches any more (the source
// was force-pushed). So `git repack -a -d --keep-unreachable`, no prune, no loose objects
// (-n: no server info either), no bitmap or reverse index (a cache holds .pack and .idx
// files only). Git writes the new pack before it removes the old ones, and a reader that
// finds a pack gone scans the directory again: a clone from the cache at that moment
// still finds every object.
#pragma once

#include <string>

#include "base/error.h"
#include "dispatch/git/object_cache.h"

namespace sbx::dispatch {

inline constexpr size_t kMaxCachePacks = 16;

struct RepackOutcome {
  bool repacked = false;
  int stopped_by = 0;  // the stop signal that ended git (stop_fd), or 0
};

// Repacks the cache NAME of `root` (its lock held exclusively by the caller) when it holds
// more than `max_packs` packs, as the caller (the cache's owner), in a process group a
// signal on `stop_fd` (stop_signals.h, or -1) kills. Whatever git did or left (a stop, a
// failure), the cache is then settled: git's temporary files removed, every pack given the
// cache's mode and the manifest written anew, so it passes its checks. `source` is the
// manifest's. An error when git failed (the old packs then stay).
base::Result<RepackOutcome> RepackCacheIfCrowded(const CacheRoot& root, const std::string& name,
                                                 const std::string& source, int stop_fd,
                                                 size_t max_packs = kMaxCachePacks);

}  // namespace sbx::dispatch
