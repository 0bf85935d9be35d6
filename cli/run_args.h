// The command line of `ateam-sandbox run`, split before CLI11 sees it: options first, then
// the command, which starts after "--" or, as with bwrap, docker and systemd-run, at the
// first argument that is not an option. Unknown options are caught here, with the nearest
// known one suggested, so that a typo never turns into part of the command or into CLI11's
// message about unexpected arguments.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace sbx::cli {

struct RunOptionName {
  std::string name;  // "--repo"
  bool takes_value;  // false for a flag such as "--dry-run"
};

struct RunArgs {
  std::vector<std::string> options;  // for CLI11, in order
  std::vector<std::string> command;
};

// Fails with one line: an unknown option (naming the nearest known one when it is close),
// or an option that wants a value at the end.
base::Result<RunArgs> SplitRunArgs(std::span<const std::string> args,
                                   std::span<const RunOptionName> known);

// The known name closest to `unknown` by edit distance, or "" when none is close enough to
// be a likely typo.
std::string NearestOptionName(std::string_view unknown, std::span<const RunOptionName> known);

// "--timeout" values: a positive number of seconds, at most a day by a wide margin (one
// year); one-line error otherwise.
base::Result<double> ParseTimeoutSeconds(std::string_view text,
                                         std::string_view flag = "--timeout");

}  // namespace sbx::cli
