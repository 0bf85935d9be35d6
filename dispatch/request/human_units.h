// Durations and sizes as people type and read them, for `ateam-sandbox ls` and `gc`:
// "7d", "12h", "30m" in; "3d", "1.2M" out. Pure functions, no system calls.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/error.h"

namespace sbx::dispatch {

// One or more NUMBER UNIT groups, units s, m, h, d, w ("90s", "7d", "1d12h"); the total in
// seconds, at most 100 years. A bare number, an unknown unit or anything else is a one-line
// error naming `flag`.
base::Result<int64_t> ParseDurationSeconds(std::string_view text,
                                           std::string_view flag = "--older-than");

// The coarse age `ls` shows: "45s", "12m", "5h" (below two days), "3d".
std::string FormatAge(int64_t seconds);

// Bytes as du -h shows them (powers of 1024): "0", "512B", "4.0K", "1.5M", "118M", "3.4G".
std::string FormatSize(uint64_t bytes);

}  // namespace sbx::dispatch
