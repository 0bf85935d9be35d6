// How an exit code of the sandbox's first process names the signal that ended the agent.
#pragma once

#include <optional>
#include <string>

namespace sbx::dispatch {

// The signal N behind an exit code 128 + N (1 <= N <= SIGRTMAX), as the supervisor and
// bwrap report an agent a signal ended; nullopt for any other code.
std::optional<int> SignalOfExitCode(int exit_code);

// "SIGSEGV", "SIGKILL", "SIGRTMIN+3"; "signal N" for a number with no name.
std::string SignalName(int sig);

}  // namespace sbx::dispatch
