// `ateam-sandbox ls`, `gc` and `rm`: the caller's dispatch directories, listed and removed
// (dispatch/record/list.h).
#pragma once

#include <span>
#include <string>

namespace sbx::cli {

// ls [--workspace-root DIR] [--json] [--label KEY=VALUE]...: one line per dispatch (id,
// age, size, exit, reason, labels).
int RunLsCommand(std::span<const std::string> args);

// gc [--older-than DURATION] [--dry-run] [--workspace-root DIR] [--label KEY=VALUE]...:
// removes finished ones.
int RunGcCommand(std::span<const std::string> args);

// rm [--workspace-root DIR] ID...: removes those dispatches, never one whose run is going.
int RunRmCommand(std::span<const std::string> args);

}  // namespace sbx::cli
