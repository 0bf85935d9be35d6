// The steps after `git clone` of a --repo, before the git guard prepares the clone: the
// revision asked for (--rev), the source's uncommitted changes (said, or carried with
// --include-uncommitted), the submodules (clone_submodules.h) and a word on git-lfs
// pointers. Each runs git as the dispatch's user in the fresh clone (host_git.h), never in
// the source: git would read the source's own config there, and that config may name
// commands (core.fsmonitor, filters) the host must not run. The source's work tree is
// only read, as the work tree of the clone's git directory.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "dispatch/git/workspace.h"

namespace sbx::dispatch {

enum class UncommittedMode { kLeave, kTracked, kUntracked };

struct CloneWishes {
  std::optional<std::string> rev;  // --rev: a branch, tag or commit of the source
  UncommittedMode uncommitted = UncommittedMode::kLeave;
};

// A submodule cloned into the workspace: its git directory is .git/modules/NAME.
struct ClonedSubmodule {
  std::string name;
  std::string path;    // its checkout, below the workspace
  std::string source;  // the local repository it was cloned from
};

struct FinishedClone {
  std::vector<ClonedSubmodule> submodules;
  std::vector<std::string> notices;  // one line each, for the caller's terminal
};

// `source` is what --repo named; `ws_fd` the fresh clone. Fails with one line on a --rev
// that names nothing, or a step git could not do.
base::Result<FinishedClone> FinishClone(const std::string& source, int ws_fd,
                                        const CloneWishes& wishes, const RunAsIds& ids);

// The git directory of a local repository `source` (its .git, what its `gitdir:` file
// names, or itself when bare) and the common directory of that (a linked worktree's
// repository); nullopt when it has none of them.
struct SourceGitDirs {
  std::string git_dir;
  std::string common_dir;
};
std::optional<SourceGitDirs> FindSourceGitDirs(const std::string& source);

}  // namespace sbx::dispatch
