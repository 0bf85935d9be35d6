// What every subcommand says to a user who typed something wrong, and what --help shows:
// an unknown option is one line naming the nearest valid one, and every usage error exits
// 125; durations take units; -q leaves notices out; --help names each value (SIZE,
// DURATION, PATH), never TEXT. Most cases parse only, and dispatch nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "integration/run/run_support.h"

namespace sbx::integration::run {
namespace {

size_t Lines(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

RunResult Ateam(const Args& args) {
  Args argv = {AteamPath()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv);
}

struct UsageCase {
  Args args;
  std::string line;  // all of stderr
};

class RunMessagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"sh"});
    if (!missing.empty()) GTEST_SKIP() << missing;
  }
};

TEST_F(RunMessagesTest, UnknownOptionOfEverySubcommandIsOneLineNamingTheNearestAndExit125) {
  const UsageCase cases[] = {
      {{"run", "--workspce", "/tmp", "--", "true"},
       "ateam-sandbox run: unknown option --workspce: did you mean --workspace?\n"},
      {{"run", "-x", "true"},
       "ateam-sandbox run: unknown option -x (see ateam-sandbox run --help)\n"},
      {{"harvest", "/tmp", "--ouptut", "p.patch"},
       "ateam-sandbox harvest: unknown option --ouptut: did you mean --output?\n"},
      {{"ls", "--jsno"}, "ateam-sandbox ls: unknown option --jsno: did you mean --json?\n"},
      {{"gc", "--older", "7d"},
       "ateam-sandbox gc: unknown option --older: did you mean --older-than?\n"},
      {{"gc", "--frobnicate"},
       "ateam-sandbox gc: unknown option --frobnicate (see ateam-sandbox gc --help)\n"},
      {{"doctor", "--jsn"}, "ateam-sandbox doctor: unknown option --jsn: did you mean --json?\n"},
      {{"supervise", "--rout", "127.77.0.2:443=/s", "--", "true"},
       "ateam-sandbox supervise: unknown option --rout: did you mean --route?\n"},
      {{"rnu"}, "ateam-sandbox: unknown command rnu: did you mean run?\n"},
      {{"--verison"}, "ateam-sandbox: unknown option --verison: did you mean --version?\n"},
  };
  for (const UsageCase& c : cases) {
    RunResult res = Ateam(c.args);
    EXPECT_EQ(res.exit_code, 125) << Describe(res);
    EXPECT_EQ(res.err, c.line) << Describe(res);
    EXPECT_EQ(res.out, "") << Describe(res);
  }
}

TEST_F(RunMessagesTest, EveryUsageErrorExits125InOneLine) {
  const Args cases[] = {
      {},
      {"ls", "--workspace-root"},
      {"gc", "--older-than", "soon"},
      {"harvest", "/tmp"},  // no -o
      {"run", "--pids", "0", "--workspace", "/tmp", "--", "true"},
      {"run", "--memory", "1m", "--workspace", "/tmp", "--", "true"},
      {"run", "--cpus", "0", "--workspace", "/tmp", "--", "true"},
      {"run", "--timeout", "2x", "--workspace", "/tmp", "--", "true"},
      {"run", "--agent", "nobody", "--workspace", "/tmp", "--", "true"},
      {"bwrap", "--backend", "other", "true"},
  };
  for (const Args& args : cases) {
    RunResult res = Ateam(args);
    EXPECT_EQ(res.exit_code, 125) << Describe(res);
    // A bare `ateam-sandbox` prints its usage; everything else is one line.
    if (!args.empty()) {
      EXPECT_EQ(Lines(res.err), 1U) << Describe(res);
    }
  }
}

TEST_F(RunMessagesTest, AnOptionGivenTwiceIsNamed) {
  RunResult res =
      Ateam({"run", "--timeout", "1m", "--timeout", "2m", "--workspace", "/tmp", "--", "true"});
  EXPECT_EQ(res.exit_code, 125) << Describe(res);
  EXPECT_EQ(res.err, "ateam-sandbox run: --timeout: given more than once (it takes one value)\n");
}

TEST_F(RunMessagesTest, OutOfRangeNumbersGiveAShortHumanRange) {
  RunResult pids = Ateam({"run", "--pids", "0", "--workspace", "/tmp", "--", "true"});
  EXPECT_EQ(pids.err,
            "ateam-sandbox run: --pids takes a whole number from 16 to 4194304, not '0'\n");
  RunResult memory = Ateam({"run", "--memory", "1m", "--workspace", "/tmp", "--", "true"});
  EXPECT_NE(memory.err.find("--memory takes a size of at least 32M"), std::string::npos)
      << Describe(memory);
  RunResult timeout = Ateam({"run", "--timeout", "0", "--workspace", "/tmp", "--", "true"});
  EXPECT_NE(timeout.err.find("--timeout takes a duration above 0 and at most 365d"),
            std::string::npos)
      << Describe(timeout);
}

TEST_F(RunMessagesTest, HelpNamesEveryValue) {
  for (const char* command : {"run", "harvest", "ls", "gc", "doctor"}) {
    RunResult res = Ateam({command, "--help"});
    EXPECT_EQ(res.exit_code, 0) << Describe(res);
    EXPECT_EQ(res.out.find("TEXT"), std::string::npos) << command << ":\n" << res.out;
  }
  RunResult run = Ateam({"run", "--help"});
  for (const char* value :
       {"--memory SIZE", "--tmpfs-size SIZE", "--timeout DURATION", "--grace DURATION", "--ro PATH",
        "--setenv NAME=VALUE", "--allow HOST[:PORT][=ADDR:PORT]", "--pids N", "-q,--quiet"}) {
    EXPECT_NE(run.out.find(value), std::string::npos) << value << " in:\n" << run.out;
  }
  RunResult gc = Ateam({"gc", "--help"});
  EXPECT_NE(gc.out.find("--older-than DURATION"), std::string::npos) << gc.out;
}

// Dispatches: a deadline in seconds with a unit ends the agent as a bare number would.
TEST_F(RunMessagesTest, TimeoutTakesAUnit) {
  TempDir work, out;
  HandToSandboxUser(work.path());
  HandToSandboxUser(out.path());
  RunResult res = RunAteam({"--workspace", work.path(), "--out", out.path(), "--timeout", "2s"},
                           {"/bin/sh", "-c", "exec sleep 600"});
  EXPECT_EQ(res.exit_code, 124) << Describe(res);
  EXPECT_NE(res.err.find("--timeout 2s expired"), std::string::npos) << Describe(res);
}

}  // namespace
}  // namespace sbx::integration::run
