// The walk over a workspace that finds its git metadata: every `.git` entry, and every
// directory git itself would take for a bare repository. Host side: never through a
// symlink, never onto another filesystem, never into a `.git` (a git directory's content
// is its owner's business), and only by directory fds.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dispatch/git/git_dir.h"
#include "dispatch/sys/at_file.h"

namespace sbx::dispatch {

// Deeper directories are not looked into (one fd per level is held while walking); the
// report says so, because a nested repository could hide there.
constexpr int kMaxGitWalkDepth = 200;
// The names one walk lists at most (every entry of every directory it reads): a workspace
// of a few hundred thousand files is walked whole, an agent's million-entry tree is not.
constexpr uint64_t kMaxGitWalkEntries = 2000000;

// What one walk may do, and why it did not finish. It ends as soon as `stop_fd` is
// readable (the stop signals' signalfd: SIGINT/SIGTERM/SIGHUP, or the dispatch's deadline,
// left there for the caller to take) or once it listed more than `max_entries` names;
// a directory deeper than kMaxGitWalkDepth levels is not entered and makes it unfinished.
struct WalkBudget {
  enum class End { kDone, kStopped, kTooMany, kTooDeep };
  int stop_fd = -1;
  uint64_t max_entries = kMaxGitWalkEntries;
  uint64_t entries = 0;
  End ended = End::kDone;
  // false when the walk must end now (`ended` says why); counts `listed` names.
  bool Spend(size_t listed);
  // Why the walk did not look at everything, one line ("" when it did).
  [[nodiscard]] std::string Unfinished() const;
};

// "dir/name", or "name" when `dir` is the top ("").
std::string JoinRel(const std::string& dir, const std::string& name);
// The last component of a relative path.
std::string BaseNameOf(const std::string& rel);
// Lowercase hex digits only, at least one.
bool IsHexId(const std::string& s);

// What git itself takes for a bare repository when it finds no .git: a valid HEAD beside
// objects/ and refs/ directories. Git would read the config beside them. `entries` is the
// sorted listing of `dirfd`.
bool LooksLikeBareRepository(int dirfd, const std::vector<DirEntry>& entries);

struct WalkCallbacks {
  // An entry named .git, of any type.
  std::function<void(int dirfd, const std::string& rel, const struct stat& st)> git_entry;
  // A directory laid out like a bare repository (rel "" is the workspace itself).
  std::function<void(int dirfd, const std::string& rel)> bare_layout;
  std::function<void(const std::string& rel)> too_deep;
};

// Every directory below `dirfd` (named `rel`) on the filesystem `dev`, within `budget`.
void WalkGitMetadata(int dirfd, const std::string& rel, dev_t dev, int depth,
                     const WalkCallbacks& cb, WalkBudget* budget);

// The content of a .git file or symlink at `rel` (in `dirfd`), for telling a later change
// apart; nullopt for anything else.
std::optional<GitPointer> ReadPointer(int dirfd, const std::string& rel, const struct stat& st);

// Where a `.git` file or symlink points, relative to `workspace`; nullopt when that is
// outside it.
std::optional<std::string> PointerTarget(const GitPointer& pointer, const std::string& workspace);

}  // namespace sbx::dispatch
