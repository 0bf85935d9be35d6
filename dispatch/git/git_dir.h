// One git directory of the workspace as it was before the agent ran, and the two ways the
// check after the agent puts one right: restored to what was recorded, or made plain.
// Host side, through directory fds only (the workspace belongs to the agent).
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "base/error.h"

namespace sbx::dispatch {

// What a git directory that nobody prepared is given: the config of a plain non-bare
// repository (it names no command).
extern const char* const kPlainGitConfig;
// Appended to a name the check renames aside instead of deleting the agent's file.
extern const char* const kDisabledSuffix;

// One directory entry as it was: a hook, or a `.git` file, told apart from a replacement.
struct GitEntryId {
  std::string name;
  ino_t ino = 0;
  off_t size = 0;
  struct timespec mtime {};
  friend bool operator==(const GitEntryId& a, const GitEntryId& b);
};

GitEntryId EntryIdOf(const std::string& name, const struct stat& st);

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
  // objects/info/alternates: the object stores the host's git reads beside this one (a
  // clone from the object cache names the cache). nullopt: none.
  std::optional<std::string> alternates;
};

// A `.git` file or symlink present before the agent ran (a linked worktree, a submodule
// checkout), by its content.
struct GitPointer {
  std::string rel;
  bool symlink = false;
  std::string content;
};

// The git directory open at `gitfd` as it is now, named `rel`.
base::Result<GuardedGitDir> RecordGitDir(int gitfd, const std::string& rel);

// Makes a git directory the runtime did not prepare harmless: `config` as its config, no
// hooks, no per-worktree config, no redirection of its common directory. What could not
// be done goes into `report`.
void SanitizeGitDir(int gitfd, const std::string& rel, const std::string& config,
                    std::vector<std::string>& report);

// Puts a guarded git directory back the way it was recorded; each change found is one
// line of `report`.
void RestoreGitDir(int gitfd, const GuardedGitDir& dir, std::vector<std::string>& report);

}  // namespace sbx::dispatch
