#include "dispatch/request/labels.h"

#include <algorithm>

#include <fmt/format.h>

namespace sbx::dispatch {
namespace {

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool IsKeyChar(char c) { return IsAlnum(c) || c == '.' || c == '_' || c == '-'; }

bool IsValueChar(char c) {
  return IsKeyChar(c) || c == ':' || c == '/' || c == '@' || c == '+' || c == '=';
}

// The text as it may be shown in an error: printable ASCII only, cut short.
std::string Shown(std::string_view text) {
  std::string shown;
  for (char c : text.substr(0, 80)) shown += c >= 0x20 && c < 0x7f ? c : '?';
  if (text.size() > 80) shown += "...";
  return shown;
}

}  // namespace

base::Result<DispatchLabel> ParseLabel(std::string_view text, std::string_view flag) {
  const size_t equals = text.find('=');
  if (equals == std::string_view::npos) {
    return base::Error::Message(
        fmt::format("{} '{}': expected KEY=VALUE (e.g. team=infra)", flag, Shown(text)));
  }
  std::string_view key = text.substr(0, equals);
  std::string_view value = text.substr(equals + 1);
  if (key.empty() || key.size() > kLabelKeyMax || !IsAlnum(key.front()) ||
      !std::all_of(key.begin(), key.end(), IsKeyChar)) {
    return base::Error::Message(fmt::format(
        "{} '{}': KEY is 1 to {} letters, digits, '.', '_' or '-', starting with a letter or "
        "digit",
        flag, Shown(text), kLabelKeyMax));
  }
  if (value.size() > kLabelValueMax || !std::all_of(value.begin(), value.end(), IsValueChar)) {
    return base::Error::Message(
        fmt::format("{} '{}': VALUE is at most {} letters, digits or any of . _ - : / @ + =", flag,
                    Shown(text), kLabelValueMax));
  }
  return DispatchLabel{std::string(key), std::string(value)};
}

base::Result<std::vector<DispatchLabel>> ParseLabels(std::span<const std::string> texts,
                                                     std::string_view flag) {
  std::vector<DispatchLabel> labels;
  for (const std::string& text : texts) {
    auto label = ParseLabel(text, flag);
    if (!label) return label.error();
    bool seen = std::any_of(labels.begin(), labels.end(),
                            [&](const DispatchLabel& l) { return l.key == label->key; });
    if (seen) {
      return base::Error::Message(fmt::format("{} {}: this key is given twice", flag, label->key));
    }
    labels.push_back(std::move(*label));
  }
  return labels;
}

bool LabelsMatch(std::span<const DispatchLabel> labels, std::span<const DispatchLabel> wanted) {
  return std::all_of(wanted.begin(), wanted.end(), [&](const DispatchLabel& w) {
    return std::find(labels.begin(), labels.end(), w) != labels.end();
  });
}

std::string FormatLabels(std::span<const DispatchLabel> labels) {
  std::string text;
  for (const DispatchLabel& label : labels) {
    text += fmt::format("{}{}={}", text.empty() ? "" : ",", label.key, label.value);
  }
  return text;
}

}  // namespace sbx::dispatch
