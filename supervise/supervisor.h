// The in-sandbox tunnel supervisor: `ateam-sandbox supervise` after its arguments are parsed.
//
// Who calls it: RunSuperviseCommand, in the process the runtime started as pid 1 of the
// sandbox's pid namespace, inside the sandbox's user and mount namespaces but still in the
// host network namespace, with CAP_SYS_ADMIN and CAP_NET_ADMIN in its user namespace (plus
// CAP_NET_BIND_SERVICE for ports below 1024), and /proc mounted. Single-threaded.
// Irreversible for the calling process.
//
// Steps, in order (docs/tunnel.md):
//   1. block SIGCHLD/SIGTERM/SIGINT (read through a signalfd), ignore SIGPIPE; with --report,
//      connect the report channel (a command exec cannot start is reported there);
//   2. unshare(CLONE_NEWNET), check the netns owner, bring lo up;
//   3. bind one TCP listener per route, connect each route's handoff channel (the probe),
//      send the listener over it and close both (HandOverRouteListeners): the host relay
//      accepts the agent's connections itself, and no byte or connection passes through here;
//   4. drop every capability, keep no_new_privs, become non-dumpable; with --landlock,
//      create the agent's Landlock ruleset (paths opened as the sandbox shows them);
//   5. with --tty, open the agent's terminal and hand its master to `run` (agent_tty.h);
//      fork + exec the agent (SpawnAgent), on that terminal in its own session when there
//      is one, restricting itself with the ruleset right before exec;
//   6. on one event loop, watch the agent's pidfd and reap every other child (orphans of the
//      sandbox are re-parented to pid 1);
//   7. SIGTERM/SIGINT are forwarded to the agent; a second one ends the supervisor at once.
//      With --tty, a stop of the agent itself is answered with SIGCONT (nothing else in its
//      session could continue it); its jobs stop and continue under its own job control.
// When the agent exits the loop stops; the connections live in the host relay.
#pragma once

#include "base/error.h"
#include "supervise/routes.h"

namespace sbx::supervise {

// Returns the code the process should exit with: the agent's exit status, 128 + signal when
// it was killed, or 128 + signal when a second SIGTERM/SIGINT ended the supervisor (the
// agent is then SIGKILLed). Error for a failure of steps 1-5 (nothing was started, or
// the agent was killed again), or when the event loop itself fails.
base::Result<int> RunSupervisor(const SuperviseConfig& config);

}  // namespace sbx::supervise
