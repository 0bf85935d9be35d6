// Who a dispatch of a root caller is on the host: for a root caller without --run-as, a
// uid and gid leased for this dispatch alone (lease.h), while inside the sandbox the agent
// keeps the same ids and user name whatever the host ids are (the overflow ids, `nobody`:
// what a root caller's agent has always seen). --run-as and unprivileged callers are not
// leased: the ids they name or have are used as they are.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "dispatch/identity/lease.h"
#include "dispatch/request/request.h"
#include "runtime/host_facts.h"
#include "runtime/spec.h"

namespace sbx::dispatch {

struct DispatchIdentity {
  std::optional<IdLease> lease;
  runtime::SandboxSpec::HostIds host{};    // what the sandbox, the clone, the harvest run as
  runtime::SandboxSpec::HostIds inside{};  // what the agent sees as its own ids
};

// The paths that hold the lease from the start: the workspace and out dir the dispatch
// will make in <root>/<id>, and a given --out it will make, by name, before they exist.
std::vector<std::string> LeaseHoldPaths(const DispatchRequest& request, const std::string& id);

// True when this dispatch gets a leased identity: a root caller, no --run-as, and the
// overflow ids were resolved as the sandbox's (a user namespace that maps other ids).
bool WantsLeasedIdentity(const DispatchRequest& request, const runtime::HostFacts& host,
                         const std::optional<runtime::SandboxSpec::HostIds>& resolved);

// Leases the ids, recorded as held by `dispatch_id` while any of `hold_paths` exists.
// nullopt when the range is the built-in one and this user namespace does not map it (a
// container that maps a small block): the sandbox then runs as the overflow ids, as the
// namespace's other dispatches do (docs/threat-model.md). A configured range it does not
// map is an error.
base::Result<std::optional<DispatchIdentity>> LeaseDispatchIdentity(
    const runtime::HostFacts& host, const std::string& dispatch_id,
    const std::vector<std::string>& hold_paths);

// What --dry-run says instead of leasing: the range LeaseDispatchIdentity would lease from
// ("uids 100000-165535 and gids ... (SOURCE)"), by the same rules, taking nothing; nullopt
// when it would run as the overflow ids.
base::Result<std::optional<std::string>> LeaseRangeShown(const runtime::HostFacts& host);

}  // namespace sbx::dispatch
