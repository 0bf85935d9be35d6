#include "cli/doctor/doctor_command.h"

#include <cstdio>
#include <span>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "cli/doctor/doctor.h"

namespace sbx::cli {

namespace {

constexpr std::string_view kDoctorUsage =
    "usage: ateam-sandbox doctor [--json]\n"
    "\n"
    "Checks what this host allows this user and prints, per check, `ok`, `FAIL` (with the\n"
    "fix) or `info`. Exit status 0 when the native backend works for this caller, else 1.\n"
    "  --json   print one JSON object instead\n";

}  // namespace

int RunDoctorCommand(std::span<const std::string> args) {
  bool json = false;
  for (const std::string& arg : args) {
    if (arg == "--json") {
      json = true;
    } else if (arg == "--help" || arg == "-h") {
      fmt::print("{}", kDoctorUsage);
      return 0;
    } else {
      fmt::print(stderr, "ateam-sandbox doctor: unknown option '{}'\n{}", arg, kDoctorUsage);
      return 2;
    }
  }
  // Flush before the probes fork, so no buffered output is written twice.
  std::fflush(stdout);
  const auto checks = RunDoctorChecks();
  fmt::print("{}", json ? FormatJson(checks) : FormatText(checks));
  return DoctorExitCode(checks);
}

}  // namespace sbx::cli
