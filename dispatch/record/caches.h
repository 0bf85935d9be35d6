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

// The caches of the caller's `cache_root` that `workspace`'s objects/info/alternates names
// (each line CACHE/objects) and that pass their checks: what `harvest` binds read-only
// for git to find them. Anything else the file names is not bound (the agent could have
// written it): git then reads without it, and fails on what it lacks.
std::vector<std::string> BorrowedCachesOf(const std::string& workspace,
                                          const std::optional<std::string>& cache_root);

}  // namespace sbx::dispatch
