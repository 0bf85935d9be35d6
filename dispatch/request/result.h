// DispatchResult: how one `ateam-sandbox run` ended, as plain data (the status document and
// the dispatch record render it).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dispatch/request/request.h"

namespace sbx::dispatch {

// Exit codes of `run` besides the agent's own.
inline constexpr int kRuntimeFailureExit = 125;
inline constexpr int kTimeoutExit = 124;
inline constexpr int kDiskExit = 123;  // --disk or --inodes crossed (reason `disk`)

// How a dispatch ended (the status document's `reason`).
enum class DispatchReason {
  kExited,              // the agent exited by itself (also after a stop signal it handled)
  kSignaled,            // a signal ended the agent's sandbox
  kOom,                 // the memory limit: the kernel's OOM killer ended it
  kTimeout,             // --timeout expired: the sandbox was killed whole
  kDisk,                // --disk or --inodes crossed: stopped (the grace, then SIGKILL)
  kInterrupted,         // `run` got SIGINT/SIGTERM/SIGHUP and the agent ended by it (or never ran)
  kRuntimeError,        // the runtime failed (setup, bad input): `error` says why
  kDryRun,              // --dry-run: nothing ran
  kHarvestFailed,       // the agent ended, but its --patch could not be written (patch_error)
  kGitGuardIncomplete,  // the git guard's check after the agent did not finish: fail closed
  kCommandNotFound,     // the command is not there (exit 127): `error` says what would help
  kCommandNotExecutable,  // the command is there but cannot be executed (exit 126)
  kRunning,               // not ended yet: the record `run` writes before the agent starts
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
  std::string error;               // one line, for kRuntimeError and the command kinds
  // Said when the agent exited non-zero under the default Landlock network rule, which the
  // runtime cannot see it run into (dispatch.cc NoteLandlockNetwork).
  std::string network_note;
  std::string started_at;
  std::vector<DispatchLabel> labels;        // --label, as given
  int landlock_abi = 0;                     // the kernel's Landlock ABI (0: none)
  std::vector<std::string> landlock_parts;  // the Landlock parts applied to the agent
  std::string base_commit;         // HEAD of the workspace before the agent ran ("" if none)
  bool workspace_tainted = false;  // the agent changed guarded git metadata
  std::vector<std::string> workspace_taint;  // what it changed, each undone (git_guard.h)
  std::string patch_error;                   // --patch could not be written
  std::string limits_json = "null";          // dispatch/plan/limits.h RenderLimitsJson
  double setup_ms = 0;
  double total_ms = 0;
};

}  // namespace sbx::dispatch
