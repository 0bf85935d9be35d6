#include "cli/bwrap_command.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "cli/bwrap_parser.h"
#include "runtime/bwrap_backend.h"
#include "runtime/bwrap_render.h"
#include "runtime/host_facts.h"
#include "runtime/launcher.h"
#include "runtime/plan_compiler.h"
#include "runtime/plan_printer.h"

extern char** environ;  // NOLINT: POSIX

namespace sbx::cli {
namespace {

std::vector<std::string> CurrentEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  return env;
}

// An error text may hold several diagnostics, one per line (--pidns: the sandbox child's
// message, then the monitor's), each printed as its own bwrap line.
void PrintError(bool level_prefix, std::string_view text) {
  for (;;) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    fmt::print(stderr, "{}\n", FormatBwrapDiagnostic(BwrapSeverity::kError, level_prefix, line));
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
}

int RunPlan(const runtime::Plan& plan, const BwrapFaceOptions& options, bool level_prefix) {
  if (options.dry_run) {
    fmt::print("{}", runtime::PrintPlan(plan));
    fmt::print("bwrap: {}\n", runtime::RenderBwrapCommandLine(plan, options.bwrap_path));
    return 0;
  }
  std::fflush(stdout);
  if (options.backend == BwrapFaceOptions::Backend::kBwrap) {
    auto st = runtime::ExecBwrap(plan, options.bwrap_path);  // returns only on failure
    PrintError(level_prefix, st.error().Render());
    return 1;
  }
  auto code = runtime::Launch(plan);
  if (!code) {
    PrintError(level_prefix, code.error().Render());
    return 1;
  }
  return *code;
}

// --backend bwrap answers --version with the delegate's version: callers (and tests)
// use it to learn which bwrap semantics they get.
[[noreturn]] void ExecDelegateVersion(const BwrapFaceOptions& options) {
  std::fflush(stdout);
  const char* argv[] = {options.bwrap_path.c_str(), "--version", nullptr};
  ::execv(options.bwrap_path.c_str(), const_cast<char* const*>(argv));
  fmt::print(stderr, "bwrap: bwrap backend: can't execute {}: {}\n", options.bwrap_path,
             std::strerror(errno));  // NOLINT(concurrency-mt-unsafe)
  std::exit(1);
}

}  // namespace

int ParseBwrapFaceOptions(std::span<const std::string> args, BwrapFaceOptions* options) {
  if (const char* env = std::getenv("ATEAM_SANDBOX_BWRAP"); env != nullptr && *env != '\0') {
    options->bwrap_path = env;
  }
  size_t i = 0;
  while (i < args.size()) {
    const std::string& arg = args[i];
    if (arg == "--dry-run") {
      options->dry_run = true;
      i += 1;
    } else if ((arg == "--backend" || arg == "--bwrap-path") && i + 1 < args.size()) {
      const std::string& value = args[i + 1];
      if (arg == "--bwrap-path") {
        options->bwrap_path = value;
      } else if (value == "native" || value == "bwrap") {
        options->backend = value == "native" ? BwrapFaceOptions::Backend::kNative
                                             : BwrapFaceOptions::Backend::kBwrap;
      } else {
        fmt::print(stderr, "ateam-sandbox bwrap: --backend takes native or bwrap, not '{}'\n",
                   value);
        return -1;
      }
      i += 2;
    } else if (arg == "--backend" || arg == "--bwrap-path") {
      fmt::print(stderr, "ateam-sandbox bwrap: {} needs a value\n", arg);
      return -1;
    } else {
      break;
    }
  }
  return static_cast<int>(i);
}

int RunBwrapCommand(std::string_view argv0, std::span<const std::string> args,
                    const BwrapFaceOptions& options) {
  bool delegate = options.backend == BwrapFaceOptions::Backend::kBwrap;
  if (IsBwrapVersionOnly(args)) {
    if (delegate) ExecDelegateVersion(options);
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
    case BwrapOutcome::kHelp:
      fmt::print("{}", BwrapUsage(argv0));
      return 0;
    case BwrapOutcome::kVersion:
      if (delegate) ExecDelegateVersion(options);
      fmt::print("{}\n", kBwrapVersionText);
      return 0;
    case BwrapOutcome::kUsageError:
      fmt::print(stderr, "{}", BwrapUsage(argv0));
      return 1;
    case BwrapOutcome::kFatal:
      return 1;
    case BwrapOutcome::kRun:
      break;
  }
  auto plan = runtime::CompilePlan(parse.spec, *host);
  if (!plan) {
    PrintError(parse.level_prefix, plan.error().Render());
    return 1;
  }
  return RunPlan(*plan, options, parse.level_prefix);
}

}  // namespace sbx::cli
