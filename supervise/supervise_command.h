// `ateam-sandbox supervise ...`: the entry point cli/main.cc dispatches to.
//
// Who calls it: main(), in the process the runtime starts as the sandbox's pid 1 (see
// supervisor.h for what that process must be given). Prints its own one-line errors, to
// stderr, prefixed with "ateam-sandbox supervise: ".
#pragma once

#include <span>
#include <string>

namespace sbx::supervise {

// Exit code of a bad command line or of any setup failure before the agent runs.
inline constexpr int kSuperviseSetupFailedExit = 125;

// `args` are the arguments after "supervise". Returns the process exit code: the agent's
// exit status (128 + signal when it was killed), 125 for bad input or a setup failure,
// 127 from the agent's child when the command cannot be executed, 0 for --help.
int RunSuperviseCommand(std::span<const std::string> args);

}  // namespace sbx::supervise
