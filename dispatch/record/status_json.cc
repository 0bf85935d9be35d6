#include "dispatch/record/status_json.h"

#include <fmt/format.h>

#include "base/json.h"
#include "dispatch/record/exit_reason.h"

namespace sbx::dispatch {
using base::JsonQuote;

std::string_view ReasonName(DispatchReason reason) {
  switch (reason) {
    case DispatchReason::kExited:
      return "exited";
    case DispatchReason::kSignaled:
      return "signaled";
    case DispatchReason::kOom:
      return "oom";
    case DispatchReason::kTimeout:
      return "timeout";
    case DispatchReason::kDisk:
      return "disk";
    case DispatchReason::kInterrupted:
      return "interrupted";
    case DispatchReason::kRuntimeError:
      return "runtime-error";
    case DispatchReason::kDryRun:
      return "dry-run";
    case DispatchReason::kHarvestFailed:
      return "harvest-failed";
    case DispatchReason::kGitGuardIncomplete:
      return "git-guard-incomplete";
    case DispatchReason::kRunning:
      return "running";
    case DispatchReason::kCommandNotFound:
      return "command-not-found";
    case DispatchReason::kCommandNotExecutable:
      return "command-not-executable";
  }
  return "runtime-error";
}

std::string RenderLabelsJson(std::span<const DispatchLabel> labels) {
  std::string members;
  for (const DispatchLabel& label : labels) {
    members += fmt::format("{}{}: {}", members.empty() ? "" : ", ", JsonQuote(label.key),
                           JsonQuote(label.value));
  }
  return "{" + members + "}";
}

std::string RenderStatusJson(const DispatchResult& r) {
  std::string routes;
  for (const auto& route : r.routes) {
    if (!routes.empty()) routes += ", ";
    routes += fmt::format(
        R"({{"host": {}, "port": {}, "kind": {}, "sandbox_address": {}, "upstream": {}}})",
        JsonQuote(route.host), route.port, JsonQuote(route.kind), JsonQuote(route.sandbox_address),
        JsonQuote(route.upstream));
  }
  std::string signal = r.signal ? fmt::format("{}", *r.signal) : "null";
  std::string signal_name = r.signal ? JsonQuote(SignalName(*r.signal)) : "null";
  std::string stop_signal = r.stop_signal ? fmt::format("{}", *r.stop_signal) : "null";
  std::string error = r.error.empty() ? "null" : JsonQuote(r.error);
  std::string landlock_parts;
  for (const auto& part : r.landlock_parts) {
    landlock_parts += (landlock_parts.empty() ? "" : ", ") + JsonQuote(part);
  }
  std::string taint;
  for (const auto& line : r.workspace_taint) {
    if (!taint.empty()) taint += ", ";
    taint += JsonQuote(line);
  }
  std::string patch_error = r.patch_error.empty() ? "null" : JsonQuote(r.patch_error);
  return fmt::format(
      "{{\n"
      "  \"dispatch_id\": {},\n"
      "  \"workspace\": {},\n"
      "  \"out\": {},\n"
      "  \"backend\": {},\n"
      "  \"routes\": [{}],\n"
      "  \"exit_code\": {},\n"
      "  \"signal\": {},\n"
      "  \"signal_name\": {},\n"
      "  \"reason\": {},\n"
      "  \"stop_signal\": {},\n"
      "  \"error\": {},\n"
      "  \"network_note\": {},\n"
      "  \"limits\": {},\n"
      "  \"started_at\": {},\n"
      "  \"labels\": {},\n"
      "  \"landlock\": {{\"abi\": {}, \"enforced\": [{}]}},\n"
      "  \"base_commit\": {},\n"
      "  \"workspace_tainted\": {},\n"
      "  \"workspace_taint\": [{}],\n"
      "  \"patch_error\": {},\n"
      "  \"timings_ms\": {{\"setup\": {:.1f}, \"total\": {:.1f}}}\n"
      "}}\n",
      JsonQuote(r.id), JsonQuote(r.workspace), JsonQuote(r.out),
      JsonQuote(r.backend == DispatchBackend::kNative ? "native" : "bwrap"), routes,
      r.reason == DispatchReason::kRunning ? "null" : fmt::format("{}", r.exit_code), signal,
      signal_name, JsonQuote(ReasonName(r.reason)), stop_signal, error,
      r.network_note.empty() ? "null" : JsonQuote(r.network_note), r.limits_json,
      JsonQuote(r.started_at), RenderLabelsJson(r.labels), r.landlock_abi, landlock_parts,
      r.base_commit.empty() ? "null" : JsonQuote(r.base_commit),
      r.workspace_tainted ? "true" : "false", taint, patch_error, r.setup_ms, r.total_ms);
}

}  // namespace sbx::dispatch
