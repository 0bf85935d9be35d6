// Finish, the last stage of a dispatch: the sandbox reaped and its end recorded, the git
// guard's check, the harvest, and what the status record says of each.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/output_file.h"
#include "dispatch/dispatch_plan.h"
#include "dispatch/git/git_guard.h"
#include "dispatch/host_resources.h"
#include "dispatch/request/result.h"
#include "dispatch/resolve.h"
#include "dispatch/serve.h"
#include "runtime/sandbox_backend.h"

namespace sbx::dispatch {

// Finish: the sandbox reaped and its end recorded, then what the agent left in the git
// metadata undone before the harvest reads the workspace, then the cgroup gone.
// A command the supervisor could not start is explained with the PATH `planned` gave it.
// The harvest (its plan compiled with the dispatch's, inside the dispatch's cgroup) reads
// the workspace into `patch_file`, when there is one, under the deadline and stop signals
// (`stop_fd`).
void Finish(const ResolvedRequest& r, const LoopOutcome& outcome, runtime::SandboxProcess* sandbox,
            HostResources* held, GitGuard* guard, const std::string& workspace,
            const DispatchPlan& planned, int stop_fd, std::optional<base::OutputFile>* patch_file,
            DispatchResult* result);

}  // namespace sbx::dispatch
