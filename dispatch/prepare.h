// The host-side preparation of a dispatch, before anything is cloned. Internal to
// dispatch/.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "dispatch/request.h"
#include "dispatch/workspace.h"
#include "relay/upstream.h"
#include "runtime/host_facts.h"
#include "runtime/spec.h"

namespace sbx::dispatch {

// --allow values plus the preset's endpoint, parsed and checked: valid names, ports
// 1-65535, no duplicate host, no more routes than tunnel addresses.
base::Result<std::vector<relay::Route>> ParseDispatchRoutes(const DispatchRequest& request);

// Which host ids the sandbox runs as: none for an unprivileged caller (its own); for
// root, --run-as (a user name, or uid[:gid]) or the overflow ids. Only ids mapped in the
// caller's user namespace qualify: root of a namespace that does not map the overflow ids
// gets none (it runs the sandbox as itself), and an unmapped --run-as is an error.
base::Result<std::optional<runtime::SandboxSpec::HostIds>> ResolveRunAs(
    const DispatchRequest& request, const runtime::HostFacts& host);

// The name /etc/passwd gives `uid` (what `id -un` prints inside), or the uid in decimal.
std::string SandboxUserName(uid_t uid);

struct DispatchDirs {
  std::string workspace;
  std::string out;
  // --workspace/--out given on the command line: held open, handed back when destroyed.
  std::optional<GivenDir> given_workspace;
  std::optional<GivenDir> given_out;
};
// Makes <root>/<id> fresh in a verified root (--workspace-root or DefaultWorkspaceRoot),
// clones --repo into <root>/<id>/workspace as the sandbox's ids, or opens --workspace;
// opens or creates --out (default <root>/<id>/out). With run-as ids both belong to them.
base::Result<DispatchDirs> PrepareDispatchDirs(
    const DispatchRequest& request, const std::string& id,
    const std::optional<runtime::SandboxSpec::HostIds>& run_as);

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
