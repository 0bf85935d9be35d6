// One message for an unknown option or command, wherever a user types one (`run`, `ls`,
// `gc`, `harvest`, `doctor`, `supervise`, the subcommand itself): the nearest known name
// when it is close enough to be a typo, else where the help is.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace sbx::base {

// The name in `known` closest to `unknown` by edit distance, or "" when none is close
// enough to be a likely typo (a prefix of at least four characters counts as one edit; a
// short option such as "-x" has no nearest name).
std::string NearestName(std::string_view unknown, std::span<const std::string> known);

// "unknown option --rep: did you mean --repo?" or "unknown option --x (see HELP)";
// `what` is "option" or "command", `help` the command line that lists the valid names.
std::string UnknownNameMessage(std::string_view what, std::string_view name,
                               std::span<const std::string> known, std::string_view help);

}  // namespace sbx::base
