// `run --dry-run`: the sandbox the agent would get, printed instead of started. Nothing is
// created for it: no dispatch directory, no clone, no cgroup (the relay's state directory
// exists only while it prints, to resolve the routes).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dispatch/plan/limits.h"
#include "dispatch/request/result.h"
#include "runtime/plan.h"
#include "runtime/spec.h"
#include "security/landlock.h"

namespace sbx::dispatch {

struct DryRunFacts {
  const runtime::Plan* plan = nullptr;  // the sandbox as compiled (the supervisor is pid 1)
  const DispatchRequest* request = nullptr;
  const DispatchResult* result = nullptr;  // routes, workspace, out
  const security::LandlockRuleset* landlock = nullptr;
  const LimitsReport* limits = nullptr;
  std::optional<runtime::SandboxSpec::HostIds> run_as;  // a root caller's sandbox ids
  // A root caller's dispatch leases its host ids when it starts (dispatch/identity/): the
  // range they come from; `run_as` is then what the agent sees inside.
  std::optional<std::string> leased_from;
  std::vector<std::string> seccomp_groups;  // the relaxed groups
  // --object-cache: "CACHE: what a real run would do with it" ("" without)
  std::string object_cache;
  bool workspace_exists = false;  // false: a fresh clone or --out that a real run makes
};

// The agent's view of `plan`: its namespaces (the network one included, which the
// supervisor makes), no capabilities, the mounts but the tunnel's own, and the command
// itself as the process. Seccomp stays with the description (it is the supervisor's to
// install after the tunnel is up).
runtime::Plan AgentViewPlan(const runtime::Plan& plan, const std::vector<std::string>& command);

// A bwrap command line that runs the agent's sandbox as it can be expressed with bwrap
// alone: no tunnel, seccomp or Landlock; a root caller's line runs bwrap as the sandbox's
// ids through setpriv ($LEASED_UID and $LEASED_GID with `leased`: a free pair of the range,
// which the dry run cannot know without taking it).
std::string RunnableBwrapLine(const runtime::Plan& agent_plan, const std::string& bwrap_path,
                              const std::optional<runtime::SandboxSpec::HostIds>& run_as,
                              bool leased = false);

// Prints the whole dry run on stdout.
void PrintDryRun(const DryRunFacts& facts);

}  // namespace sbx::dispatch
