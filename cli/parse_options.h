// One way for the subcommands to hand their options to CLI11: an unknown option gets the
// same line in every subcommand (cli/run_args.h), help is printed with exit 0, and a parse
// error goes to the subcommand's own one-line failure, exit kUsageErrorExit.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli/run_args.h"
#include "cli/value_names.h"

namespace sbx::cli {

// The exit code of every usage error (an unknown option or command, a bad value), in every
// subcommand but the bwrap face: the same as `run`'s own failures, so that it never passes
// for an exit code of the agent's (docs/usage.md, "Exit codes").
inline constexpr int kUsageErrorExit = 125;

// Every option name of `app`, long and short, for CheckOptionNames.
inline std::vector<OptionName> KnownOptions(const CLI::App& app) {
  std::vector<OptionName> known;
  for (const CLI::Option* option : app.get_options()) {
    bool takes_value = option->get_items_expected_min() > 0;
    for (const std::string& name : option->get_lnames())
      known.push_back({"--" + name, takes_value});
    for (const std::string& name : option->get_snames()) known.push_back({"-" + name, takes_value});
  }
  return known;
}

// CLI11's words for an option given twice ("--timeout: At Most 1 required but received 2")
// in the project's; any other message as it is.
inline std::string RenderParseError(std::string message) {
  constexpr std::string_view kTwice = ": At Most 1 required but received ";
  if (size_t at = message.find(kTwice); at != std::string::npos) {
    message = message.substr(0, at) + ": given more than once (it takes one value)";
  }
  return message;
}

// nullopt when the options parsed; otherwise the exit code the subcommand ends with.
inline std::optional<int> ParseOptions(CLI::App& app, std::span<const std::string> args,
                                       const std::function<int(const std::string&)>& fail) {
  for (CLI::Option* option : app.get_options()) {
    if (std::string_view value = ValueNameFor(option->get_name()); !value.empty()) {
      option->type_name(std::string(value));
    }
  }
  auto checked = CheckOptionNames(args, KnownOptions(app), app.get_name() + " --help",
                                  /*command_follows=*/false);
  if (!checked) return fail(checked.error().Render());
  // CLI11 takes the arguments last first.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    fmt::print("{}", app.help());
    return 0;
  } catch (const CLI::ParseError& e) {
    return fail(RenderParseError(e.what()));
  }
  return std::nullopt;
}

}  // namespace sbx::cli
