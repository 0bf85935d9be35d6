// Command lines before CLI11 sees them. Every subcommand's options are checked here first,
// so that an unknown one gets the same line everywhere, naming the nearest known option
// (base/unknown_option.h), and a typo never turns into part of `run`'s command or into
// CLI11's message about unexpected arguments. `run`'s command line is also split: options
// first, then the command, which starts after "--" or, as with bwrap, docker and
// systemd-run, at the first argument that is not an option.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace sbx::cli {

struct OptionName {
  std::string name;  // "--repo", "-o"
  bool takes_value;  // false for a flag such as "--dry-run"
};

// How far the options of `args` go: to "--" (not counted) or, when `command_follows`, to the
// first argument that is not an option; otherwise such an argument is a positional and the
// options go on after it. Fails with one line at an unknown option ("unknown option --rep:
// did you mean --repo?", or "(see HELP)" without a near one) or an option that wants a
// value at the end. The value of an option that takes one is never taken for an option.
base::Result<size_t> CheckOptionNames(std::span<const std::string> args,
                                      std::span<const OptionName> known, std::string_view help,
                                      bool command_follows);

struct RunArgs {
  std::vector<std::string> options;  // for CLI11, in order
  std::vector<std::string> command;
};

// `run`'s options and command, with CheckOptionNames's errors.
base::Result<RunArgs> SplitRunArgs(std::span<const std::string> args,
                                   std::span<const OptionName> known);

}  // namespace sbx::cli
