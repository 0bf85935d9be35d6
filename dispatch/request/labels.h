// Labels: KEY=VALUE pairs a caller attaches to a dispatch (`run --label`), kept in its
// status document and record, and matched by `ls --label` and `gc --label`. Pure functions,
// no system calls.
//
// A key is 1 to 63 characters of letters, digits, '.', '_' and '-', starting with a letter
// or digit; a value is 0 to 255 characters of letters, digits and ". _ - : / @ + =". Both
// sets leave nothing to quote or escape in a terminal, a JSON string or a shell word.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"

namespace sbx::dispatch {

inline constexpr size_t kLabelKeyMax = 63;
inline constexpr size_t kLabelValueMax = 255;

struct DispatchLabel {
  std::string key;
  std::string value;
  bool operator==(const DispatchLabel&) const = default;
};

// One KEY=VALUE; a one-line error naming `flag` otherwise.
base::Result<DispatchLabel> ParseLabel(std::string_view text, std::string_view flag = "--label");

// Each of `texts`, in order; a key given twice is an error too.
base::Result<std::vector<DispatchLabel>> ParseLabels(std::span<const std::string> texts,
                                                     std::string_view flag = "--label");

// True when every label of `wanted` is among `labels` (no wanted label: always).
bool LabelsMatch(std::span<const DispatchLabel> labels, std::span<const DispatchLabel> wanted);

// "KEY=VALUE,KEY=VALUE" as `ls` shows them ("" for none).
std::string FormatLabels(std::span<const DispatchLabel> labels);

}  // namespace sbx::dispatch
