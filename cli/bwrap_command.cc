#include "cli/bwrap_command.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

#include <fmt/format.h>

#include "cli/bwrap_parser.h"
#include "runtime/host_facts.h"
#include "runtime/launcher.h"
#include "runtime/plan_compiler.h"

extern char** environ;  // NOLINT: POSIX

namespace sbx::cli {
namespace {

std::vector<std::string> CurrentEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  return env;
}

void PrintError(bool level_prefix, std::string_view text) {
  fmt::print(stderr, "{}\n", FormatBwrapDiagnostic(BwrapSeverity::kError, level_prefix, text));
}

}  // namespace

int RunBwrapCommand(std::string_view argv0, std::span<const std::string> args) {
  if (IsBwrapVersionOnly(args)) {
    fmt::print("{}\n", kBwrapVersionText);
    return 0;
  }
  // Inherited by everything the sandbox runs; set before anything else, as bwrap does.
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    PrintError(false, "prctl(PR_SET_NO_NEW_PRIVS) failed");
    return 1;
  }
  auto host = runtime::ProbeHostFacts();
  if (!host) {
    PrintError(false, host.error().Render());
    return 1;
  }
  BwrapParse parse = ParseBwrapArgs(args, CurrentEnvironment(), *host);
  for (const auto& line : parse.diagnostics) fmt::print(stderr, "{}\n", line);
  switch (parse.outcome) {
    case BwrapOutcome::kHelp: fmt::print("{}", BwrapUsage(argv0)); return 0;
    case BwrapOutcome::kVersion: fmt::print("{}\n", kBwrapVersionText); return 0;
    case BwrapOutcome::kUsageError: fmt::print(stderr, "{}", BwrapUsage(argv0)); return 1;
    case BwrapOutcome::kFatal: return 1;
    case BwrapOutcome::kRun: break;
  }
  auto plan = runtime::CompilePlan(parse.spec, *host);
  if (!plan) {
    PrintError(parse.level_prefix, plan.error().Render());
    return 1;
  }
  std::fflush(stdout);
  auto code = runtime::Launch(*plan);
  if (!code) {
    PrintError(parse.level_prefix, code.error().Render());
    return 1;
  }
  return *code;
}

}  // namespace sbx::cli
