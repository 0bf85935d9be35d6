// Who may use a channel socket of the dispatch (the terminal channel tty.sock, the route
// channels route-N.sock, the start report report.sock): only the sandbox's own supervisor.
// The sockets' owner and mode already keep out every uid but the sandbox's; this is the
// check at the other end, before anything a connection sends is adopted, so that neither a
// process of another uid that got through (the overflow uid of an older setup, a uid with
// CAP_DAC_OVERRIDE) nor one of the sandbox's own other processes can hand over a terminal
// or a listener.
//
// The peer's credentials (SO_PEERCRED, as the kernel recorded them at connect) must name
// the sandbox's uid. Which process the peer is, two ways:
//  * Exact, where the kernel gives the peer's pidfd as of connect (SO_PEERPIDFD, Linux 6.5)
//    and pidfds are pidfs files (Linux 6.9), whose inode number is one per process and never
//    reused: the peer is the supervisor when its pidfd and the supervisor's (a pidfd taken
//    by the backend while the supervisor surely lived) are the same inode. This holds after
//    the supervisor ended too, so a handover that the loop takes late (a fast agent; under
//    bwrap, which reaps the supervisor itself) is still the supervisor's. A kernel that
//    cannot give the pidfd of a peer that was already reaped (before 6.16) falls to the
//    second way for it.
//  * Otherwise: the credentials' pid must be the supervisor's, and the supervisor's pidfd
//    must still refer to a live (or not yet reaped) process after they were read: a pid can
//    only be reused once its process is gone, so a live pidfd whose pid equals the peer's
//    is that process. A peer that connected and ended before the check is then refused.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>

#include "base/unique_fd.h"

namespace sbx::relay {

class PeerGate {
 public:
  // Set once the sandbox exists. `supervisor` returns a pidfd of the supervisor (an invalid
  // fd while there is none yet); `uid` is the host uid the sandbox runs as.
  void Expect(std::function<base::UniqueFd()> supervisor, uid_t uid);

  // "" when the peer of the connected Unix socket `fd` is the supervisor, else why not (for
  // the ledger or stderr line).
  [[nodiscard]] std::string Check(int fd) const;

 private:
  std::function<base::UniqueFd()> supervisor_;
  uid_t uid_ = 0;
};

// Whether the peer of the connected Unix socket `fd` (as it was at connect) is the process
// `pidfd` refers to, by pidfs identity; kUnknown when this kernel cannot tell (no
// SO_PEERPIDFD, no pidfs, or a peer already reaped before Linux 6.16).
enum class PeerProcess { kSame, kOther, kUnknown };
PeerProcess ComparePeerProcess(int fd, int pidfd);

// The pid a pidfd refers to (its /proc/self/fdinfo "Pid:" line), or -1.
pid_t PidOfPidfd(int pidfd);

}  // namespace sbx::relay
