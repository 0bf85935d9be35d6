// The caller's object caches in `ateam-sandbox ls` and `gc` (dispatch/git/object_cache.h):
// listed after the dispatches, and removed by `gc` when no dispatch used them for
// --older-than (and no run holds one now).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

namespace sbx::cli {

// --cache-root DIR, as `run` takes it.
void AddCacheRootOption(CLI::App& app, std::optional<std::string>& cache_root);

// ls: one line per cache (name, last use, size, source) and a total; nothing without one.
// 0, or 125 with one line on stderr.
int PrintCaches(const std::optional<std::string>& cache_root);

// gc: removes the caches no dispatch used for `min_age` seconds, unless a run holds one.
// 0, or 125 when one could not be removed (said on stderr).
int CollectCaches(const std::optional<std::string>& cache_root, int64_t min_age, bool dry_run);

}  // namespace sbx::cli
