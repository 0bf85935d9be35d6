// What an option's value is, as --help shows it (CLI11 alone would say TEXT): one table for
// every subcommand, so that an option of the same name reads the same everywhere.
#pragma once

#include <string_view>

namespace sbx::cli {

// "SIZE" for "--memory", "DURATION" for "--timeout", "DIR" for the positional "workspace";
// "" for a name the table does not know (its --help then says TEXT, which a test catches).
std::string_view ValueNameFor(std::string_view option);

}  // namespace sbx::cli
