// A copy of a local source's own index, for comparing the source's work tree with the
// clone's HEAD (the source's uncommitted changes, clone_checkout.h).
//
// Why a copy: the clone's own index records the stat data of the clone's files, so against
// the source's work tree every entry looks changed and git reads and hashes every file of
// the source (seconds on a large tree), then writes the source's stat data into the clone's
// index, where the agent's first `git status` hashes every file again. The source's index
// records the stat data of the source's own files: git reads only what changed since it
// was written. The copy is made and removed by the dispatch's user in the clone's .git,
// with the original's modification time: git's check for racily clean entries (entries as
// new as the index file, whose stat data can't be trusted) then sees what it sees in the
// source. Git never runs in the source itself, whose config is not ours to obey.
#pragma once

#include <string>

#include "dispatch/git/workspace.h"

namespace sbx::dispatch {

class SourceIndexCopy {
 public:
  SourceIndexCopy() = default;
  // Copies <source_git_dir>/index into the clone open at `ws_fd`, as `ids`. An index that
  // can't be copied (none, unreadable by `ids`, not a regular file, over kMaxBytes) gives
  // no copy: git then compares with the clone's own index, slower, to the same result.
  static SourceIndexCopy Make(const std::string& source_git_dir, int ws_fd, const RunAsIds& ids);
  ~SourceIndexCopy() { Drop(); }
  SourceIndexCopy(SourceIndexCopy&& other) noexcept;
  SourceIndexCopy& operator=(SourceIndexCopy&&) = delete;
  SourceIndexCopy(const SourceIndexCopy&) = delete;
  SourceIndexCopy& operator=(const SourceIndexCopy&) = delete;

  // For HostGitOptions::index_file: the copy, relative to the clone's top; "" when none.
  [[nodiscard]] const std::string& file() const { return file_; }
  // Removes the copy (and a lock file git left beside it), as the dispatch's user.
  void Drop();

  static constexpr off_t kMaxBytes = off_t{512} << 20;

 private:
  int ws_fd_ = -1;
  RunAsIds ids_;
  std::string file_;
};

}  // namespace sbx::dispatch
