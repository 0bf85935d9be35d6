// The caller's object caches in `ateam-sandbox ls` and `gc` (dispatch/git/object_cache.h):
// listed after the dispatches, and removed by `gc` when no dispatch used them for
// --older-than (and no run holds one now).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/error.h"

namespace sbx::cli {

// --cache-root DIR, as `run` takes it.
void AddCacheRootOption(CLI::App& app, std::optional<std::string>& cache_root);

// ls: one line per cache (name, last use, size, source) and a total; nothing without one.
// 0, or 125 with one line on stderr.
int PrintCaches(const std::optional<std::string>& cache_root);

// ls --json: one object per cache (name, path, source, size, last use, in use, and why it
// fails its checks, read without changing anything); none without a cache root. An error
// line (for stderr) when the root can't be read.
std::optional<std::string> CachesJson(const std::optional<std::string>& cache_root,
                                      std::vector<std::string>* objects);

// What became of one thing `gc` would remove.
enum class Collected { kRemoved, kKept, kFailed };
// One thing `gc` would remove: kept when `busy`, or when `remove` says it is busy now
// (`kept_line` on stdout); a failure of `remove` is one line on stderr; otherwise
// "removed " or, in a dry run (nothing removed), "would remove " then `what` on stdout.
Collected CollectOne(bool busy, bool dry_run, const std::string& kept_line, const std::string& what,
                     const std::function<base::Result<bool>()>& remove);

// gc: removes the caches no dispatch used for `min_age` seconds, unless a run holds one.
// 0, or 125 when one could not be removed (said on stderr).
int CollectCaches(const std::optional<std::string>& cache_root, int64_t min_age, bool dry_run);

}  // namespace sbx::cli
