#include "cli/supervise/supervise_command.h"

#include <cstdio>

#include <fmt/format.h>

#include "cli/supervise/routes.h"
#include "cli/supervise/supervisor.h"

namespace sbx::cli {

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

}  // namespace sbx::cli
