// What `run` can limit for this caller on this host: the dispatch cgroup (memory, pids,
// cpu) and the always-on limits, and what the nested-user-namespace choice costs.
#include <unistd.h>

#include <fmt/format.h>

#include "cli/doctor/doctor_probes.h"
#include "dispatch/host/cgroup.h"
#include "dispatch/plan/limits.h"

namespace sbx::cli::doctor {

std::vector<Check> LimitChecks() {
  std::vector<Check> checks;
  auto cgroup = dispatch::DispatchCgroup::Probe(::geteuid() == 0);
  if (cgroup) {
    checks.push_back({"run-cgroup", CheckStatus::kOk,
                      fmt::format("`run` puts each dispatch in a cgroup {} (--memory, --pids, "
                                  "--cpus hold)",
                                  *cgroup),
                      ""});
  } else {
    checks.push_back(
        {"run-cgroup", CheckStatus::kInfo,
         fmt::format("no cgroup for `run` here ({}): --memory and --cpus are not enforced; the "
                     "tmpfs sizes, RLIMIT_NPROC (--pids, native backend) and the sandbox's own "
                     "sysctls still hold",
                     cgroup.error().Render()),
         "delegate a cgroup v2 subtree: run it inside `systemd-run --user --scope -p "
         "Delegate=yes ateam-sandbox run ...` (the user manager delegates memory and pids), or "
         "a unit with Delegate=yes; on a cgroup v1 or hybrid host, run as root"});
  }
  checks.push_back(
      {"nested-userns", CheckStatus::kInfo,
       fmt::format("`run` denies the agent new user namespaces (seccomp EPERM and "
                   "max_user_namespaces=0): nothing reaches the kernel interfaces a namespace's "
                   "root gets (nf_tables, more file systems to mount), but the agent cannot run "
                   "a sandbox of its own (Claude Code's Bash sandbox, bwrap, podman). "
                   "--allow-nested-userns allows at most {}, and reopens that kernel surface",
                   dispatch::kNestedUserNamespaces),
       ""});
  return checks;
}

}  // namespace sbx::cli::doctor
