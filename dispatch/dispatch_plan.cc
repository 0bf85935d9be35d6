#include "dispatch/dispatch_plan.h"

#include <fmt/format.h>

#include "dispatch/git/git_guard.h"
#include "dispatch/plan/landlock_plan.h"
#include "dispatch/plan/layout.h"
#include "dispatch/plan/limit_check.h"
#include "netns/hosts.h"
#include "relay/host_relay.h"
#include "runtime/plan_compiler.h"

namespace sbx::dispatch {

base::Result<DispatchPlan> CompileDispatchPlan(const ResolvedRequest& r, const PlanFacts& facts) {
  const DispatchRequest& request = r.request;
  auto landlock = DispatchLandlockPolicy(request, facts.workspace, facts.out);
  if (!landlock) return landlock.error();
  DispatchHostPaths paths{.workspace = facts.workspace,
                          .out = facts.out,
                          .supervisor_binary = facts.self_exe,
                          .route_sockets = {},
                          .route_listen = {},
                          .hosts_fd = facts.hosts_fd,
                          .agent_binds = r.agent.binds,
                          .host_env = r.host_env,
                          .seccomp_program = r.seccomp,
                          .agent_bin_dir = r.agent.bin_dir,
                          .supervisor_args = {}};
  AddLandlockToSupervisorArgs(*landlock, &paths.supervisor_args);
  paths.sandbox_user = r.sandbox_user;
  paths.credentials = facts.credentials;
  paths.agent_state = facts.agent_state;
  paths.resolv_conf_fd = facts.resolv_conf_fd;
  if (facts.report) paths.report_socket = facts.state_dir + "/" + kReportSocketName;
  if (facts.tty) {
    paths.tty_socket = facts.state_dir + "/" + kTtySocketName;
    paths.tty_size = facts.tty_size;
  }
  DispatchPlan planned;
  for (const relay::Route& route : r.routes) {
    auto address = netns::RouteAddress(static_cast<size_t>(route.index));
    if (!address) return address.error();
    paths.route_sockets.push_back(facts.state_dir + "/" + relay::RouteSocketName(route.index));
    paths.route_listen.push_back(fmt::format("{}:{}", *address, relay::SandboxPort(route)));
    planned.routes.push_back(
        {route.host, route.port, *address,
         route.upstream_override ? route.upstream_override->ToString() : std::string(),
         std::string(relay::RouteKindName(route.kind))});
    // What the supervisor will apply: the same kernel answers there as here.
    landlock->connect_ports.push_back(relay::SandboxPort(route));
  }
  planned.landlock = security::BuildLandlockRuleset(*landlock, r.landlock_abi);
  auto spec = BuildDispatchSpec(request, paths);
  if (!spec) return spec.error();
  if (facts.guard != nullptr) facts.guard->AddBinds(*spec);
  std::vector<std::string> borrowed =
      facts.guard != nullptr ? facts.guard->borrowed() : std::vector<std::string>();
  if (!facts.dry_run_cache.empty()) {
    spec->ops.emplace_back(runtime::BindOp{
        .source = facts.dry_run_cache, .dest = facts.dry_run_cache, .read_only = true});
    borrowed.push_back(facts.dry_run_cache);
  }
  spec->run_as = r.run_as;
  if (r.inside_ids) {
    spec->uid = r.inside_ids->uid;
    spec->gid = r.inside_ids->gid;
  }
  ApplyLimitsToSpec(r.limits, &*spec);
  const bool bwrap_backend = request.backend == DispatchBackend::kBwrap;
  // bwrap cannot write the sandbox's sysctls; its own --disable-userns is the second layer
  // behind the seccomp rule there.
  if (bwrap_backend && !r.limits.nested_userns) spec->disable_userns = true;
  spec->cgroup_procs_fds = facts.cgroup_procs_fds;
  planned.limits = ReportLimits(r.limits, bwrap_backend, facts.cgroup_where, facts.cgroup_missing);
  planned.limits.by = LimitMechanisms(r.limits, bwrap_backend, !facts.cgroup_where.empty());
  planned.limits_json = RenderLimitsJson(r.limits, planned.limits);
  auto plan = runtime::CompilePlan(*spec, r.host);
  if (!plan) return plan.error();
  // The caller's terminal is never the sandbox's console.
  if (facts.tty) plan->stdout_tty.reset();
  planned.plan = std::move(*plan);
  auto harvest = CompileHarvestPlan({.workspace = facts.workspace,
                                     .run_as = r.run_as,
                                     .patch_cgroup_procs_fds = facts.cgroup_procs_fds,
                                     .borrowed_stores = borrowed},
                                    r.host);
  if (!harvest) return harvest.error();
  planned.harvest = std::move(*harvest);
  return planned;
}

void ReportPlan(const DispatchPlan& planned, DispatchResult* result) {
  result->routes = planned.routes;
  result->landlock_abi = planned.landlock.abi;
  result->landlock_parts = security::LandlockParts(planned.landlock);
  result->limits_json = planned.limits_json;
}

}  // namespace sbx::dispatch
