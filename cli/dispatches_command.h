// `ateam-sandbox ls` and `ateam-sandbox gc`: the caller's dispatch directories, listed
// and removed (dispatch/record/list.h).
#pragma once

#include <span>
#include <string>

namespace sbx::cli {

// ls [--workspace-root DIR] [--json]: one line per dispatch (id, age, size, exit, reason).
int RunLsCommand(std::span<const std::string> args);

// gc [--older-than DURATION] [--dry-run] [--workspace-root DIR]: removes finished ones.
int RunGcCommand(std::span<const std::string> args);

}  // namespace sbx::cli
