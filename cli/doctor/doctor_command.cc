#include "cli/doctor/doctor_command.h"

#include <cstdio>
#include <span>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli/doctor/doctor.h"
#include "cli/parse_options.h"

namespace sbx::cli {

int RunDoctorCommand(std::span<const std::string> args) {
  CLI::App app{
      "Check what this host allows this user and print, per check, `ok`, `FAIL` (with "
      "the fix) or `info`. Exit status 0 when the native backend works for this "
      "caller, else 1.",
      "ateam-sandbox doctor"};
  bool json = false;
  app.add_flag("--json", json, "print one JSON object instead");
  auto fail = [](const std::string& message) {
    fmt::print(stderr, "ateam-sandbox doctor: {}\n", message);
    return kUsageErrorExit;
  };
  if (auto done = ParseOptions(app, args, fail)) return *done;
  // Flush before the probes fork, so no buffered output is written twice.
  std::fflush(stdout);
  const auto checks = RunDoctorChecks();
  fmt::print("{}", json ? FormatJson(checks) : FormatText(checks));
  return DoctorExitCode(checks);
}

}  // namespace sbx::cli
