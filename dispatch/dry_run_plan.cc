#include "dispatch/dry_run_plan.h"

#include <sys/stat.h>

#include <optional>

#include <fmt/format.h>

#include "dispatch/acquire.h"
#include "dispatch/dispatch_plan.h"
#include "dispatch/git/object_cache_preview.h"
#include "dispatch/host/cgroup.h"
#include "dispatch/host/prepare.h"
#include "dispatch/identity/dispatch_identity.h"
#include "dispatch/plan/dry_run.h"
#include "dispatch/terminal/terminal.h"

namespace sbx::dispatch {

// --dry-run: the plan compiled from the host's facts as they are, printed. Nothing is made
// on the host for it: no directory, socket, process or cgroup (the route sockets are shown
// in a state directory that does not exist). Only the sealed memfds of the generated files
// exist while it prints, as the plan names their fds.
base::Status DryRun(const ResolvedRequest& r, const std::string& self_exe, DispatchResult* result) {
  auto dirs = PlanDispatchDirs(r.request, result->id, r.run_as.has_value());
  if (!dirs) return dirs.error();
  result->workspace = dirs->workspace;
  result->out = dirs->out;
  auto hosts = HostsFileFd(r.routes);
  if (!hosts) return hosts.error();
  auto files = MakeSandboxFiles(r, dirs->workspace);
  if (!files) return files.error();
  PlanFacts facts{.workspace = dirs->workspace,
                  .out = dirs->out,
                  .self_exe = self_exe,
                  .state_dir = "<state dir>",
                  .hosts_fd = hosts->get(),
                  .credentials = files->CredentialFds(),
                  .agent_state = files->AgentStateFds(),
                  .resolv_conf_fd = files->resolv_conf ? files->resolv_conf.get() : -1,
                  .tty = WantsTty(r.request.tty)};
  // --object-cache: where the cache is or would be, and what a real run would do with it;
  // nothing opened for writing, nothing locked.
  std::optional<CachePreview> cache;
  if (r.request.object_cache && r.request.repo) {
    auto cache_root = ObjectCacheRootPath(r.request, r.run_as.has_value());
    if (!cache_root) return cache_root.error();
    auto preview = PreviewObjectCache(*r.request.repo, *cache_root, r.run_as.has_value());
    if (!preview) return preview.error();
    cache = std::move(*preview);
    facts.dry_run_cache = cache->path;
  }
  auto where = DispatchCgroup::Probe(r.host.euid == 0);
  if (where) facts.cgroup_where = "(dry run: none made) " + *where;
  if (!where) facts.cgroup_missing = where.error().Render();
  auto planned = CompileDispatchPlan(r, facts);
  if (!planned) return planned.error();
  // A root caller's dispatch would lease its host ids: say from where, take nothing.
  base::Result<std::optional<std::string>> leased_from = std::optional<std::string>();
  if (WantsLeasedIdentity(r.request, r.host, r.run_as)) leased_from = LeaseRangeShown(r.host);
  if (!leased_from) return leased_from.error();
  ReportPlan(*planned, result);
  struct stat st {};
  PrintDryRun({.plan = &planned->plan,
               .request = &r.request,
               .result = result,
               .landlock = &planned->landlock,
               .limits = &planned->limits,
               .run_as = r.run_as,
               .leased_from = *leased_from,
               .seccomp_groups = r.seccomp_groups,
               .object_cache = cache ? fmt::format("{}: {}", cache->path, cache->what) : "",
               .workspace_exists = ::stat(dirs->workspace.c_str(), &st) == 0 &&
                                   ::stat(dirs->out.c_str(), &st) == 0});
  result->reason = DispatchReason::kDryRun;
  result->exit_code = 0;
  return {};
}

}  // namespace sbx::dispatch
