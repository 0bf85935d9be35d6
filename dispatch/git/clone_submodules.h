// The submodules of a fresh --repo clone, cloned on the host before the sandbox starts,
// so that the agent gets them checked out and never needs to write .git/config (which is
// read-only inside). Offline: each comes from the original's own clone of it (its git
// directory's modules/NAME), else from the URL .gitmodules gives when that is a local
// path; a network URL is skipped with a notice. Each is a fresh copy (no hardlinks into
// the original), checked out at the commit the superproject records. Nested submodules
// are not cloned. The guard then treats each .git/modules/NAME like the main .git.
#pragma once

#include <string>
#include <vector>

#include "base/error.h"
#include "dispatch/git/clone_checkout.h"

namespace sbx::dispatch {

// `source` is the original's absolute path; `ws_fd` the clone, at its final commit.
base::Result<std::vector<ClonedSubmodule>> CloneSubmodules(const std::string& source, int ws_fd,
                                                           const RunAsIds& ids,
                                                           std::vector<std::string>* notices);

// Whether `rel` is a plain relative path inside the workspace: no empty, ".", ".." or
// ".git" component, not absolute.
bool IsPlainRelativePath(const std::string& rel);

}  // namespace sbx::dispatch
