// The check after the agent: the workspace walked again, every git directory, `.git` file
// and bare-repository layout compared with what was recorded before the run, and whatever
// the agent added or changed undone. Each finding is one line of `report`.
#pragma once

#include <sys/stat.h>

#include <optional>
#include <string>
#include <vector>

#include "dispatch/git/git_dir.h"

namespace sbx::dispatch {

struct TaintCheck {
  const std::vector<GuardedGitDir>& guarded;
  const std::vector<GitPointer>& pointers;
  std::vector<std::string>& report;
  const GuardedGitDir* top_dir = nullptr;    // the prepared .git, if any
  std::string top_config = kPlainGitConfig;  // what a .git made anew at the top gets
  std::optional<std::string> moved_top;      // where the agent moved the prepared .git

  // The directories prepared (or found) before: restored in place when still there; a
  // .git-named one made anew is left to the walk.
  void RestoreGuarded(int ws);
  // A `.git` entry the walk found: a known one is left, anything else made harmless.
  void GitEntry(int dirfd, const std::string& rel, const struct stat& st);
  // A directory laid out like a bare repository the walk found.
  void BareLayout(int dirfd, const std::string& rel);
  // The prepared .git the agent moved elsewhere goes back when the place is free.
  void MoveTopBack(int ws);

 private:
  void ForeignGitDir(int dirfd, const std::string& rel, const struct stat& st);
};

}  // namespace sbx::dispatch
