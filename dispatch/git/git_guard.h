// GitGuard: keeps what the agent leaves in the workspace's git metadata from running on the
// host afterwards. People (and ateam) run git in a finished workspace; git runs commands
// named in .git/config (core.fsmonitor, core.pager, diff.external, filters, aliases...),
// in .git/hooks, and in the git directories of submodules and nested repositories.
//
// Before the sandbox starts, Prepare() records every git directory of the workspace (a
// fresh clone gets a config written from scratch and an empty hooks directory), and
// AddBinds() binds each one's config and hooks read-only over the writable workspace: the
// agent still stages, commits, branches and rebases (objects, refs, index and logs stay
// writable), but cannot add a command. After the sandbox is gone, CheckAndRestore() walks
// the workspace and undoes whatever got past that anyway (a .git moved away and made anew,
// a `gitdir:` file, a nested repository, a bare-repository layout), and says what it found.
//
// Host side. Everything after Prepare() works through directory fds opened with
// O_NOFOLLOW: the workspace belongs to the agent, and a root caller must not follow its
// symlinks.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "runtime/spec.h"

namespace sbx::dispatch {

// One directory entry as it was: a hook, or a `.git` file, told apart from a replacement.
struct GitEntryId {
  std::string name;
  ino_t ino = 0;
  off_t size = 0;
  struct timespec mtime {};
  friend bool operator==(const GitEntryId& a, const GitEntryId& b);
};

// A git directory whose config and hooks are bound read-only inside.
struct GuardedGitDir {
  std::string rel;  // below the workspace: ".git", "vendor/lib/.git", ".git/modules/x"
  dev_t dev = 0;
  ino_t ino = 0;
  std::optional<std::string> config;  // what config held (or was given); nullopt: none
  bool had_hooks_dir = false;
  std::vector<GitEntryId> hooks;  // what hooks/ held (nothing, once sanitized)
  bool had_config_worktree = false;
  bool had_commondir = false;
};

// A `.git` file or symlink present before the agent ran (a linked worktree, a submodule
// checkout), by its content.
struct GitPointer {
  std::string rel;
  bool symlink = false;
  std::string content;
};

class GitGuard {
 public:
  // `fresh_clone`: the runtime made the workspace; its .git/config is rewritten with only
  // what a clone needs (`origin_url` as remote.origin.url) and its hooks are removed.
  // Otherwise (--workspace) the git metadata is recorded as it is.
  static base::Result<GitGuard> Prepare(const std::string& workspace, bool fresh_clone,
                                        const std::string& origin_url);

  // Read-only binds of every guarded config and hooks directory, after the workspace's.
  void AddBinds(runtime::SandboxSpec& spec) const;

  // After the sandbox ended: what the agent changed in the git metadata, one line each
  // (empty when nothing), every change undone. Never throws away the agent's files
  // wholesale: a foreign `.git` file is renamed to `.git.ateam-disabled`, a foreign git
  // directory gets a plain config and no hooks.
  [[nodiscard]] std::vector<std::string> CheckAndRestore() const;

  [[nodiscard]] const std::vector<GuardedGitDir>& guarded() const { return guarded_; }
  // A fresh clone's HEAD commit, read from the refs git just wrote (nullopt otherwise:
  // a given workspace's refs are read by git, in the harvest sandbox).
  [[nodiscard]] const std::optional<std::string>& clone_head() const { return clone_head_; }

 private:
  std::string workspace_;
  base::UniqueFd workspace_fd_;
  std::vector<GuardedGitDir> guarded_;
  std::vector<GitPointer> pointers_;
  std::optional<std::string> clone_head_;
};

// remote.origin.url for a clone of `repo`: a local directory by its absolute path (as git
// clone records it), anything else as given.
std::string CloneOriginUrl(const std::string& repo);

// The config written into a fresh clone: core settings, the origin remote and `branch`'s
// upstream. Only keys that run nothing.
std::string CloneGitConfig(const std::string& origin_url, const std::string& branch, bool sha256);

}  // namespace sbx::dispatch
