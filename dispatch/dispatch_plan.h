// CompileDispatchPlan: the whole dispatch as data, from the resolved request and the facts
// of the host it runs on: the sandbox's plan and the harvest's. Pure: it reads nothing and creates
// nothing, so the dry run prints it as is and the unit tests compile it from injected facts.
#pragma once

#include <string>
#include <vector>

#include "base/error.h"
#include "dispatch/plan/harvest_plan.h"
#include "dispatch/plan/layout.h"
#include "dispatch/plan/limits.h"
#include "dispatch/request/result.h"
#include "dispatch/resolve.h"
#include "runtime/plan.h"
#include "security/landlock.h"

namespace sbx::dispatch {

class GitGuard;

// What the host holds (or, for a dry run, would hold) for the plan: paths, the fds the
// sandbox setup reads, where the cgroup is.
struct PlanFacts {
  std::string workspace;                 // absolute
  std::string out;                       // absolute
  std::string self_exe;                  // bound into the sandbox as the supervisor
  std::string state_dir;                 // where the route sockets and the tty socket are
  int hosts_fd = -1;                     // the generated /etc/hosts
  std::vector<HomeFd> credentials = {};  // the --credentials copies
  std::vector<HomeFd> agent_state = {};  // the preset's state files
  int resolv_conf_fd = -1;
  bool tty = false;                 // the agent gets a terminal of the sandbox's own
  bool report = true;               // the supervisor reports a command it cannot start
  std::string tty_size = {};        // "ROWSxCOLS" ("" unknown)
  const GitGuard* guard = nullptr;  // its binds over the workspace's git metadata
  // --dry-run with --object-cache: the cache a real run would borrow from, bound read-only
  // as the guard of a real run binds it.
  std::string dry_run_cache = {};
  std::vector<int> cgroup_procs_fds = {};
  std::string cgroup_where = {};    // the cgroup as the limits report names it ("" none)
  std::string cgroup_missing = {};  // why there is none
};

struct DispatchPlan {
  runtime::Plan plan;  // the sandbox, the supervisor as its pid 1
  security::LandlockRuleset landlock;
  LimitsReport limits;
  std::vector<DispatchRoute> routes;
  std::string limits_json;  // the status document's "limits"
  HarvestPlan harvest;      // git's sandboxes that read the workspace (--patch)
};

base::Result<DispatchPlan> CompileDispatchPlan(const ResolvedRequest& r, const PlanFacts& facts);

// What the status document says of the plan: its routes, Landlock and limits.
void ReportPlan(const DispatchPlan& planned, DispatchResult* result);

}  // namespace sbx::dispatch
