// A command that cannot start, as `run` reports it: 127 when it is missing and 126 when it
// cannot be executed (as shells give them), the reason and a one-line `error` in the status
// document, and a hint naming the --ro that would show a path the host has. An agent's own
// 127 stays `exited`. And the default Landlock network rule, which the runtime cannot see an
// agent run into, named once when the agent exits non-zero under it.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "integration/run/run_support.h"

namespace sbx::integration::run {
namespace {

class RunStartErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"sh"});
    if (!missing.empty()) GTEST_SKIP() << missing;
    HandToSandboxUser(work_.path());
  }

  RunResult Run(const Args& command, const Args& extra = {}) {
    Args options = {"--workspace", work_.path(), "--no-default-allow", "--status-json", Status()};
    options.insert(options.end(), extra.begin(), extra.end());
    return RunAteam(options, command);
  }
  [[nodiscard]] std::string Status() const { return status_dir_.Sub("status.json"); }
  [[nodiscard]] std::string StatusText() const {
    return ReadFile(Status()).value_or("<no status document>");
  }

  TempDir work_;
  TempDir status_dir_;
};

size_t Lines(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

TEST_F(RunStartErrorsTest, MissingCommandExits127WithItsReason) {
  RunResult res = Run({"sbx-no-such-command", "x"});
  EXPECT_EQ(res.exit_code, 127) << Describe(res);
  EXPECT_EQ(Lines(res.err), 1U) << Describe(res);
  EXPECT_TRUE(
      res.err.starts_with("ateam-sandbox run: cannot run sbx-no-such-command: command "
                          "not found in the sandbox's PATH"))
      << Describe(res);
  EXPECT_EQ(res.err.find("supervise"), std::string::npos) << Describe(res);
  const std::string status = StatusText();
  EXPECT_NE(status.find("\"exit_code\": 127,"), std::string::npos) << status;
  EXPECT_NE(status.find("\"reason\": \"command-not-found\","), std::string::npos) << status;
  EXPECT_NE(status.find("\"error\": \"cannot run sbx-no-such-command: "), std::string::npos)
      << status;
}

TEST_F(RunStartErrorsTest, CommandThatIsNotExecutableExits126) {
  WriteFile(work_.Sub("tool"), "#!/bin/sh\necho ran\n");
  ASSERT_EQ(::chmod(work_.Sub("tool").c_str(), 0644), 0);
  RunResult res = Run({"./tool"});
  EXPECT_EQ(res.exit_code, 126) << Describe(res);
  EXPECT_EQ(Lines(res.err), 1U) << Describe(res);
  EXPECT_TRUE(res.err.starts_with("ateam-sandbox run: cannot run ./tool: Permission denied"))
      << Describe(res);
  EXPECT_NE(StatusText().find("\"reason\": \"command-not-executable\","), std::string::npos)
      << StatusText();
}

// A path the host has outside what the sandbox shows: the hint names the --ro that shows it,
// and with that --ro the same command runs.
TEST_F(RunStartErrorsTest, HostPathOutsideTheSandboxIsNamedWithItsRo) {
  RootTempDir host;
  const std::string bin = host.Sub("bin");
  ASSERT_EQ(::mkdir(bin.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(host.path().c_str(), 0755), 0);
  const std::string tool = bin + "/tool";
  WriteFile(tool, "#!/bin/sh\necho tool-ran\n");
  ASSERT_EQ(::chmod(tool.c_str(), 0755), 0);
  RunResult res = Run({tool});
  EXPECT_EQ(res.exit_code, 127) << Describe(res);
  EXPECT_EQ(res.err, "ateam-sandbox run: cannot run " + tool +
                         ": no such file in the sandbox; the host has it, but its directory is "
                         "not in the sandbox: add --ro " +
                         bin + "\n")
      << Describe(res);
  RunResult shown = Run({tool}, {"--ro", bin});
  EXPECT_EQ(shown.exit_code, 0) << Describe(shown);
  EXPECT_EQ(shown.out, "tool-ran\n") << Describe(shown);

  // By name: the host finds it in its PATH, the sandbox does not.
  RunOptions path;
  path.extra_env = {"PATH=" + bin + ":/usr/bin:/bin"};
  RunResult by_name =
      RunAteam({"--workspace", work_.path(), "--no-default-allow", "--status-json", Status()},
               {"tool"}, path);
  EXPECT_EQ(by_name.exit_code, 127) << Describe(by_name);
  EXPECT_NE(by_name.err.find("; the host has " + tool + ": add --ro " + bin +
                             " and run it by that path\n"),
            std::string::npos)
      << Describe(by_name);
}

// The agent's own 127 (a shell that did not find a command) is the agent's exit, not a
// command `run` could not start.
TEST_F(RunStartErrorsTest, AgentsOwn127StaysExited) {
  RunResult res = Run({"sh", "-c", "exit 127"});
  EXPECT_EQ(res.exit_code, 127) << Describe(res);
  const std::string status = StatusText();
  EXPECT_NE(status.find("\"reason\": \"exited\","), std::string::npos) << status;
  EXPECT_NE(status.find("\"error\": null,"), std::string::npos) << status;
}

// A connect to a local server inside the sandbox (not a route) is refused by the default
// Landlock policy with EACCES; `run` cannot see that, so it names the rule once when the
// agent exits non-zero under it, and not when the rule is lifted or the agent succeeds.
TEST_F(RunStartErrorsTest, LandlockNetworkRuleIsNamedOnceOnFailure) {
  std::string missing = MissingPrerequisite({"python3"});
  if (!missing.empty()) GTEST_SKIP() << missing;
  const std::string connect =
      "import socket, sys\n"
      "try:\n"
      "    socket.create_connection(('127.0.0.1', 8000), timeout=5)\n"
      "except OSError as e:\n"
      "    print('connect: errno=%d' % e.errno)\n"
      "    sys.exit(3)\n";
  RunResult res = Run({"python3", "-c", connect});
  const std::string status = StatusText();
  if (status.find("\"net\"") == std::string::npos) {
    GTEST_SKIP() << "this kernel's Landlock has no network rules (ABI < 4): " << status;
  }
  EXPECT_EQ(res.exit_code, 3) << Describe(res);
  EXPECT_EQ(res.out, "connect: errno=13\n") << Describe(res);  // EACCES
  EXPECT_EQ(Lines(res.err), 1U) << Describe(res);
  EXPECT_TRUE(
      res.err.starts_with("ateam-sandbox run: note: the agent's TCP connects go only "
                          "to its --allow routes"))
      << Describe(res);
  EXPECT_NE(res.err.find("--landlock-allow net"), std::string::npos) << Describe(res);
  EXPECT_NE(status.find("\"network_note\": \"the agent's TCP connects"), std::string::npos)
      << status;

  // Lifted: the connect is refused by the empty network instead, and nothing is said.
  RunResult lifted = Run({"python3", "-c", connect}, {"--landlock-allow", "net"});
  EXPECT_EQ(lifted.exit_code, 3) << Describe(lifted);
  EXPECT_EQ(lifted.out, "connect: errno=111\n") << Describe(lifted);  // ECONNREFUSED
  EXPECT_EQ(lifted.err, "") << Describe(lifted);
  EXPECT_NE(StatusText().find("\"network_note\": null,"), std::string::npos) << StatusText();

  RunResult ok = Run({"true"});
  EXPECT_EQ(ok.exit_code, 0) << Describe(ok);
  EXPECT_EQ(ok.err, "") << Describe(ok);
}

}  // namespace
}  // namespace sbx::integration::run
