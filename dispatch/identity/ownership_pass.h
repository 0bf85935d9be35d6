// Moves a directory tree from one owner to another in one fd-based walk: how a leased
// identity's workspace and out dir become the caller's after the dispatch (and how a given
// --workspace of the caller's is lent to the leased ids before it).
//
// It runs when no process has the `from` ids any more (after the sandbox is reaped, or
// before it starts), so nothing can rename, link or replace an entry while it walks; it
// takes no path from the tree: every step is openat/fstatat/fchownat relative to a
// directory fd, a symlink is changed as a link (never followed), a directory is entered
// only through O_NOFOLLOW and only when it is `from`'s (root never works inside another
// uid's directory) and on the same filesystem as the top (a mount point is left alone).
// A regular file given away loses its setuid and setgid bits: the agent cannot leave a
// set-id program that then belongs to the caller.
#pragma once

#include <sys/types.h>

#include <cstddef>

#include "base/error.h"
#include "runtime/spec.h"

namespace sbx::dispatch {

struct OwnershipPassOptions {
  runtime::SandboxSpec::HostIds from{};
  runtime::SandboxSpec::HostIds to{};
  // Lending a tree of the caller's to the leased ids: directories that others may write
  // are not entered, and files with more than one link are left as they are (another name
  // of them may be anywhere on the filesystem).
  bool lending = false;
};

struct OwnershipPassCount {
  size_t changed = 0;  // entries whose owner or group changed
  size_t left = 0;     // entries of other owners, mount points, linked files, untouched
};

// The pass over `top_fd` (an O_RDONLY directory fd) itself and everything below it: an
// entry whose uid is from.uid gets to.uid, whose gid is from.gid gets to.gid.
base::Result<OwnershipPassCount> PassOwnership(int top_fd, const OwnershipPassOptions& options);

}  // namespace sbx::dispatch
