// RunDispatch: the host side of one `ateam-sandbox run`. One single-threaded process: it
// prepares the workspace and out dir, creates the private state directory with one relay
// socket per allowed route, clones the sandbox (the supervisor is its pid 1), then runs one
// event loop that serves every relay and watches the sandbox, the timeout and SIGINT/
// SIGTERM. When the sandbox ends, the sockets and the state directory are removed.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dispatch/request.h"

namespace sbx::dispatch {

// Exit codes of `run` besides the agent's own.
inline constexpr int kRuntimeFailureExit = 125;
inline constexpr int kTimeoutExit = 124;

// How a dispatch ended (the status document's `reason`).
enum class DispatchReason {
  kExited,        // the agent exited by itself (also after a stop signal it handled)
  kSignaled,      // a signal ended the agent's sandbox
  kOom,           // the memory limit: the kernel's OOM killer ended it
  kTimeout,       // --timeout expired: the sandbox was killed whole
  kInterrupted,   // `run` got SIGINT/SIGTERM/SIGHUP and the agent ended by it (or never ran)
  kRuntimeError,  // the runtime failed (setup, bad input): `error` says why
  kDryRun,        // --dry-run: nothing ran
  kHarvestFailed,  // the agent ended, but its --patch could not be written (patch_error)
};
std::string_view ReasonName(DispatchReason reason);

struct DispatchRoute {
  std::string host;
  int port = 0;
  std::string sandbox_address;  // 127.77.0.N
  std::string upstream;         // the pinned address
  std::string kind;             // "tls" or "tcp" (relay::RouteKind)
};

struct DispatchResult {
  std::string id;
  std::string workspace;
  std::string out;
  DispatchBackend backend = DispatchBackend::kNative;
  std::vector<DispatchRoute> routes;
  int exit_code = kRuntimeFailureExit;
  std::optional<int> signal;  // the signal that ended the agent (or the sandbox)
  DispatchReason reason = DispatchReason::kRuntimeError;
  std::optional<int> stop_signal;  // the SIGINT/SIGTERM/SIGHUP `run` got, passed to the agent
  std::string error;               // one line, for kRuntimeError
  std::string started_at;
  int landlock_abi = 0;                     // the kernel's Landlock ABI (0: none)
  std::vector<std::string> landlock_parts;  // the Landlock parts applied to the agent
  std::string base_commit;         // HEAD of the workspace before the agent ran ("" if none)
  bool workspace_tainted = false;  // the agent changed guarded git metadata
  std::vector<std::string> workspace_taint;  // what it changed, each undone (git_guard.h)
  std::string patch_error;                   // --patch could not be written
  std::string limits_json = "null";          // dispatch/limits.h RenderLimitsJson
  double setup_ms = 0;
  double total_ms = 0;
};

// `self_exe`: this executable (bound into the sandbox as the supervisor).
DispatchResult RunDispatch(const DispatchRequest& request, const std::string& self_exe);

// The --status-json document.
std::string RenderStatusJson(const DispatchResult& result);

}  // namespace sbx::dispatch
