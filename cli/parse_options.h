// One way for the subcommands to hand their options to CLI11: help is printed with exit 0,
// a parse error goes to the subcommand's own one-line failure.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

namespace sbx::cli {

// nullopt when the options parsed; otherwise the exit code the subcommand ends with.
inline std::optional<int> ParseOptions(CLI::App& app, std::span<const std::string> args,
                                       const std::function<int(const std::string&)>& fail) {
  // CLI11 takes the arguments last first.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    fmt::print("{}", app.help());
    return 0;
  } catch (const CLI::ParseError& e) {
    return fail(e.what());
  }
  return std::nullopt;
}

}  // namespace sbx::cli
