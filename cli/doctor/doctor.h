// `ateam-sandbox doctor`: checks what this host allows the calling user to do and says,
// for each thing the runtime needs, whether it works and how to fix it when it does not.
//
// RunDoctorChecks() probes the real host: it forks short-lived children that create user,
// mount and network namespaces, mount tmpfs/overlayfs inside them and install a seccomp
// filter, so nothing it tries touches the caller's own namespaces. Call it from a
// single-threaded process (it forks). The formatting functions are pure.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sbx::cli {

enum class CheckStatus {
  kOk,    // works for this caller
  kFail,  // needed by the native backend and does not work: the exit code becomes 1
  kInfo,  // informational, or needed only by an optional feature (e.g. --backend bwrap)
};

struct Check {
  std::string name;
  CheckStatus status = CheckStatus::kInfo;
  std::string detail;
  std::string fix;  // what the user can do; empty when there is nothing to do
};

// Runs every check on this host for this caller, in a fixed order.
std::vector<Check> RunDoctorChecks();

// "ok", "FAIL" or "info".
std::string_view StatusLabel(CheckStatus status);

// One line without the newline: `ok   name: detail`, `FAIL name: detail -- fix: how`,
// `info name: detail` (an info line with a fix also gets ` -- fix: how`).
std::string FormatCheckLine(const Check& check);

// "doctor: 12 ok, 1 failed, 4 info: the native backend will not work for this caller".
std::string FormatSummary(std::span<const Check> checks);

// Every check line, then the summary line, each ending in '\n'.
std::string FormatText(std::span<const Check> checks);

// One JSON object followed by '\n':
// {"ok":bool,"summary":"...","checks":[{"name":..,"status":"ok|fail|info","detail":..,"fix":..}]}
std::string FormatJson(std::span<const Check> checks);

// `text` as the contents of a JSON string literal (without the quotes). Bytes >= 0x80 pass
// through unchanged (the texts are UTF-8 or plain bytes from /proc).
std::string JsonEscape(std::string_view text);

// 0 when no check failed (everything the native backend needs works), 1 otherwise.
int DoctorExitCode(std::span<const Check> checks);

}  // namespace sbx::cli
