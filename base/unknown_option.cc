#include "base/unknown_option.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

namespace sbx::base {
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

}  // namespace

std::string NearestName(std::string_view unknown, std::span<const std::string> known) {
  // One letter ("-x") is as near to every other letter: no guess is better than a wrong one.
  if (unknown.size() <= 2) return "";
  std::string best;
  size_t best_distance = 0;
  for (const std::string& name : known) {
    // A long option is never offered for a short one, nor the other way round.
    if (name.starts_with("--") != unknown.starts_with("--")) continue;
    size_t distance = EditDistance(unknown, name);
    // A prefix ("--rep" for "--repo") is the commonest typo; otherwise allow about one edit
    // per four characters, so that unrelated names are never offered.
    if (name.starts_with(unknown) && unknown.size() >= 4) distance = 1;
    if (best.empty() || distance < best_distance) {
      best = name;
      best_distance = distance;
    }
  }
  return best_distance <= std::max<size_t>(2, unknown.size() / 4) ? best : "";
}

std::string UnknownNameMessage(std::string_view what, std::string_view name,
                               std::span<const std::string> known, std::string_view help) {
  std::string nearest = NearestName(name, known);
  if (nearest.empty()) return fmt::format("unknown {} {} (see {})", what, name, help);
  return fmt::format("unknown {} {}: did you mean {}?", what, name, nearest);
}

}  // namespace sbx::base
