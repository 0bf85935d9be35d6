#include "cli/bwrap_parser.h"

#include <utility>

#include "cli/bwrap_walker.h"

namespace sbx::cli {
namespace {

// bwrap's setuid mode: real uid differs from an effective uid of 0. This project refuses
// to run setuid, but the parser still gives bwrap's answers for it.
bool IsSetuidMode(const runtime::HostFacts& host) { return host.euid == 0 && host.uid != 0; }

BwrapOutcome OutcomeOf(internal::Stop stop) {
  switch (stop) {
    case internal::Stop::kHelp:
      return BwrapOutcome::kHelp;
    case internal::Stop::kVersion:
      return BwrapOutcome::kVersion;
    case internal::Stop::kNone:
    case internal::Stop::kEnd:
      return BwrapOutcome::kRun;
    case internal::Stop::kFatal:
      break;
  }
  return BwrapOutcome::kFatal;
}

}  // namespace

BwrapParse ParseBwrapArgs(std::span<const std::string> args, std::vector<std::string> environment,
                          const runtime::HostFacts& host) {
  BwrapParse result;
  if (args.empty()) {
    result.outcome = BwrapOutcome::kUsageError;
    return result;
  }
  internal::BwrapWalker walker(std::move(environment), IsSetuidMode(host));
  result.outcome = OutcomeOf(walker.WalkTopLevel(args));
  if (result.outcome == BwrapOutcome::kRun) {
    // bwrap's cross-option checks run right after the walk, before anything is set up.
    base::Status valid = runtime::ValidateSpec(walker.spec(), host);
    if (!valid && valid.error().kind() == base::Error::Kind::kUsage) {
      result.outcome = BwrapOutcome::kUsageError;
    } else if (!valid) {
      result.outcome = OutcomeOf(walker.Fail(valid.error().Render()));
    }
  }
  result.spec = std::move(walker.spec());
  result.level_prefix = walker.level_prefix();
  result.diagnostics = std::move(walker.diagnostics());
  return result;
}

bool IsBwrapVersionOnly(std::span<const std::string> args) {
  return args.size() == 1 && args[0] == "--version";
}

std::string FormatBwrapDiagnostic(BwrapSeverity severity, bool level_prefix,
                                  std::string_view text) {
  std::string line;
  if (level_prefix) {
    line += '<';
    line += std::to_string(static_cast<int>(severity));
    line += '>';
  }
  line += "bwrap: ";
  line += text;
  return line;
}

}  // namespace sbx::cli
