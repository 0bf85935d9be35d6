// The workspace of an --object-cache dispatch, made the way `git clone --shared` makes it
// but without its transport: git clone lists the cache's refs through `git upload-pack`
// (run by a shell), which costs more than everything else but the checkout. The refs the
// cache recorded are read here instead, and the clone's git directory is written from
// them: HEAD, the branches as refs/remotes/origin/ (and HEAD's branch as a local one),
// the tags, the alternates file naming the cache's objects. Then one `git read-tree -u
// --reset HEAD` writes the index and the files, as git clone's checkout does. What differs
// from git clone's result is nothing git reads later but the reflogs, which start empty.
//
// Every file is written by the dispatch's user in a child (the workspace is theirs), each
// created anew without following a link, below a workspace that is empty.
#pragma once

#include <optional>
#include <string>

#include "base/error.h"
#include "dispatch/git/host_git.h"
#include "dispatch/git/object_cache.h"
#include "dispatch/git/workspace.h"

namespace sbx::dispatch {

// The git directory's files for a clone of a cache whose refs are `refs`, keyed by their
// path below .git; nullopt when the refs are not what this writer handles (an id that is
// not SHA-1), and git clone is used instead.
struct BorrowingGitDir {
  std::string head;                        // HEAD
  std::string packed_refs;                 // packed-refs
  std::optional<std::string> origin_head;  // refs/remotes/origin/HEAD, a symbolic ref
  bool checkout = false;                   // HEAD names a commit: there are files to write
};
std::optional<BorrowingGitDir> RenderBorrowingGitDir(const CacheRefs& refs);

// Writes the clone of `cache` (its path; `files` rendered from its refs) into the empty
// workspace `ws_fd` as `ids`, then checks it out. `stop_fd` as for RunHostGit. An error is
// one line; a stop is HostGitRun::stopped_by in `stopped_by`.
base::Status WriteBorrowingClone(const std::string& cache, const BorrowingGitDir& files, int ws_fd,
                                 const RunAsIds& ids, const HostGitOptions& git_options,
                                 int* stopped_by);

}  // namespace sbx::dispatch
