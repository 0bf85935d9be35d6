// Limits fail closed: a limit the caller asked for (--memory, --cpus, --pids) that this host
// cannot enforce is refused before anything of the dispatch is made, unless the caller
// said --limits best-effort. The defaults are kept where the host allows and reported
// where it does not (the status document's `limits`), never refused.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "dispatch/plan/limits.h"
#include "dispatch/request/request.h"

namespace sbx::dispatch {

// `cgroup_missing`: why this dispatch can have no cgroup ("" when it can). One line naming
// the first asked-for limit nothing enforces, why, and the two ways on.
base::Status CheckLimitsEnforceable(const DispatchRequest& request,
                                    const std::string& cgroup_missing);

// Each limit with what enforces it ("cgroup", "rlimit nproc", "tmpfs size=") or
// "not enforced", for the status document and the dry run (LimitsReport::by).
std::vector<std::pair<std::string, std::string>> LimitMechanisms(const DispatchLimits& limits,
                                                                 bool backend_bwrap, bool cgroup);

}  // namespace sbx::dispatch
