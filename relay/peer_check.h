// Who may use a channel socket of the dispatch (the terminal channel tty.sock, the route
// channels route-N.sock): only the sandbox's own supervisor. The sockets' owner and mode
// already keep out every uid but the sandbox's; this is the check at the other end, before
// anything a connection sends is adopted, so that neither a process of another uid that
// got through (the overflow uid of an older setup, a uid with CAP_DAC_OVERRIDE) nor one of
// the sandbox's own other processes can hand over a terminal or a listener.
//
// The peer's credentials (SO_PEERCRED, as the kernel recorded them at connect) must name
// the supervisor's pid and the sandbox's uid, and the supervisor's pidfd must still refer
// to a live process after they were read: a pid can only be reused once its process is
// gone, so a live pidfd whose pid equals the peer's is that process.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>

#include "base/unique_fd.h"

namespace sbx::relay {

class PeerGate {
 public:
  // Set once the sandbox exists. `supervisor` returns a pidfd of the supervisor as it is now
  // (an invalid fd while there is none yet); `uid` is the host uid the sandbox runs as.
  void Expect(std::function<base::UniqueFd()> supervisor, uid_t uid);

  // "" when the peer of the connected Unix socket `fd` is the supervisor, else why not (for
  // the ledger or stderr line).
  [[nodiscard]] std::string Check(int fd) const;

 private:
  std::function<base::UniqueFd()> supervisor_;
  uid_t uid_ = 0;
};

// The pid a pidfd refers to (its /proc/self/fdinfo "Pid:" line), or -1.
pid_t PidOfPidfd(int pidfd);

}  // namespace sbx::relay
