#include "cli/bwrap_walker.h"

#include <algorithm>
#include <utility>

#include "cli/bwrap_parser.h"

namespace sbx::cli::internal {
namespace {

constexpr std::string_view kOverlaySrcNotConsumed =
    "--overlay-src must be followed by another --overlay-src or one of --overlay, "
    "--tmp-overlay, or --ro-overlay";

bool IsModifier(std::string_view arg) { return arg == "--perms" || arg == "--size"; }

}  // namespace

BwrapWalker::BwrapWalker(std::vector<std::string> environment, bool setuid_mode)
    : setuid_mode_(setuid_mode) {
  spec_.env = std::move(environment);
}

Stop BwrapWalker::Fail(std::string_view text) {
  diagnostics_.push_back(FormatBwrapDiagnostic(BwrapSeverity::kError, level_prefix_, text));
  return Stop::kFatal;
}

Stop BwrapWalker::FailTooManyArguments() {
  return Fail("Exceeded maximum number of arguments " + std::to_string(kBwrapMaxArgs));
}

void BwrapWalker::WarnOnlyLast(std::string_view option_name) {
  std::string text = "Only the last ";
  text += option_name;
  text += " option will take effect";
  diagnostics_.push_back(FormatBwrapDiagnostic(BwrapSeverity::kWarning, level_prefix_, text));
}

Stop BwrapWalker::WalkTopLevel(std::span<const std::string> args) {
  // bwrap counts every word, the COMMAND and its arguments included, before parsing.
  total_args_ = args.size();
  if (total_args_ > kBwrapMaxArgs) return FailTooManyArguments();
  const WalkEnd end = Walk(args);
  if (end.stop != Stop::kEnd) return end.stop;
  // A trailing --overlay-src is only caught here: bwrap's loop has already run out.
  if (!pending_overlay_sources_.empty()) return Fail(kOverlaySrcNotConsumed);
  // --perms/--size still pending before the COMMAND are silently dropped, as in bwrap.
  if (end.command_index < args.size()) {
    spec_.command.assign(args.begin() + static_cast<std::ptrdiff_t>(end.command_index), args.end());
  }
  return Stop::kEnd;
}

BwrapWalker::WalkEnd BwrapWalker::Walk(std::span<const std::string> args) {
  size_t i = 0;
  while (i < args.size()) {
    const std::string& arg = args[i];
    // --help and --version act at their position: later words are never looked at.
    if (arg == "--help") return {Stop::kHelp, i};
    if (arg == "--version") return {Stop::kVersion, i};
    if (arg == "--") return {Stop::kEnd, i + 1};
    const Option* option = FindOption(arg);
    if (option == nullptr) {
      if (!arg.empty() && arg[0] == '-') return {Fail("Unknown option " + arg), i};
      return {Stop::kEnd, i};  // the COMMAND
    }
    const std::span<const std::string> rest = args.subspan(i + 1);
    Stop stop = RunOption(*option, rest);
    if (stop == Stop::kNone) stop = CheckModifiersConsumed(arg);
    if (stop != Stop::kNone) return {stop, i};
    i += 1 + std::min(option->arity, rest.size());
  }
  return {Stop::kEnd, i};
}

Stop BwrapWalker::RunOption(const Option& option, std::span<const std::string> rest) {
  // bwrap makes these two refusals before it looks for the option's arguments.
  if ((option.flags & kSetuidForbidden) != 0 && setuid_mode_) {
    return Fail("The " + std::string(option.name) + " option is not permitted in setuid mode");
  }
  if ((option.flags & kNotInArgsFile) != 0 && in_args_file_) {
    return Fail("--args not supported in arguments file");
  }
  if ((option.flags & kNoArityCheck) == 0 && rest.size() < option.arity) {
    return Fail(MissingArgumentsMessage(option));
  }
  return (this->*option.handler)(option, rest.first(std::min(option.arity, rest.size())));
}

// After every option, bwrap checks that a pending modifier was consumed by it.
Stop BwrapWalker::CheckModifiersConsumed(std::string_view arg) {
  if (!IsModifier(arg) && pending_perms_) {
    return Fail("--perms must be followed by an option that creates a file");
  }
  if (!IsModifier(arg) && pending_size_) return Fail("--size must be followed by --tmpfs");
  if (arg != "--overlay-src" && !pending_overlay_sources_.empty()) {
    return Fail(kOverlaySrcNotConsumed);
  }
  return Stop::kNone;
}

std::string BwrapWalker::MissingArgumentsMessage(const Option& option) {
  // bwrap shares one branch (and one message) between --bind-fd and --ro-bind-fd.
  std::string text(option.name == "--ro-bind-fd" ? "--bind-fd" : option.name);
  if ((option.flags & kSaysOneArgument) != 0) return text + " takes one argument";
  switch (option.arity) {
    case 1:
      return text + " takes an argument";
    case 2:
      return text + " takes two arguments";
    default:
      return text + " takes three arguments";
  }
}

}  // namespace sbx::cli::internal
