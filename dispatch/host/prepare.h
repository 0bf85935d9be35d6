// The host-side preparation of a dispatch, before anything is cloned. Internal to
// dispatch/.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "dispatch/git/clone_checkout.h"
#include "dispatch/git/workspace.h"
#include "dispatch/request/request.h"
#include "relay/upstream.h"
#include "runtime/host_facts.h"
#include "runtime/spec.h"

namespace sbx::dispatch {

// The hosts the --agent preset allows by itself: its API and sign-in hosts, and its
// telemetry hosts with --agent-telemetry; none with --no-default-allow.
std::vector<std::string> PresetEndpoints(const DispatchRequest& request);

// --allow values plus the preset's endpoints (an --allow of the same host replaces one), parsed and
// checked: valid names, ports 1-65535, no duplicate host, no more routes than tunnel addresses.
base::Result<std::vector<relay::Route>> ParseDispatchRoutes(const DispatchRequest& request);

// Which host ids the sandbox runs as: none for an unprivileged caller (its own); for
// root, --run-as (a user name, or uid[:gid]) or the overflow ids. Only ids mapped in the
// caller's user namespace qualify: root of a namespace that does not map the overflow ids
// gets none (it runs the sandbox as itself), and an unmapped --run-as is an error.
base::Result<std::optional<runtime::SandboxSpec::HostIds>> ResolveRunAs(
    const DispatchRequest& request, const runtime::HostFacts& host);

// The name /etc/passwd gives `uid` (what `id -un` prints inside), or the uid in decimal.
std::string SandboxUserName(uid_t uid);

// --cache-root made absolute, or the caller's default (DefaultObjectCacheRoot).
base::Result<std::string> ObjectCacheRootPath(const DispatchRequest& request, bool root_caller);

struct DispatchDirs {
  // A given --workspace's lock (dispatch/host/workspace_lock.h), held while this exists;
  // first, so it goes last.
  base::UniqueFd workspace_lock;
  std::string workspace;
  std::string out;
  // <root>/<id> when this run made it (else `made_dir` is empty): what a failed run removes.
  base::UniqueFd root_fd;
  std::string made_dir;
  std::string made_path;
  // <root>/<id> open, holding the run's lock on it (dispatch/host/lock.h).
  base::UniqueFd dir_fd;
  // --workspace/--out given on the command line: held open, handed back when destroyed.
  std::optional<GivenDir> given_workspace;
  std::optional<GivenDir> given_out;
  // The submodules cloned into a fresh clone (dispatch/git/clone_submodules.h).
  std::vector<ClonedSubmodule> submodules;
  // --object-cache: the cache the workspace borrows its objects from, and its lock, shared
  // for the run's life (dispatch/git/object_cache_clone.h); empty and -1 without one.
  std::string object_cache;
  base::UniqueFd object_cache_lock;
};
// Makes <root>/<id> fresh in a verified root (--workspace-root or DefaultWorkspaceRoot),
// clones --repo into <root>/<id>/workspace as the sandbox's ids, or opens and locks
// --workspace (refused while another run holds it); opens or creates --out (default
// <root>/<id>/out). With run-as ids both belong to them. A stop signal on `stop_fd` during the
// clone ends it (`*stopped_by` says which). When anything fails, <root>/<id> is removed again
// before returning.
base::Result<DispatchDirs> PrepareDispatchDirs(
    const DispatchRequest& request, const std::string& id,
    const std::optional<runtime::SandboxSpec::HostIds>& run_as, int stop_fd = -1,
    int* stopped_by = nullptr);

// The same places for a dry run, by name only: nothing is created, cloned or opened for
// writing (a given --out that does not exist yet is shown where it would be made).
base::Result<DispatchDirs> PlanDispatchDirs(const DispatchRequest& request, const std::string& id,
                                            bool root_caller);

// A close-on-exec memfd holding the generated /etc/hosts: the sandbox setup (or bwrap)
// reads it and closes it before the agent runs.
base::Result<base::UniqueFd> HostsFileFd(const std::vector<relay::Route>& routes);

// Where the preset's agent binary is, when it lives outside the directories the layout
// already binds (/usr): what to bind read-only (its file and the package directory around
// it) and the directory it was found in, which goes first on the sandbox's PATH.
struct AgentInstall {
  std::vector<std::string> binds;
  std::string bin_dir;  // "" when the agent is under /usr or there is no agent
};
base::Result<AgentInstall> FindAgentInstall(const DispatchRequest& request,
                                            const std::vector<std::string>& host_env);

// Fails when `file` (given with `flag`) would be written inside the sandbox's writable
// places.
base::Status CheckFileOutside(const std::string& flag, const std::string& file,
                              const DispatchDirs& dirs);

}  // namespace sbx::dispatch
