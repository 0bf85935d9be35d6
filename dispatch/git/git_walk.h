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

// Every directory below `dirfd` (named `rel`) on the filesystem `dev`.
void WalkGitMetadata(int dirfd, const std::string& rel, dev_t dev, int depth,
                     const WalkCallbacks& cb);

// The content of a .git file or symlink at `rel` (in `dirfd`), for telling a later change
// apart; nullopt for anything else.
std::optional<GitPointer> ReadPointer(int dirfd, const std::string& rel, const struct stat& st);

// Where a `.git` file or symlink points, relative to `workspace`; nullopt when that is
// outside it.
std::optional<std::string> PointerTarget(const GitPointer& pointer, const std::string& workspace);

}  // namespace sbx::dispatch
