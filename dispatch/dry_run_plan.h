// --dry-run's stage: the dispatch's plan compiled and printed, nothing acquired.
#pragma once

#include <string>

#include "base/error.h"
#include "dispatch/request/result.h"
#include "dispatch/resolve.h"

namespace sbx::dispatch {

// --dry-run: the plan compiled from the host's facts as they are, printed. Nothing is made
// on the host for it: no directory, socket, process or cgroup (the route sockets are shown
// in a state directory that does not exist). Only the sealed memfds of the generated files
// exist while it prints, as the plan names their fds.
base::Status DryRun(const ResolvedRequest& r, const std::string& self_exe, DispatchResult* result);

}  // namespace sbx::dispatch
