// The `doctor` subcommand: runs RunDoctorChecks() and prints the result.
#pragma once

#include <span>
#include <string>

namespace sbx::cli {

// `args` are the words after `doctor`: [--json] [--help]. Prints one line per check and a
// summary (or one JSON object with --json) to stdout. Returns the process exit code: 0 when
// everything the native backend needs works for this caller, 1 when something does not,
// 2 on a usage error. Forks probe children: call it from a single-threaded process.
int RunDoctorCommand(std::span<const std::string> args);

}  // namespace sbx::cli
