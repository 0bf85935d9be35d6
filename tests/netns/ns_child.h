// Test helper: run a piece of a test in a forked child, where it may unshare namespaces
// without touching the test process, and bring the outcome back over a CLOEXEC pipe.
// gtest assertions do not work inside the child; a child body returns "" for success,
// SkipReason(...) to skip, or the failure text.
#pragma once

#include <functional>
#include <string>

namespace sbx::netns::testing {

struct ChildOutcome {
  enum class Kind { kPassed, kFailed, kSkipped };
  Kind kind = Kind::kFailed;
  std::string message;  // failure text, skip reason, or the body's note on success

  [[nodiscard]] bool passed() const { return kind == Kind::kPassed; }
  [[nodiscard]] bool skipped() const { return kind == Kind::kSkipped; }
};

// The body's return value: "" passes; SkipReason(x) skips; Note(x) passes carrying x back
// (timings); anything else fails with that text.
std::string SkipReason(const std::string& reason);
std::string Note(const std::string& note);

// Forks, runs `body` in the child, _exits, and reaps it. A child killed by a signal or
// exiting without a report is a failure.
ChildOutcome RunInChild(const std::function<std::string()>& body);

// Child side: unshare(CLONE_NEWUSER | CLONE_NEWNET), as root too. When `write_id_map`, maps
// uid/gid 0 inside to the caller's euid/egid (after writing "deny" to setgroups), as an
// unprivileged bwrap does. Returns "" or SkipReason when user namespaces are unavailable.
std::string EnterUserAndNetNs(bool write_id_map);

// Child side: unshare(CLONE_NEWUSER) alone: a nested user namespace with no power over
// the current network namespace. "" or SkipReason.
std::string EnterNestedUserNs();

}  // namespace sbx::netns::testing
