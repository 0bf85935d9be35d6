// RunDispatch: the host side of one `ateam-sandbox run`. One single-threaded process: it
// prepares the workspace and out dir, creates the private state directory with one relay
// socket per allowed route, clones the sandbox (the supervisor is its pid 1), then runs one
// event loop that serves every relay and watches the sandbox, the timeout and SIGINT/
// SIGTERM. When the sandbox ends, the sockets and the state directory are removed.
#pragma once

#include <string>

#include "dispatch/record/status_json.h"
#include "dispatch/request/request.h"
#include "dispatch/request/result.h"

namespace sbx::dispatch {

// `self_exe`: this executable (bound into the sandbox as the supervisor).
DispatchResult RunDispatch(const DispatchRequest& request, const std::string& self_exe);

}  // namespace sbx::dispatch
