#include "supervise/supervise_command.h"

#include <cstdio>

#include <fmt/format.h>

#include "supervise/routes.h"
#include "supervise/supervisor.h"

namespace sbx::supervise {

int RunSuperviseCommand(std::span<const std::string> args) {
  auto config = ParseSuperviseArgs(args);
  if (!config) {
    fmt::print(stderr, "ateam-sandbox supervise: {}\n", config.error().Render());
    return kSuperviseSetupFailedExit;
  }
  if (config->help) {
    fmt::print("{}", SuperviseUsage());
    return 0;
  }
  // Whatever the agent writes next must not be preceded by our buffered output.
  std::fflush(stdout);
  auto code = RunSupervisor(*config);
  if (!code) {
    fmt::print(stderr, "ateam-sandbox supervise: {}\n", code.error().Render());
    return kSuperviseSetupFailedExit;
  }
  return *code;
}

}  // namespace sbx::supervise
