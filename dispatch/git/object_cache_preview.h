// `run --dry-run --object-cache`: what a real run would do with the cache of a local
// --repo (object_cache.h), found out without making, locking or touching anything: the
// cache root and the cache are only opened for reading, never created, and a cache that
// fails its checks stays where it is (the real run moves it aside).
#pragma once

#include <string>

#include "base/error.h"

namespace sbx::dispatch {

struct CachePreview {
  std::string path;  // the cache's (made there by a real run when missing)
  std::string what;  // what a real run would do with it, in words
};

// `cache_root` as a real run would pick it (absolute); `root_caller`: its caches are
// root's and readable by the dispatch's user. An error, one line, where a real run would
// fail the same way (no local repository, a cache root that is not the caller's).
base::Result<CachePreview> PreviewObjectCache(const std::string& source,
                                              const std::string& cache_root, bool root_caller);

}  // namespace sbx::dispatch
