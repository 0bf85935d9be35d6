// Text and JSON rendering of doctor checks, and the exit-code rule.
#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "cli/doctor/doctor.h"

#include "base/json.h"

namespace sbx::cli {

namespace {

size_t CountStatus(std::span<const Check> checks, CheckStatus status) {
  return static_cast<size_t>(std::count_if(
      checks.begin(), checks.end(), [status](const Check& c) { return c.status == status; }));
}

std::string_view JsonStatus(CheckStatus status) {
  switch (status) {
    case CheckStatus::kOk:
      return "ok";
    case CheckStatus::kFail:
      return "fail";
    case CheckStatus::kInfo:
      return "info";
  }
  return "info";
}

}  // namespace

std::string_view StatusLabel(CheckStatus status) {
  switch (status) {
    case CheckStatus::kOk:
      return "ok";
    case CheckStatus::kFail:
      return "FAIL";
    case CheckStatus::kInfo:
      return "info";
  }
  return "info";
}

std::string FormatCheckLine(const Check& check) {
  std::string line =
      fmt::format("{:<4} {}: {}", StatusLabel(check.status), check.name, check.detail);
  if (!check.fix.empty()) line += fmt::format(" -- fix: {}", check.fix);
  return line;
}

std::string FormatSummary(std::span<const Check> checks) {
  const size_t failed = CountStatus(checks, CheckStatus::kFail);
  return fmt::format("doctor: {} ok, {} failed, {} info: {}", CountStatus(checks, CheckStatus::kOk),
                     failed, CountStatus(checks, CheckStatus::kInfo),
                     failed == 0 ? "the native backend works for this caller"
                                 : "the native backend will not work for this caller");
}

std::string FormatText(std::span<const Check> checks) {
  std::string out;
  for (const Check& check : checks) {
    out += FormatCheckLine(check);
    out += '\n';
  }
  out += FormatSummary(checks);
  out += '\n';
  return out;
}

std::string JsonEscape(std::string_view text) { return base::JsonEscape(text); }

std::string FormatJson(std::span<const Check> checks) {
  std::string out = fmt::format(R"({{"ok":{},"summary":"{}","checks":[)",
                                DoctorExitCode(checks) == 0 ? "true" : "false",
                                JsonEscape(FormatSummary(checks)));
  for (size_t i = 0; i < checks.size(); ++i) {
    const Check& c = checks[i];
    out += fmt::format(R"({}{{"name":"{}","status":"{}","detail":"{}","fix":"{}"}})",
                       i == 0 ? "" : ",", JsonEscape(c.name), JsonStatus(c.status),
                       JsonEscape(c.detail), JsonEscape(c.fix));
  }
  out += "]}\n";
  return out;
}

int DoctorExitCode(std::span<const Check> checks) {
  return CountStatus(checks, CheckStatus::kFail) == 0 ? 0 : 1;
}

}  // namespace sbx::cli
