#include "cli/run_args.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/unknown_option.h"

namespace sbx::cli {
namespace {

const OptionName* Find(std::string_view name, std::span<const OptionName> known) {
  auto it = std::find_if(known.begin(), known.end(),
                         [&](const OptionName& option) { return option.name == name; });
  return it == known.end() ? nullptr : &*it;
}

base::Error Unknown(std::string_view name, std::span<const OptionName> known,
                    std::string_view help) {
  std::vector<std::string> names;
  for (const OptionName& option : known) names.push_back(option.name);
  return base::Error::Message(base::UnknownNameMessage("option", name, names, help));
}

}  // namespace

base::Result<size_t> CheckOptionNames(std::span<const std::string> args,
                                      std::span<const OptionName> known, std::string_view help,
                                      bool command_follows) {
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") break;
    if (!arg.starts_with("-") || arg == "-") {
      if (command_follows) break;
      continue;
    }
    // "--name=value", "--name", or a short "-o" whose value may follow attached ("-ofile").
    bool long_option = arg.starts_with("--");
    std::string_view name = long_option ? std::string_view(arg).substr(0, arg.find('='))
                                        : std::string_view(arg).substr(0, 2);
    const OptionName* option = Find(name, known);
    if (option == nullptr) return Unknown(name, known, help);
    bool value_attached = arg.size() > name.size();
    if (!option->takes_value || value_attached) continue;
    if (i + 1 == args.size()) {
      return base::Error::Message(fmt::format("{} needs a value", name));
    }
    ++i;
  }
  return i;
}

base::Result<RunArgs> SplitRunArgs(std::span<const std::string> args,
                                   std::span<const OptionName> known) {
  auto end = CheckOptionNames(args, known, "ateam-sandbox run --help", /*command_follows=*/true);
  if (!end) return end.error();
  RunArgs split;
  split.options.assign(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(*end));
  size_t command = *end < args.size() && args[*end] == "--" ? *end + 1 : *end;
  split.command.assign(args.begin() + static_cast<std::ptrdiff_t>(command), args.end());
  return split;
}

}  // namespace sbx::cli
