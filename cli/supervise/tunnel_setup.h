// The supervisor's setup steps, before the agent exists (DESIGN.md, "The network tunnel").
//
// Who calls it: RunSupervisor, in the supervisor process (pid 1 of the sandbox's pid
// namespace, inside the sandbox's user and mount namespaces, started in the host network
// namespace with CAP_SYS_ADMIN and CAP_NET_ADMIN in its user namespace). Single-threaded.
// Each step is irreversible for the process; none logs or exits.
#pragma once

#include <vector>

#include "cli/supervise/routes.h"
#include "runtime/base/error.h"
#include "runtime/base/unique_fd.h"

namespace sbx::cli {

// unshare(CLONE_NEWNET); checks that the new netns is owned by the caller's own user
// namespace (a silently skipped unshare would leave us binding in the host's netns); brings
// lo up (127.0.0.1/8). Needs CAP_SYS_ADMIN and CAP_NET_ADMIN in the user namespace and
// /proc mounted.
base::Status EnterPrivateNetwork();

// One route's sockets: the TCP listener the agent connects to, and the channel to the host
// relay's Unix socket over which each accepted connection is handed over (relay/handoff.h).
struct RouteSockets {
  base::UniqueFd listener;
  base::UniqueFd channel;
};

// Binds one listening TCP socket per route, in route order (non-blocking, CLOEXEC; the
// caller owns them), then connects each route's channel within `config.probe_timeout`. The
// channel is the readiness probe: it costs the host relay no upstream connection (the relay
// dials only once a handed-over connection sends a byte), and it must exist before the agent
// does, because the host relay trusts only the first connection to each route socket. Errors
// name the route: "route 127.77.0.2:443=/run/x.sock: Can't connect to ...". A port below
// 1024 needs CAP_NET_BIND_SERVICE in the user namespace owning the netns.
base::Result<std::vector<RouteSockets>> ListenAndConnectRoutes(const SuperviseConfig& config);

// Drops every capability for good: ambient, the bounding set (only effective with
// CAP_SETPCAP; without it the kernel refuses each drop with EPERM, which is tolerated as bwrap
// does, since no_new_privs already stops exec from gaining anything), then permitted,
// effective and inheritable. Sets no_new_privs and PR_SET_DUMPABLE 0 (the agent can neither
// ptrace us nor read our memory), and checks that the permitted, effective, inheritable
// and ambient sets really are empty.
base::Status DropAllPrivileges();

}  // namespace sbx::cli
