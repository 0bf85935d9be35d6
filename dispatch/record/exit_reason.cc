#include "dispatch/record/exit_reason.h"

#include <csignal>
#include <cstring>

#include "base/exit_status.h"

namespace sbx::dispatch {

std::optional<int> SignalOfExitCode(int exit_code) {
  const int sig = exit_code - base::kSignalExitBase;
  if (sig < 1 || sig > SIGRTMAX) return std::nullopt;
  return sig;
}

std::string SignalName(int sig) {
  if (sig >= SIGRTMIN && sig <= SIGRTMAX) {
    return sig == SIGRTMIN ? "SIGRTMIN" : "SIGRTMIN+" + std::to_string(sig - SIGRTMIN);
  }
  // glibc's abbreviation ("SEGV"), without the "SIG".
  const char* abbrev = ::sigabbrev_np(sig);
  if (abbrev == nullptr) return "signal " + std::to_string(sig);
  return std::string("SIG") + abbrev;
}

}  // namespace sbx::dispatch
