// ateam-sandbox: the sandbox runtime for coding agents. The first argument names the
// subcommand. The drop-in bubblewrap is the separate `bwrap` executable (cli/bwrap_main.cc);
// invoked under the name `bwrap` this one is bwrap too, so that a link named bwrap never
// answers a bwrap command line with "unknown command" (docs/bwrap-compat.md).
#include <sys/auxv.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "base/unknown_option.h"
#include "cli/bwrap_command.h"
#include "cli/dispatches_command.h"
#include "cli/doctor/doctor_command.h"
#include "cli/harvest_command.h"
#include "cli/name_service.h"
#include "cli/parse_options.h"
#include "cli/run_command.h"
#include "cli/version.h"
#include "dispatch/sys/caller_stderr.h"
#include "supervise/supervise_command.h"

namespace {

constexpr std::string_view kUsage =
    "usage: ateam-sandbox COMMAND [ARGS...]\n"
    "\n"
    "Commands:\n"
    "  bwrap [--backend native|bwrap] [--bwrap-path PATH] [--dry-run] ARGS...\n"
    "                  run a sandbox from a bubblewrap command line (also: the `bwrap` "
    "executable);\n"
    "                  --backend bwrap runs the same plan with the real bwrap\n"
    "  run [OPTIONS] -- COMMAND [ARGS...]\n"
    "                  run COMMAND in a per-dispatch agent sandbox (see run --help)\n"
    "  ls [--json] [--label KEY=VALUE]...\n"
    "                  list this caller's dispatch directories: id, age, size, exit, reason\n"
    "  gc [--older-than DURATION] [--dry-run] [--label KEY=VALUE]...\n"
    "                  remove finished dispatch directories (DURATION: 30m, 12h, 7d)\n"
    "  rm ID...        remove these finished dispatch directories\n"
    "                  (ls, gc and rm take --workspace-root DIR when run was given one)\n"
    "  harvest WORKSPACE [--base REV] -o FILE\n"
    "                  write the agent's work in a finished workspace as one patch\n"
    "  doctor [--json] check what this host allows, and how to fix what it does not\n"
    "  --version       print the version\n"
    "  --help          print this help\n";

std::string_view BaseName(std::string_view path) {
  auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string_view argv0 = argc > 0 ? argv[0] : "ateam-sandbox";
  // Nothing here may run with more privilege than its caller: a setuid install would
  // hand the caller's choice of mounts to root (bwrap's setuid CVE history). AT_SECURE is
  // the kernel's own answer: set for setuid/setgid and for file capabilities alike.
  if (::getuid() != ::geteuid() || ::getgid() != ::getegid() || ::getauxval(AT_SECURE) != 0) {
    fmt::print(stderr, "{}: refusing to run setuid or setgid\n",
               BaseName(argv0) == "bwrap" ? "bwrap" : "ateam-sandbox");
    return 1;
  }
  if (BaseName(argv0) == "bwrap") return sbx::cli::RunBwrapCommand(argv0, args);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    fmt::print(args.empty() ? stderr : stdout, "{}", kUsage);
    return args.empty() ? sbx::cli::kUsageErrorExit : 0;
  }
  if (args[0] == "--version") {
    fmt::print("ateam-sandbox {}\n", sbx::cli::kVersion);
    return 0;
  }
  if (args[0] == "bwrap") {
    auto rest = std::span<const std::string>(args).subspan(1);
    sbx::cli::BwrapFaceOptions options;
    int consumed = sbx::cli::ParseBwrapFaceOptions(rest, &options);
    if (consumed < 0) return sbx::cli::kUsageErrorExit;
    return sbx::cli::RunBwrapCommand("bwrap", rest.subspan(static_cast<size_t>(consumed)), options);
  }
  if (args[0] == "run")
    return sbx::cli::RunRunCommand(std::span<const std::string>(args).subspan(1));
  if (args[0] == "supervise") {
    return sbx::supervise::RunSuperviseCommand(std::span<const std::string>(args).subspan(1));
  }
  if (args[0] == "harvest") {
    return sbx::cli::RunHarvestCommand(std::span<const std::string>(args).subspan(1));
  }
  if (args[0] == "ls") {
    return sbx::cli::RunLsCommand(std::span<const std::string>(args).subspan(1));
  }
  if (args[0] == "gc") {
    return sbx::cli::RunGcCommand(std::span<const std::string>(args).subspan(1));
  }
  if (args[0] == "rm") {
    return sbx::cli::RunRmCommand(std::span<const std::string>(args).subspan(1));
  }
  if (args[0] == "doctor") {
    return sbx::cli::RunDoctorCommand(std::span<const std::string>(args).subspan(1));
  }
  const std::vector<std::string> commands = {"bwrap",   "run",    "ls",        "gc",    "rm",
                                             "harvest", "doctor", "--version", "--help"};
  fmt::print(stderr, "ateam-sandbox: {}\n",
             sbx::base::UnknownNameMessage(args[0].starts_with("-") ? "option" : "command",
                                           sbx::dispatch::EscapeForTerminal(args[0]), commands,
                                           "ateam-sandbox --help"));
  return sbx::cli::kUsageErrorExit;
}

}  // namespace

// The commands report their own errors; an exception reaching here is an allocation
// failure or a bug, and still ends with one line and the face's failure code.
int main(int argc, char** argv) {
  sbx::cli::RestrictNameServiceToBuiltins();
  const bool bwrap_face = argc > 0 && BaseName(argv[0]) == "bwrap";
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    // stdio, not fmt: nothing in a handler may throw again.
    std::fprintf(stderr, "%s: internal error: %s\n", bwrap_face ? "bwrap" : "ateam-sandbox",
                 e.what());
  } catch (...) {
    std::fprintf(stderr, "%s: internal error\n", bwrap_face ? "bwrap" : "ateam-sandbox");
  }
  return bwrap_face ? 1 : 125;
}
