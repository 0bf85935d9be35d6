// The caller's object caches (dispatch/git/object_cache.h) for `ls` and `gc`: the cache
// root picked as `run --object-cache` picks it, opened with its checks, never created.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "dispatch/git/object_cache.h"

namespace sbx::dispatch {

// `cache_root` (--cache-root, relative to the cwd) or the caller's default; nullopt when
// it does not exist yet (no caches).
base::Result<std::optional<CacheRoot>> OpenCallerCacheRoot(
    const std::optional<std::string>& cache_root);

// The object caches `workspace` borrows from: each line of its .git/objects/info/alternates
// must be CACHE/objects, where CACHE is a cache that passes its checks (object_cache.h) in
// a cache root owned by the caller or by root (a root caller's, which the dispatch's user
// reads): reached from / with no symlink and no component another user owns or can write,
// opened through directory fds. What `harvest` binds read-only for git to find them. Any
// other line (the agent may have written it), a root given as `cache_root` (when set) that
// is not the line's, or an alternates file that is not a regular file: an error, one line.
// No alternates file: no stores.
base::Result<std::vector<std::string>> BorrowedCachesOf(
    const std::string& workspace, const std::optional<std::string>& cache_root);

}  // namespace sbx::dispatch
