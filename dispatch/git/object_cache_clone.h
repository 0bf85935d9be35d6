// `run --repo SRC --object-cache`: the workspace as a clone that borrows the objects of
// the caller's cache of SRC (object_cache.h) instead of copying them.
//
// The steps, with the cache's lock held exclusively until the cache is up to date:
//   1. the cache is checked (a bad one is moved aside and made anew);
//   2. with a cache, the dispatch's user stamps SRC's refs (source_stamp.h); when the
//      cache recorded that stamp, or else when the refs `git ls-remote` lists are the ones
//      the cache recorded (object_cache_current.h), nothing is fetched and step 3 is
//      skipped (the stamp is recorded for the next dispatch). Otherwise the dispatch's
//      user fetches SRC into a scratch bare repository of its own (`git clone --bare
//      --no-local`, with the cache as --reference when there is one, so only what is new
//      is fetched). Git runs with the configuration of host_git.h: no system or global
//      file, no hooks, no network transport;
//   3. the caller copies the scratch's new pack files, refs and HEAD into the cache
//      (InstallIntoCache) and removes the scratch;
//   4. the lock is shared from then on, for the dispatch's whole life (`gc` leaves the
//      cache alone), and the dispatch's user makes the workspace as
//      `git clone --shared CACHE` would (borrowing_clone.h): its objects/info/alternates
//      names the cache's objects, which the sandbox binds read-only at the same path.
// When the fetch or the workspace's clone fails on a cache that passed its checks, the
// cache is made anew once from the source alone: only a failure that remains is reported.
#pragma once

#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "dispatch/git/workspace.h"

namespace sbx::dispatch {

struct BorrowedStore {
  std::string cache;    // the cache's path (bound read-only into the sandbox)
  base::UniqueFd lock;  // its lock, shared: held while the workspace borrows from it
};

// The dispatch's stop signals and deadline: `fd` a signalfd (stop_signals.h) or -1; the
// signal that ended a git step is stored in `*stopped_by`.
struct Stop {
  int fd = -1;
  int* stopped_by = nullptr;
};

// `cache_root` is the directory of the caller's caches (DefaultObjectCacheRoot unless
// --cache-root), `dispatch_fd` <root>/<id> (the scratch is made there and removed again), `ws_fd`
// the fresh, empty workspace, already the dispatch's user's. Lines for the caller's terminal (a
// cache made anew, and why) go to `notices`. Every git step runs in a process group of its
// own that a signal on `stop.fd` kills, as the plain clone's (CloneRepository); the
// scratch goes then, the cache stays as it was or as a whole install left it, and
// nothing is made anew; the caller removes the workspace.
base::Result<BorrowedStore> CloneFromObjectCache(const std::string& source,
                                                 const std::string& cache_root, int dispatch_fd,
                                                 int ws_fd, const RunAsIds& ids,
                                                 std::vector<std::string>* notices,
                                                 const Stop& stop = {});

}  // namespace sbx::dispatch
