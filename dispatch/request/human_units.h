// Durations, sizes and counts as people type and read them, one parser each for every flag
// that takes one (`run --timeout 2m`, `--memory 4g`, `--pids 512`, `gc --older-than 7d`),
// and ages and sizes as `ls` shows them. Pure functions, no system calls.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/error.h"

namespace sbx::dispatch {

// What a flag accepts of a duration, in seconds.
struct DurationRange {
  bool zero_allowed = true;
  double max_seconds = 100.0 * 365 * 24 * 3600;  // a century
  // A bare number is seconds (`--timeout 1800`); where a unit is required instead, "7" is
  // refused rather than taken for seven seconds (`gc --older-than 7` likely meant days).
  bool bare_seconds = true;
};

// One or more NUMBER UNIT groups, units s, m, h, d, w ("90s", "7d", "1d12h", "1.5h"), or,
// where `range` allows it, a bare NUMBER of seconds ("1800", "0.5"); the total in seconds.
// Anything else, and a total outside `range`, is a one-line error that names `flag` and the
// accepted range.
base::Result<double> ParseDuration(std::string_view text, std::string_view flag,
                                   DurationRange range = {});

// ParseDuration in whole seconds (a fraction is dropped), zero allowed, at most a century,
// a unit required (for `gc --older-than`, which removes what it selects).
base::Result<int64_t> ParseDurationSeconds(std::string_view text,
                                           std::string_view flag = "--older-than");

// A number of bytes: "4096", "64k", "512M", "1.5g", "2GiB", "1t" (binary multiples, the unit
// letter in either case, an optional "b" or "ib" after it), from `min` to `max` inclusive.
// Errors name `flag` and the range in units ("at least 32M").
base::Result<uint64_t> ParseSize(std::string_view text, std::string_view flag, uint64_t min = 0,
                                 uint64_t max = UINT64_MAX);

// A whole number from `min` to `max` inclusive ("--pids takes a whole number from 16 to
// 4194304, not '0'").
base::Result<uint64_t> ParseCount(std::string_view text, std::string_view flag, uint64_t min,
                                  uint64_t max);

// A number above 0 and at most `max`, a fraction allowed ("2", "0.5").
base::Result<double> ParsePositiveNumber(std::string_view text, std::string_view flag, double max);

// The coarse age `ls` shows: "45s", "12m", "5h" (below two days), "3d".
std::string FormatAge(int64_t seconds);

// Bytes as du -h shows them (powers of 1024): "0", "512B", "4.0K", "1.5M", "118M", "3.4G".
std::string FormatSize(uint64_t bytes);

// Bytes as a size flag takes them, exact: "32M", "2G", "1536K", "100" (for range messages).
std::string FormatSizeExact(uint64_t bytes);

// Seconds as a duration flag takes them, exact when whole: "90s", "30m", "365d", "0.5s".
std::string FormatDurationExact(double seconds);

}  // namespace sbx::dispatch
