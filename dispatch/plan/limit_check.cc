#include "dispatch/plan/limit_check.h"

#include <fmt/format.h>

namespace sbx::dispatch {

base::Status CheckLimitsEnforceable(const DispatchRequest& request,
                                    const std::string& cgroup_missing) {
  if (request.limits_best_effort || cgroup_missing.empty()) return {};
  // The native backend bounds processes by RLIMIT_NPROC in the sandbox's own user
  // namespace as well; bwrap's backend has only the cgroup for that.
  const bool pids_need_cgroup = request.backend == DispatchBackend::kBwrap;
  std::string flag;
  if (request.memory) {
    flag = "--memory " + *request.memory;
  } else if (request.cpus) {
    flag = fmt::format("--cpus {}", *request.cpus);
  } else if (request.pids && pids_need_cgroup) {
    flag = fmt::format("--pids {}", *request.pids);
  }
  if (flag.empty()) return {};
  return base::Error::Message(fmt::format(
      "{}: can't be enforced here: no cgroup for this dispatch ({}); `ateam-sandbox doctor` "
      "says how to delegate one, or pass --limits best-effort to run without it",
      flag, cgroup_missing));
}

std::vector<std::pair<std::string, std::string>> LimitMechanisms(const DispatchLimits& limits,
                                                                 bool backend_bwrap, bool cgroup) {
  const std::string none = "not enforced";
  std::string pids = cgroup ? (backend_bwrap ? "cgroup" : "cgroup, rlimit nproc")
                            : (backend_bwrap ? none : "rlimit nproc");
  return {
      {"tmpfs_size", backend_bwrap ? "tmpfs size (bwrap --size)" : "tmpfs size and nr_inodes"},
      {"memory", cgroup ? "cgroup" : none},
      {"pids", pids},
      {"cpus", !limits.cpus ? "no limit asked" : (cgroup ? "cgroup" : none)},
      {"disk", "disk watcher, rlimit fsize"},
      {"inodes", "disk watcher"},
      {"nested_userns", limits.nested_userns ? "allowed"
                        : backend_bwrap      ? "seccomp, bwrap --disable-userns"
                                             : "seccomp, max_user_namespaces=0"},
  };
}

}  // namespace sbx::dispatch
