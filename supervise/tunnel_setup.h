// The supervisor's setup steps, before the agent exists (docs/tunnel.md).
//
// Who calls it: RunSupervisor, in the supervisor process (pid 1 of the sandbox's pid
// namespace, inside the sandbox's user and mount namespaces, started in the host network
// namespace with CAP_SYS_ADMIN and CAP_NET_ADMIN in its user namespace). Single-threaded.
// Each step is irreversible for the process; none logs or exits.
#pragma once

#include "base/error.h"
#include "base/unique_fd.h"
#include "supervise/routes.h"

namespace sbx::supervise {

// unshare(CLONE_NEWNET); checks that the new netns is owned by the caller's own user
// namespace (a silently skipped unshare would leave us binding in the host's netns); brings
// lo up (127.0.0.1/8). Needs CAP_SYS_ADMIN and CAP_NET_ADMIN in the user namespace and
// /proc mounted.
base::Status EnterPrivateNetwork();

// Binds one listening TCP socket per route, in route order, then for each route connects the
// channel to the host relay's Unix socket within `config.probe_timeout`, sends the listener
// over it (relay/handoff.h) and closes both: from then on the host relay accepts the agent's
// connections itself, and this process holds no socket of the tunnel. The channel is the
// readiness probe: it costs the host relay no upstream connection, and it must exist before
// the agent does, because the host relay trusts only the first connection to each route
// socket. Connections made before the relay has taken the listener wait in its backlog.
// Errors name the route: "route 127.77.0.2:443=/run/x.sock: Can't connect to ...". A port
// below 1024 needs CAP_NET_BIND_SERVICE in the user namespace owning the netns.
base::Status HandOverRouteListeners(const SuperviseConfig& config);

// Drops every capability for good: ambient, the bounding set (only effective with
// CAP_SETPCAP; without it the kernel refuses each drop with EPERM, which is tolerated as bwrap
// does, since no_new_privs already stops exec from gaining anything), then permitted,
// effective and inheritable. Sets no_new_privs and PR_SET_DUMPABLE 0 (the agent can neither
// ptrace us nor read our memory), and checks that the permitted, effective, inheritable
// and ambient sets really are empty.
base::Status DropAllPrivileges();

}  // namespace sbx::supervise
