// The bwrap 0.11.1 command line: argv -> runtime::SandboxSpec, with bwrap's option
// semantics, post-parse validation, messages and outcomes (docs/bwrap-behaviour.md).
//
// ParseBwrapArgs is pure in the sense that it never prints and never exits: it returns
// what bwrap would do (run, print help/version, print usage, die) and the exact stderr
// lines bwrap would have printed up to that point. Its only side effects are the ones
// bwrap has while parsing: it reads and closes the fds named by `--args FD` and
// `--add-seccomp-fd FD` (the parser owns those fds from the moment it sees them). Every
// other fd in the spec is only a number; the caller still owns it.
//
// Called by the `bwrap` face of the CLI in the launching process, single-threaded (libcap
// name lookup and fd reads only).
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/host_facts.h"
#include "runtime/spec.h"

namespace sbx::cli {

// What `--version` prints (followed by a newline) on stdout.
inline constexpr std::string_view kBwrapVersionText = "bubblewrap 0.11.1";
// bwrap's cap on the number of arguments, command line plus `--args` data.
inline constexpr size_t kBwrapMaxArgs = 9000;

enum class BwrapOutcome {
  kRun,         // `spec` is complete and passed ValidateSpec: run it.
  kHelp,        // print BwrapUsage(argv0) on stdout, exit 0.
  kVersion,     // print kBwrapVersionText and a newline on stdout, exit 0.
  kUsageError,  // print BwrapUsage(argv0) on stderr, exit 1 (no args, or no COMMAND).
  kFatal,       // the last `diagnostics` line is bwrap's error; exit 1.
};

// Syslog severities bwrap shows with --level-prefix.
enum class BwrapSeverity { kError = 3, kWarning = 4 };

struct BwrapParse {
  BwrapOutcome outcome = BwrapOutcome::kUsageError;
  // Complete only for kRun; for other outcomes it holds whatever was parsed so far.
  runtime::SandboxSpec spec;
  // Final --level-prefix state: later runtime diagnostics are formatted with it
  // (FormatBwrapDiagnostic).
  bool level_prefix = false;
  // The stderr lines bwrap prints during parsing and validation, in order, fully
  // formatted ("bwrap: ...", "<4>bwrap: ..."), without trailing newlines. Warnings come
  // first; for kFatal the error is last. Print them before any usage/help text.
  std::vector<std::string> diagnostics;

  // bwrap's exit status for every outcome except kRun (0 for help/version, else 1).
  [[nodiscard]] int ExitStatus() const {
    return outcome == BwrapOutcome::kHelp || outcome == BwrapOutcome::kVersion ? 0 : 1;
  }
};

// Parses `args` (argv without argv[0]) left to right as bwrap 0.11.1 does, then runs
// runtime::ValidateSpec(spec, host) itself, so kRun means "valid". `environment` is the
// caller's environ ("NAME=VALUE"); --setenv/--unsetenv/--clearenv edit it in order and the
// result becomes spec.env. `host` supplies the real uid/gid (--uid/--gid need a user
// namespace only as root), whether user namespaces work (--unshare-user-try) and setuid
// mode (uid != euid == 0), in which bwrap refuses some options.
BwrapParse ParseBwrapArgs(std::span<const std::string> args, std::vector<std::string> environment,
                          const runtime::HostFacts& host);

// True for exactly `--version`: bwrap answers it before touching anything else, so the
// caller may print kBwrapVersionText without probing HostFacts first.
bool IsBwrapVersionOnly(std::span<const std::string> args);

// One bwrap diagnostic line: "[<N>]bwrap: text" (no newline).
std::string FormatBwrapDiagnostic(BwrapSeverity severity, bool level_prefix, std::string_view text);

// bwrap 0.11.1's usage text, beginning "usage: <argv0> [OPTIONS...] [--] COMMAND
// [ARGS...]", ending with a newline.
std::string BwrapUsage(std::string_view argv0);

}  // namespace sbx::cli
