#include "dispatch/resolve.h"

#include <algorithm>

#include <fmt/format.h>

#include "dispatch/git/rw_git.h"
#include "dispatch/host/cgroup.h"
#include "dispatch/host/namespace_preflight.h"
#include "dispatch/plan/limit_check.h"
#include "dispatch/request/checks.h"
#include "security/landlock.h"

extern char** environ;  // NOLINT: POSIX

namespace sbx::dispatch {
namespace {

std::vector<std::string> CurrentEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  return env;
}

// Pins every route's upstream now, before anything exists. When it is the preset's
// endpoint that failed to resolve, the message says how to go without it.
base::Status PinUpstreams(const DispatchRequest& request, std::vector<relay::Route>& routes) {
  for (relay::Route& route : routes) {
    auto upstream = relay::ResolveUpstream(route);
    if (upstream) {
      route.upstream_override = *upstream;
      continue;
    }
    const std::string message = upstream.error().Render();
    const auto presets = PresetEndpoints(request);
    const bool preset = std::any_of(presets.begin(), presets.end(), [&](const std::string& host) {
      return message.starts_with("Can't resolve " + host + " ");
    });
    if (!preset) return upstream.error();
    return base::Error::Message(fmt::format(
        "{}; or leave the --agent preset's endpoints out with --no-default-allow", message));
  }
  return {};
}

}  // namespace

base::Result<ResolvedRequest> Resolve(const DispatchRequest& given) {
  auto host = runtime::ProbeHostFacts();
  if (!host) return host.error();
  ResolvedRequest r;
  r.host = std::move(*host);
  r.request = given;
  // Every path is checked, and made absolute, before anything is created.
  if (auto st = CheckRequestPaths(r.request, r.host.cwd, r.host.euid == 0, &r.credentials); !st)
    return st.error();
  if (auto st = CheckHostMountPoints("/etc"); !st) return st.error();
  for (const std::string& path : r.request.rw_paths) {
    if (auto st = RefuseRwInsideGitDir(path); !st) return st.error();
  }
  auto routes = ParseDispatchRoutes(r.request);
  if (!routes) return routes.error();
  r.routes = std::move(*routes);
  auto run_as = ResolveRunAs(r.request, r.host);
  if (!run_as) return run_as.error();
  r.run_as = *run_as;
  // Root of a user namespace with no other id to hand the sandbox to runs it as itself.
  if (r.host.IsRoot() && !r.run_as) r.host.root_acts_unprivileged = true;
  // bwrap would print its own words for a refused namespace, so ask first; the native
  // backend asks only after a failed start, which costs nothing when it works.
  if (!r.request.dry_run && r.request.backend == DispatchBackend::kBwrap) {
    if (auto st = CheckNamespacesAllowed(); !st) return st.error();
  }
  r.host_env = CurrentEnvironment();
  auto agent = FindAgentInstall(r.request, r.host_env);
  if (!agent) return agent.error();
  r.agent = std::move(*agent);
  auto limits = ResolveLimits(r.request);
  if (!limits) return limits.error();
  r.limits = *limits;
  // Refused before the clone when this host has no cgroup to give (checked again when the
  // cgroup is made).
  if (!r.request.limits_best_effort && (r.request.memory || r.request.cpus || r.request.pids)) {
    auto where = DispatchCgroup::Probe(r.host.euid == 0);
    if (auto st = CheckLimitsEnforceable(r.request, where ? "" : where.error().Render()); !st) {
      return st.error();
    }
  }
  r.seccomp_groups = r.request.seccomp_allow;
  if (r.limits.nested_userns) r.seccomp_groups.emplace_back("nested-userns");
  auto seccomp = security::CompileDefaultSeccompPolicy({.relaxed_groups = r.seccomp_groups});
  if (!seccomp) return seccomp.error();
  r.seccomp = std::move(*seccomp);
  r.sandbox_user = SandboxUserName(r.run_as ? r.run_as->uid : r.host.uid);
  r.landlock_abi = security::LandlockAbi();
  if (auto st = PinUpstreams(r.request, r.routes); !st) return st.error();
  return r;
}

}  // namespace sbx::dispatch
