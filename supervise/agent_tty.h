// The agent's terminal in tty mode (`run --tty`): a pty pair of the sandbox's own devpts
// instance (the layout mounts a fresh one on /dev/pts, /dev/ptmx points into it), never a
// terminal of the host.
//
//   supervisor: open /dev/ptmx, unlock, size it, open the peer (the slave)
//               ==master over the tty socket (SCM_RIGHTS), once==>  host side of `run`;
//               closes its copy of the master
//   agent:      setsid, the slave as controlling terminal and as fds 0, 1, 2
//
// After the handover no process in the sandbox holds the master: the agent can neither read
// what is typed before it reaches the line discipline nor write as if typed. The wire format
// is the listener handoff's (relay/handoff.h: one byte carrying one fd).
//
// Who calls it: RunSupervisor (OpenAgentTty, before the agent is forked, so the socket's first
// connection is the supervisor's) and the agent's child between fork and exec
// (AttachControllingTty, async-signal-safe).
#pragma once

#include "base/error.h"
#include "base/unique_fd.h"
#include "supervise/routes.h"

namespace sbx::supervise {

// Opens the pair, sets the window size (when given) and IUTF8 (the sandbox's locale is
// C.UTF-8, so erasing in canonical mode removes whole characters), hands the master to
// `tty.socket` within `timeout` and closes it. Returns the slave, close-on-exec, for
// SpawnAgent.
base::Result<base::UniqueFd> OpenAgentTty(const SuperviseTty& tty,
                                          std::chrono::milliseconds timeout);

// In the agent's child, before exec: a new session whose controlling terminal is `slave`,
// which becomes fds 0, 1 and 2 (and is closed at its own number). Returns 0 or the errno of
// the step that failed. Async-signal-safe.
int AttachControllingTty(int slave) noexcept;

}  // namespace sbx::supervise
