// The fixture every integration test uses: checks that the command under test and the
// probe exist (a missing binary is a failure, not a skip), skips when this caller cannot
// create a sandbox at all, and offers probe shortcuts.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "integration/harness.h"

namespace sbx::integration {

// Prefix of the skip message for tests of behaviour that Debian's bwrap 0.8.0 lacks or
// implements differently from 0.11.1 (docs/bwrap-behaviour.md, the last section).
inline constexpr char kSkip080[] = "the binary under test is bubblewrap 0.8.0, which ";

class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string& command = BwrapPrefix().front();
    ASSERT_EQ(access(command.c_str(), X_OK), 0)
        << "command under test is not executable: " << command
        << " (set SBX_BWRAP to a bwrap-compatible command prefix)";
    ASSERT_EQ(access(ProbeHostPath().c_str(), X_OK), 0)
        << "probe is not executable: " << ProbeHostPath() << " (set SBX_PROBE)";
    if (auto reason = SandboxUnavailableReason()) GTEST_SKIP() << *reason;
  }

  // Runs `probe ARGS...` inside profile + options and parses its output; records a failure
  // (with the full output) unless the sandbox exits 0.
  static Report ProbeWith(const Args& options, const Args& probe_args, const RunOptions& run = {},
                          const Args& profile = TypicalProfile()) {
    RunResult r = RunProbe(options, probe_args, run, profile);
    EXPECT_EQ(r.exit_code, 0) << Describe(r);
    return ParseReport(r.out);
  }

  static Report ReportWith(const Args& options, const RunOptions& run = {}) {
    return ProbeWith(options, {"report"}, run);
  }
};

// TypicalProfile() without --dev. An unprivileged caller's --dev makes bwrap nest a second
// user namespace, which changes the id maps and which namespaces the sandbox's capabilities
// apply to; tests of those use this profile.
inline Args ProfileWithoutDev() {
  Args profile = BaseProfile();
  profile.insert(profile.end(), {"--proc", "/proc"});
  return profile;
}

// "ext4 ro,nosuid,nodev" -> {"ro", "nosuid", "nodev"}; empty if the mount is missing.
inline std::vector<std::string> MountFlags(const Report& report, const std::string& point) {
  auto it = report.find("mount." + point);
  if (it == report.end()) return {};
  std::vector<std::string> words = Words(it->second);
  std::vector<std::string> flags;
  if (words.size() < 2) return flags;
  size_t start = 0;
  for (size_t comma; (comma = words[1].find(',', start)) != std::string::npos;) {
    flags.push_back(words[1].substr(start, comma - start));
    start = comma + 1;
  }
  flags.push_back(words[1].substr(start));
  return flags;
}

inline std::string MountType(const Report& report, const std::string& point) {
  std::vector<std::string> words = Words(Get(report, "mount." + point));
  return words.empty() ? "" : words[0];
}

// A capability set as printed in /proc/self/status ("000001fffeffffff").
inline uint64_t CapMask(const std::string& hex) { return std::stoull(hex, nullptr, 16); }

}  // namespace sbx::integration
