// The host directories a `run --identity subuid` trusts, checked before the re-exec.
//
// Inside the subordinate namespace (dispatch/identity/subordinate.h) host root is unmapped:
// its directories show as owned by the overflow uid, and so do those of every other local
// user. base/safe_path.h accepts an overflow-owned directory as an ancestor (it stands for
// root's /, /var/tmp, /home there), which would let another user who made
// /var/tmp/ateam-sandbox-<uid>, or any directory on the way to a place run writes in,
// have it taken for root's and then rename or replace what run makes below it.
//
// So the outer run, which still has the caller's real ids and sees every owner as it is,
// walks from / to each place the inner run will trust (the default dispatch root, whose
// parent also holds the workspace locks and object caches, the lease directory, /tmp of the relay's
// state directory, the object cache root, and every path option that names a place written or read
// with trust) and checks each directory on the way as safe_path.h checks an ancestor: root's or the
// caller's, and shared only when sticky. Another user's directory is refused there, before anything
// is made. The host root directories passed (and, when the outer run is itself in a namespace that
// does not map host root, the overflow-owned ones safe_path.h took for root's) are listed by device
// and inode in kSubordinateRootDirsEnv, and
// the inner run accepts an overflow-owned ancestor only when it is one of them
// (base::RestrictOverflowAncestors): a directory made or swapped in by somebody else after
// the check has another inode and is refused, and a place the list misses fails closed.
#pragma once

#include <string>

#include "base/error.h"
#include "dispatch/request/request.h"

namespace sbx::dispatch {

// Outer run: the value of kSubordinateRootDirsEnv for `request`, or one line naming the
// directory that is not root's or the caller's (`caller_uid`), or a --repo source the
// subordinate uid that clones it could not read.
base::Result<std::string> CheckSubordinateHostDirs(const DispatchRequest& request,
                                                   uid_t caller_uid);

// Inner run: narrows base/safe_path.h's overflow exception to the directories the outer
// run vouched for.
void TrustOnlyVouchedHostRootDirs();

}  // namespace sbx::dispatch
