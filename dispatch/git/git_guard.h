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
// symlinks. Both walks are bounded (git_walk.h WalkBudget): they end on a stop signal or
// the dispatch's deadline, and list at most kMaxGitWalkEntries names. A given workspace
// with more is refused; a check after the agent that could not look at everything is
// said (unchecked()), and the dispatch fails closed on it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "dispatch/git/clone_checkout.h"
#include "dispatch/git/clone_config.h"
#include "dispatch/git/git_dir.h"
#include "runtime/spec.h"

namespace sbx::dispatch {

class GitGuard {
 public:
  // `fresh_clone`: the runtime made the workspace; its .git/config is rewritten with only
  // what a clone needs (`origin_url` as remote.origin.url) and its hooks are removed.
  // Otherwise (--workspace) the git metadata is recorded as it is.
  // `submodules`: those the host cloned into the fresh clone (clone_submodules.h), each
  // guarded like the main .git.
  // `stop_fd`: the stop signals' signalfd (-1: none), which ends the walks (a signal that
  // ended Prepare's walk is left there: the caller takes it and starts nothing).
  static base::Result<GitGuard> Prepare(const std::string& workspace, bool fresh_clone,
                                        const std::string& origin_url,
                                        const std::vector<ClonedSubmodule>& submodules = {},
                                        int stop_fd = -1);

  // One more directory the agent can write (a --rw directory), guarded like a given
  // workspace: its binds come after the workspace's, its findings are named by its path.
  base::Status GuardAlso(const std::string& dir);

  // The object cache the workspace borrows from (--object-cache): bound read-only at the
  // same path, where the workspace's objects/info/alternates finds it.
  void BorrowStore(const std::string& cache) { borrowed_.push_back(cache); }
  [[nodiscard]] const std::vector<std::string>& borrowed() const { return borrowed_; }

  // Read-only binds of every guarded config and hooks directory and objects/info/alternates,
  // after the workspace's, and of the borrowed stores.
  void AddBinds(runtime::SandboxSpec& spec) const;

  // After the sandbox ended: what the agent changed in the git metadata, one line each
  // (empty when nothing), every change undone. Never throws away the agent's files
  // wholesale: a foreign `.git` file is renamed to `.git.ateam-disabled`, a foreign git
  // directory gets a plain config and no hooks.
  [[nodiscard]] std::vector<std::string> CheckAndRestore();
  // Why the last CheckAndRestore did not look at everything, one line ("" when it did):
  // what it did not see may still run commands in git on the host.
  [[nodiscard]] const std::string& unchecked() const { return unchecked_; }

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
  std::vector<GitGuard> also_;  // GuardAlso's
  std::vector<std::string> borrowed_;
  int stop_fd_ = -1;
  std::string unchecked_;

  base::Status PrepareClone(const std::string& origin_url,
                            const std::vector<ClonedSubmodule>& submodules);
  base::Status PrepareGiven();
};

}  // namespace sbx::dispatch
