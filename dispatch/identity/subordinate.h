// Per-dispatch host ids for an unprivileged caller, opted into with `run --identity subuid`
// (docs/usage.md): from the subordinate ids /etc/subuid and /etc/subgid grant the caller,
// as rootless container engines use them.
//
// `run` re-executes itself as uid 0 of a new user namespace whose maps newuidmap and
// newgidmap (setuid helpers that write only what those files grant) make:
//   inside 0        = the caller's uid and gid
//   inside 1..COUNT = the caller's first subordinate range (COUNT the smaller of the two)
// and there takes a root caller's path (dispatch/identity/dispatch_identity.h): each
// dispatch leases an id of 1..COUNT, so its sandbox, clone and harvest run on the host as a
// subordinate uid of its own, and the hand-back gives the workspace and out dir to inside
// uid 0, the caller. The leases are files in the caller's own lease directory
// (SubordinateLeaseDir), locked and recorded as a root caller's are, so they survive a
// crash and are never handed out twice among the caller's dispatches.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <string>

#include "base/error.h"

namespace sbx::dispatch {

struct CallerSubordinateIds {
  uid_t uid = 0;  // the caller
  gid_t gid = 0;
  std::string user;
  uint32_t first_uid = 0;
  uint32_t first_gid = 0;
  uint32_t count = 0;
  std::string newuidmap;  // the helpers' paths
  std::string newgidmap;
};

// The sandbox's ids inside (the overflow ids, 65534) must be among 1..COUNT.
inline constexpr uint32_t kMinSubordinateIds = 65534;

// The caller's first range in each file and the two helpers (on $PATH, or in /usr/bin,
// /usr/sbin, /bin, /sbin). One line when the caller has no range in either file, a range
// smaller than kMinSubordinateIds, or a helper is missing. `subuid`/`subgid` for tests.
base::Result<CallerSubordinateIds> ResolveCallerSubordinateIds(
    const std::string& subuid = "/etc/subuid", const std::string& subgid = "/etc/subgid");

// Runs `self_exe run ARGS...` as uid 0 of the namespace above and returns its exit code
// (128 + N for a signal N). Stop signals sent to this process with kill(2) are passed on;
// `die_with_parent` (--die-with-parent): this process gets SIGTERM, passed on, when its
// parent dies. An error when the namespace or its maps could not be made: nothing was
// started then.
base::Result<int> RunInSubordinateNamespace(const CallerSubordinateIds& ids,
                                            const std::string& self_exe,
                                            std::span<const std::string> args,
                                            bool die_with_parent);

// Where a caller's subordinate leases live: $XDG_STATE_HOME/ateam-sandbox/leases, else
// $HOME/.local/state/ateam-sandbox/leases (the caller's own; the lease code makes and
// checks it).
base::Result<std::string> SubordinateLeaseDir();

}  // namespace sbx::dispatch
