#include "dispatch/request/human_units.h"

#include <cmath>
#include <optional>

#include <fmt/format.h>

namespace sbx::dispatch {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// DIGITS or DIGITS.DIGITS at text[i], `i` moved past it: the whole part and the fraction's
// digits apart, so that sizes stay exact. nullopt when no number starts at `i`.
struct Number {
  double value = 0;
  uint64_t whole = 0;
  bool whole_overflowed = false;
  std::string_view fraction;  // the digits after the point, "" for none
};

std::optional<Number> ScanNumber(std::string_view text, size_t& i) {
  Number number;
  size_t start = i;
  while (i < text.size() && IsDigit(text[i])) {
    auto digit = static_cast<uint64_t>(text[i] - '0');
    if (number.whole > (UINT64_MAX - digit) / 10) number.whole_overflowed = true;
    number.whole = number.whole * 10 + digit;
    number.value = number.value * 10 + static_cast<double>(digit);
    ++i;
  }
  if (i == start) return std::nullopt;
  if (i < text.size() && text[i] == '.') {
    size_t point = ++i;
    double scale = 0.1;
    while (i < text.size() && IsDigit(text[i])) {
      number.value += scale * (text[i] - '0');
      scale /= 10;
      ++i;
    }
    if (i == point) return std::nullopt;  // "5." is a typo, not five
    number.fraction = text.substr(point, i - point);
  }
  return number;
}

std::string DurationRangeText(const DurationRange& range) {
  return fmt::format("{} {}", range.zero_allowed ? "from 0 to" : "above 0 and at most",
                     FormatDurationExact(range.max_seconds));
}

std::string SizeRangeText(uint64_t min, uint64_t max) {
  if (max == UINT64_MAX)
    return min == 0 ? "" : fmt::format(" of at least {}", FormatSizeExact(min));
  return fmt::format(" from {} to {}", FormatSizeExact(min), FormatSizeExact(max));
}

}  // namespace

base::Result<double> ParseDuration(std::string_view text, std::string_view flag,
                                   DurationRange range) {
  auto bad = [&] {
    return base::Error::Message(fmt::format(
        "{} takes a duration {} (e.g. 90s, 30m, 2h, 7d{}), not '{}'", flag,
        DurationRangeText(range), range.bare_seconds ? "; a bare number is seconds" : "", text));
  };
  double total = 0;
  size_t i = 0;
  for (int groups = 0; i < text.size() || groups == 0; ++groups) {
    auto number = ScanNumber(text, i);
    if (!number) return bad();
    if (i == text.size()) {
      // A bare number is seconds, but only alone: "1h30" may mean 30 minutes.
      if (groups != 0 || !range.bare_seconds) return bad();
      total = number->value;
      break;
    }
    double unit = 0;
    switch (text[i++]) {
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
        unit = 7 * 86400;
        break;
      default:
        return bad();
    }
    total += number->value * unit;
  }
  // A long run of digits only grows the double towards infinity, which is out of range too.
  if (!std::isfinite(total) || total > range.max_seconds) return bad();
  if (total == 0 && !range.zero_allowed) return bad();
  return total;
}

base::Result<int64_t> ParseDurationSeconds(std::string_view text, std::string_view flag) {
  DurationRange unit_required;
  unit_required.bare_seconds = false;
  auto seconds = ParseDuration(text, flag, unit_required);
  if (!seconds) return seconds.error();
  return static_cast<int64_t>(*seconds);
}

base::Result<uint64_t> ParseSize(std::string_view text, std::string_view flag, uint64_t min,
                                 uint64_t max) {
  auto bad = [&] {
    return base::Error::Message(
        fmt::format("{} takes a size{} (e.g. 4096, 64k, 512m, 2g), not '{}'", flag,
                    SizeRangeText(min, max), text));
  };
  size_t i = 0;
  auto number = ScanNumber(text, i);
  if (!number || number->whole_overflowed) return bad();
  std::string unit(text.substr(i));
  for (char& c : unit) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  unsigned shift = 0;
  if (!unit.empty()) {
    static constexpr std::string_view kUnits = "kmgt";
    size_t at = kUnits.find(unit[0]);
    std::string_view rest = std::string_view(unit).substr(1);
    if (at == std::string_view::npos || !(rest.empty() || rest == "b" || rest == "ib")) {
      return bad();
    }
    shift = 10 * static_cast<unsigned>(at + 1);
  } else if (!number->fraction.empty()) {
    return bad();  // a fraction of a byte
  }
  if (shift != 0 && number->whole > (UINT64_MAX >> shift)) return bad();
  uint64_t bytes = number->whole << shift;
  // The fraction of the unit, rounded down to a byte: fraction / 10^digits times 2^shift,
  // one bit at a time as in long division, so nothing overflows (at most 18 digits count:
  // far below a byte of a terabyte).
  uint64_t numerator = 0;
  uint64_t denominator = 1;
  for (size_t d = 0; d < number->fraction.size() && d < 18; ++d) {
    numerator = numerator * 10 + static_cast<uint64_t>(number->fraction[d] - '0');
    denominator *= 10;
  }
  uint64_t extra = 0;
  for (unsigned bit = 0; bit < shift; ++bit) {
    numerator *= 2;  // below 2 * 10^18: fits
    extra *= 2;
    if (numerator >= denominator) {
      numerator -= denominator;
      extra += 1;
    }
  }
  if (bytes > UINT64_MAX - extra) return bad();
  bytes += extra;
  if (bytes < min || bytes > max) return bad();
  return bytes;
}

base::Result<uint64_t> ParseCount(std::string_view text, std::string_view flag, uint64_t min,
                                  uint64_t max) {
  size_t i = 0;
  auto number = ScanNumber(text, i);
  if (!number || i != text.size() || !number->fraction.empty() || number->whole_overflowed ||
      number->whole < min || number->whole > max) {
    return base::Error::Message(
        fmt::format("{} takes a whole number from {} to {}, not '{}'", flag, min, max, text));
  }
  return number->whole;
}

base::Result<double> ParsePositiveNumber(std::string_view text, std::string_view flag, double max) {
  size_t i = 0;
  auto number = ScanNumber(text, i);
  if (!number || i != text.size() || !(number->value > 0) || number->value > max) {
    return base::Error::Message(fmt::format(
        "{} takes a number above 0, at most {} (e.g. 2 or 0.5), not '{}'", flag, max, text));
  }
  return number->value;
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

std::string FormatSizeExact(uint64_t bytes) {
  constexpr const char* kUnits = "TGMK";
  for (int i = 0; i < 4; ++i) {
    unsigned shift = 10 * static_cast<unsigned>(4 - i);
    uint64_t unit = uint64_t{1} << shift;
    if (bytes != 0 && bytes % unit == 0) return fmt::format("{}{}", bytes / unit, kUnits[i]);
  }
  return fmt::format("{}", bytes);
}

std::string FormatDurationExact(double seconds) {
  if (seconds == std::floor(seconds) && seconds > 0 && seconds < 1e15) {
    auto whole = static_cast<int64_t>(seconds);
    if (whole % 86400 == 0) return fmt::format("{}d", whole / 86400);
    if (whole % 3600 == 0) return fmt::format("{}h", whole / 3600);
    if (whole % 60 == 0) return fmt::format("{}m", whole / 60);
  }
  return fmt::format("{}s", seconds);
}

}  // namespace sbx::dispatch
