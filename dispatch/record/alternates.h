// A finished workspace's .git/objects/info/alternates, as `harvest` reads it: hostile text
// (the agent could write the file while it ran, anybody who owns the workspace since).
// Only what `git clone --shared CACHE` writes is taken: absolute CACHE/objects lines.
#pragma once

#include <string>
#include <vector>

#include "base/error.h"

namespace sbx::dispatch {

// One borrowed store: CACHE = `root`/`name`.
struct AlternateStore {
  std::string root;  // absolute, no empty, "." or ".." component ("/" itself allowed)
  std::string name;  // one component, not starting with '.'
  [[nodiscard]] std::string cache() const { return (root == "/" ? "" : root) + "/" + name; }
};

inline constexpr size_t kMaxAlternateStores = 8;

// The stores `text` names, blank lines and '#' comments skipped (as git does). Any other
// line (relative, quoted, a control character, not ending in /objects, a `.`/`..`/empty
// component), or more than kMaxAlternateStores: an error, one line, its text escaped.
base::Result<std::vector<AlternateStore>> ParseWorkspaceAlternates(const std::string& text);

}  // namespace sbx::dispatch
