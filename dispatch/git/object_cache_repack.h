// The object cache's packs kept few (object_cache.h). Every warm dispatch that fetches
// something new adds a pack to the cache, and every git step that reads the cache looks
// through all of them; past kMaxCachePacks they are repacked into one.
//
// Nothing is ever dropped: workspaces handed back borrow the cache's objects through
// objects/info/alternates, also objects no ref of the cache reaches any more (the source
// was force-pushed). Every object the cache holds goes into the one new pack, reachable or
// not; no loose objects, no bitmap or reverse index (a cache holds .pack and .idx files
// only). The new pack is in place before the old ones go, and a reader that finds a pack
// gone scans the directory again: a clone from the cache at that moment still finds every
// object.
//
// Who runs git: the cache's packs came from repositories other users control, so git
// parses them only with the dispatch's ids, as for the fill (object_cache_clone.h).
//   - When those are the caller's own (a normal user's cache): `git repack -a -d
//     --keep-unreachable` in the cache, as that user.
//   - When they are another uid's (a root caller's cache, which root owns): that user makes
//     a scratch bare repository of its own whose objects/info/alternates names the cache's
//     objects (which it can read, not write), lists every object there (`git cat-file
//     --batch-all-objects`: the alternates' too) and writes them into one pack (`git
//     pack-objects`). Root copies that .pack and .idx into the cache byte for byte, as it
//     copies a fill's (CopyPackIntoCache), reads the new index itself (pack_index.h: a
//     fixed binary format, no git) to check that it names every object of every old
//     index and belongs to the copied pack, and only then removes the old packs. Root runs
//     no git over the cache's packs.
#pragma once

#include <functional>
#include <string>

#include "base/error.h"
#include "dispatch/git/object_cache.h"
#include "dispatch/git/workspace.h"

namespace sbx::dispatch {

inline constexpr size_t kMaxCachePacks = 16;

struct RepackOutcome {
  bool repacked = false;
  int stopped_by = 0;  // the stop signal that ended git (stop_fd), or 0
};

// Who runs git for the repack (see above).
struct RepackRunner {
  // The dispatch's user when it is not the caller (a root caller's), or nullopt: the caller.
  RunAsIds ids;
  // With `ids`: a fresh, empty directory of theirs to work in (an fd its maker keeps open
  // and removes later), asked for only when the cache is crowded.
  std::function<base::Result<int>()> make_scratch;
};

// Repacks the cache NAME of `root` (its lock held exclusively by the caller) when it holds
// more than `max_packs` packs, with git run by `runner`, in a process group a signal on
// `stop_fd` (stop_signals.h, or -1) kills. Whatever git did or left (a stop, a failure), the
// cache is then settled: git's temporary files removed, every pack given the cache's mode
// and the manifest written anew, so it passes its checks. `source` is the manifest's. An
// error when git failed or its pack failed root's check (the old packs then stay).
base::Result<RepackOutcome> RepackCacheIfCrowded(const CacheRoot& root, const std::string& name,
                                                 const std::string& source, int stop_fd,
                                                 const RepackRunner& runner = {},
                                                 size_t max_packs = kMaxCachePacks);

}  // namespace sbx::dispatch
