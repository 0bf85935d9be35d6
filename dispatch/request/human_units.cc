#include "dispatch/request/human_units.h"

#include <fmt/format.h>

namespace sbx::dispatch {

base::Result<int64_t> ParseDurationSeconds(std::string_view text, std::string_view flag) {
  constexpr int64_t kMaxSeconds = int64_t{100} * 365 * 24 * 3600;
  auto bad = [&] {
    return base::Error::Message(
        fmt::format("{} {}: not a duration; give a number and a unit (s, m, h, d, w), e.g. 30m, "
                    "12h, 7d",
                    flag, text));
  };
  if (text.empty()) return bad();
  int64_t total = 0;
  size_t i = 0;
  while (i < text.size()) {
    int64_t number = 0;
    size_t digits = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      number = number * 10 + (text[i] - '0');
      if (number > kMaxSeconds) {
        return base::Error::Message(fmt::format("{} {}: longer than 100 years", flag, text));
      }
      ++i;
      ++digits;
    }
    if (digits == 0 || i == text.size()) return bad();
    int64_t unit = 0;
    switch (text[i]) {
      case 's':
        unit = 1;
        break;
      case 'm':
        unit = 60;
        break;
      case 'h':
        unit = 3600;
        break;
      case 'd':
        unit = 86400;
        break;
      case 'w':
        unit = int64_t{7} * 86400;
        break;
      default:
        return bad();
    }
    ++i;
    // number <= kMaxSeconds and unit <= a week: the product fits in 64 bits.
    total += number * unit;
    if (total > kMaxSeconds) {
      return base::Error::Message(fmt::format("{} {}: longer than 100 years", flag, text));
    }
  }
  return total;
}

std::string FormatAge(int64_t seconds) {
  if (seconds < 0) seconds = 0;  // a clock set back, or an mtime in the future
  if (seconds < 60) return fmt::format("{}s", seconds);
  if (seconds < 3600) return fmt::format("{}m", seconds / 60);
  if (seconds < int64_t{2} * 86400) return fmt::format("{}h", seconds / 3600);
  return fmt::format("{}d", seconds / 86400);
}

std::string FormatSize(uint64_t bytes) {
  if (bytes == 0) return "0";
  if (bytes < 1024) return fmt::format("{}B", bytes);
  constexpr const char* kUnits = "KMGTPE";
  double value = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < 6) {
    value /= 1024;
    ++unit;
  }
  // du -h rounds up, so a size never looks smaller than it is.
  if (value < 10) {
    double tenths = static_cast<double>(static_cast<uint64_t>(value * 10 + 0.999999)) / 10;
    if (tenths < 10) return fmt::format("{:.1f}{}", tenths, kUnits[unit]);
    value = tenths;
  }
  auto whole = static_cast<uint64_t>(value + 0.999999);
  if (whole >= 1024 && unit + 1 < 6) return fmt::format("1.0{}", kUnits[unit + 1]);
  return fmt::format("{}{}", whole, kUnits[unit]);
}

}  // namespace sbx::dispatch
