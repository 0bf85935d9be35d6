// The leased identity's side of a dispatch's directories (dispatch/identity/lease.h):
// a given --workspace/--out of the caller's is lent to the leased ids before the sandbox
// starts, and after the sandbox is reaped and harvested the workspace and out dir (made or
// given) become the caller's again, so root's own git works there (the git guard has
// already undone what the agent left in .git) and no file stays with a uid that may be
// leased again. Both through ownership_pass.h.
#pragma once

#include <string>
#include <utility>

#include "base/error.h"
#include "dispatch/host/prepare.h"
#include "dispatch/identity/lease.h"

namespace sbx::dispatch {

// Before the sandbox: what of a given --workspace/--out is the caller's becomes `leased`'s.
base::Status LendGivenDirs(const DispatchDirs& dirs, const runtime::SandboxSpec::HostIds& leased);

// After it: everything of `leased`'s in the workspace and out dir becomes the caller's.
// Then the lease is held only by the dispatch's own <root>/<id> (a given directory, handed
// back, no longer holds it).
base::Status HandBackDirs(const DispatchDirs& dirs, const runtime::SandboxSpec::HostIds& leased,
                          IdLease* lease);

}  // namespace sbx::dispatch

namespace sbx::dispatch {

// Lends the given directories when made, and hands everything back when destroyed, unless
// HandBack() did it already: a dispatch that fails after the lending gives them back too.
// Declared before the sandbox's handle, so it goes only after the sandbox is gone.
class LentDirs {
 public:
  static base::Result<LentDirs> Lend(const DispatchDirs* dirs, IdLease* lease);
  // Lend() with a lease; without one (no leased identity) an object that does nothing.
  static base::Result<LentDirs> LendIfLeased(const DispatchDirs* dirs, IdLease* lease);
  LentDirs(LentDirs&& other) noexcept
      : dirs_(std::exchange(other.dirs_, nullptr)), lease_(other.lease_) {}
  LentDirs& operator=(LentDirs&&) = delete;
  LentDirs(const LentDirs&) = delete;
  LentDirs& operator=(const LentDirs&) = delete;
  // Hands back unless done already; a failure is one line on stderr (the run's result
  // stands).
  ~LentDirs();

  // The hand-back itself, once; later calls do nothing.
  base::Status HandBack();

 private:
  LentDirs(const DispatchDirs* dirs, IdLease* lease) : dirs_(dirs), lease_(lease) {}
  const DispatchDirs* dirs_;
  IdLease* lease_;
};

}  // namespace sbx::dispatch
