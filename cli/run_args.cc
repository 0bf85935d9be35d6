#include "cli/run_args.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

namespace sbx::cli {
namespace {

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

const RunOptionName* Find(std::string_view name, std::span<const RunOptionName> known) {
  auto it = std::find_if(known.begin(), known.end(),
                         [&](const RunOptionName& option) { return option.name == name; });
  return it == known.end() ? nullptr : &*it;
}

}  // namespace

std::string NearestOptionName(std::string_view unknown, std::span<const RunOptionName> known) {
  std::string best;
  size_t best_distance = 0;
  for (const RunOptionName& option : known) {
    size_t distance = EditDistance(unknown, option.name);
    // A prefix ("--rep" for "--repo") is the commonest typo; otherwise allow about one edit
    // per four characters, so that unrelated names are never offered.
    if (option.name.starts_with(unknown) && unknown.size() >= 4) distance = 1;
    if (best.empty() || distance < best_distance) {
      best = option.name;
      best_distance = distance;
    }
  }
  return best_distance <= std::max<size_t>(2, unknown.size() / 4) ? best : "";
}

base::Result<RunArgs> SplitRunArgs(std::span<const std::string> args,
                                   std::span<const RunOptionName> known) {
  RunArgs split;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      split.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      return split;
    }
    if (!arg.starts_with("-") || arg == "-") {
      split.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
      return split;
    }
    split.options.push_back(arg);
    if (!arg.starts_with("--")) continue;  // -h and the like: CLI11 answers them
    std::string_view name = std::string_view(arg).substr(0, arg.find('='));
    const RunOptionName* option = Find(name, known);
    if (option == nullptr) {
      std::string nearest = NearestOptionName(name, known);
      return base::Error::Message(
          nearest.empty() ? fmt::format("unknown option {} (see ateam-sandbox run --help)", name)
                          : fmt::format("unknown option {}: did you mean {}?", name, nearest));
    }
    if (!option->takes_value || arg.find('=') != std::string::npos) continue;
    if (i + 1 == args.size()) {
      return base::Error::Message(fmt::format("{} needs a value", name));
    }
    split.options.push_back(args[++i]);
  }
  return split;
}

base::Result<double> ParseTimeoutSeconds(std::string_view text, std::string_view flag) {
  std::string copy(text);
  char* end = nullptr;
  errno = 0;
  double seconds = std::strtod(copy.c_str(), &end);
  constexpr double kYear = 365.0 * 24 * 3600;
  if (copy.empty() || end != copy.c_str() + copy.size() || errno != 0 || !std::isfinite(seconds) ||
      seconds <= 0 || seconds > kYear) {
    return base::Error::Message(
        fmt::format("{}: expected a positive number of seconds (e.g. {}), got '{}'", flag,
                    flag == "--timeout" ? "1800" : "10", text));
  }
  return seconds;
}

}  // namespace sbx::cli
