// `run` whose caller's stderr is closed or stalled: the exit code, the deadline and the
// status document are what they would be with a reader.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "integration/run/run_support.h"

namespace sbx::integration::run {
namespace {

using std::chrono::milliseconds;

std::string ShellQuote(const std::string& word) {
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string ShellLine(const Args& argv) {
  std::string line;
  for (const auto& word : argv) line += (line.empty() ? "" : " ") + ShellQuote(word);
  return line;
}

class RunCallerStderrTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"sh", "sleep", "head"});
    if (!missing.empty()) GTEST_SKIP() << missing;
    HandToSandboxUser(work_.path());
  }
  // `run` with a --timeout of 2 s around an agent that never ends by itself.
  std::string RunLine(const std::string& agent) const {
    return ShellLine(RunArgv({"--workspace", work_.path(), "--out", out_.path(), "--status-json",
                              state_.Sub("status.json"), "--timeout", "2", "--no-tty"},
                             {"/bin/sh", "-c", agent}));
  }
  std::string Status() const { return ReadFile(state_.Sub("status.json")).value_or(""); }
  std::string Rc() const { return ReadFile(state_.Sub("rc")).value_or("<none>"); }

  TempDir work_, out_, state_;
};

TEST_F(RunCallerStderrTest, AClosedStderrChangesNothing) {
  RunResult res = RunCommand({"/bin/sh", "-c",
                              RunLine("echo to-stderr >&2; sleep 60") + " 2>&-; echo $? > " +
                                  ShellQuote(state_.Sub("rc"))},
                             WithTimeout(milliseconds(60000)));
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  EXPECT_EQ(Rc(), "124\n");
  EXPECT_NE(Status().find("\"reason\": \"timeout\""), std::string::npos) << Status();
}

// The agent fills the pipe nobody reads; the timeout ends it and `run`'s closing line finds
// no room: it is dropped, and `run` ends with the timeout's code and document.
TEST_F(RunCallerStderrTest, AStalledStderrChangesNothing) {
  RunResult res =
      RunCommand({"/bin/sh", "-c",
                  "{ " + RunLine("head -c 1000000 /dev/zero >&2; sleep 60") + "; echo $? > " +
                      ShellQuote(state_.Sub("rc")) + "; } 2>&1 | sleep 12"},
                 WithTimeout(milliseconds(90000)));
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  EXPECT_EQ(Rc(), "124\n");
  EXPECT_NE(Status().find("\"reason\": \"timeout\""), std::string::npos) << Status();
}

}  // namespace
}  // namespace sbx::integration::run
