// How `run` stops: a stop signal reaches the agent as it came (what the agent's traps
// record), the grace before the kill, a stop during the clone, and what a failed run or a
// dry run leaves in the dispatch root (nothing).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "integration/run/run_support.h"

namespace sbx::integration::run {
namespace {

using std::chrono::milliseconds;

std::string Field(const std::string& json, const std::string& key) {
  auto at = json.find("\"" + key + "\": ");
  if (at == std::string::npos) return "<missing " + key + ">";
  at += key.size() + 4;
  auto end = json.find_first_of(",\n", at);
  return json.substr(at, end - at);
}

class RunSignalsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"sh", "sleep", "git"});
    if (!missing.empty()) GTEST_SKIP() << missing;
    HandToSandboxUser(work_.path());
  }

  // Starts `run` with an agent that traps INT and TERM (each recorded in the out dir, then
  // exit 7 / 8, unless `traps` says otherwise) and waits until the traps are set.
  Process StartTrappingAgent(const std::string& traps, const Args& extra = {}) {
    Args options = {"--workspace", work_.path(), "--out", out_.path(), "--status-json", status()};
    options.insert(options.end(), extra.begin(), extra.end());
    return Process::Start(
        RunArgv(options, {"/bin/sh", "-c", traps + "; echo ready; while :; do sleep 0.05; done"}));
  }
  std::string status() const { return state_.Sub("status.json"); }
  std::string Status() const { return ReadFile(status()).value_or(""); }

  TempDir work_, out_, state_;
};

constexpr char kRecordingTraps[] =
    "trap 'echo INT > $ATEAM_OUT/got; exit 7' INT; trap 'echo TERM > $ATEAM_OUT/got; exit 8' "
    "TERM";

// Each stop signal reaches the agent as it came; the agent handled it and exited by
// itself, so the dispatch ends with its own code, and is recorded as interrupted.
TEST_F(RunSignalsTest, StopSignalsReachTheAgentAsTheyCame) {
  struct Case {
    int signal;
    const char* recorded;
    int exit_code;
  };
  for (const Case& c : {Case{SIGINT, "INT\n", 7}, Case{SIGTERM, "TERM\n", 8}}) {
    unlink(out_.Sub("got").c_str());
    Process run = StartTrappingAgent(kRecordingTraps);
    ASSERT_TRUE(run.WaitForOutput("ready", milliseconds(20000))) << run.out();
    ASSERT_EQ(kill(run.pid(), c.signal), 0);
    RunResult res = run.Wait(milliseconds(20000));
    EXPECT_EQ(ReadFile(out_.Sub("got")).value_or("<none>"), c.recorded);
    EXPECT_EQ(res.exit_code, c.exit_code) << Describe(res);
    EXPECT_EQ(Field(Status(), "reason"), "\"interrupted\"") << Status();
    EXPECT_EQ(Field(Status(), "signal"), "null") << Status();
    EXPECT_EQ(Field(Status(), "stop_signal"), std::to_string(c.signal)) << Status();
  }
}

TEST_F(RunSignalsTest, AnAgentDyingOfTheSignalIsInterrupted) {
  Process run = StartTrappingAgent("trap - INT");
  ASSERT_TRUE(run.WaitForOutput("ready", milliseconds(20000))) << run.out();
  ASSERT_EQ(kill(run.pid(), SIGINT), 0);
  RunResult res = run.Wait(milliseconds(20000));
  EXPECT_EQ(res.exit_code, 130) << Describe(res);
  EXPECT_EQ(Field(Status(), "reason"), "\"interrupted\"") << Status();
}

// An agent that ignores the signal is killed once --grace has passed (watchdog: the wait's
// own limit, far above the grace).
TEST_F(RunSignalsTest, AnAgentIgnoringTheSignalIsKilledAfterTheGrace) {
  Process run =
      StartTrappingAgent("trap 'echo TERM >> $ATEAM_OUT/got' TERM; trap '' INT", {"--grace", "1"});
  ASSERT_TRUE(run.WaitForOutput("ready", milliseconds(20000))) << run.out();
  ASSERT_EQ(kill(run.pid(), SIGTERM), 0);
  RunResult res = run.Wait(milliseconds(30000));
  EXPECT_FALSE(res.timed_out) << "the grace never ended: " << Describe(res);
  EXPECT_EQ(res.exit_code, 143) << Describe(res);
  EXPECT_EQ(ReadFile(out_.Sub("got")).value_or("<none>"), "TERM\n");
  EXPECT_EQ(Field(Status(), "reason"), "\"interrupted\"") << Status();
  EXPECT_EQ(Field(Status(), "signal"), "15") << Status();
}

// SIGHUP without a terminal goes on as SIGTERM; an agent dying of that is interrupted by
// the SIGHUP `run` got.
TEST_F(RunSignalsTest, AnAgentDyingOfAHangUpIsInterrupted) {
  Process run = StartTrappingAgent("trap - TERM", {"--no-tty"});
  ASSERT_TRUE(run.WaitForOutput("ready", milliseconds(20000))) << run.out();
  ASSERT_EQ(kill(run.pid(), SIGHUP), 0);
  RunResult res = run.Wait(milliseconds(20000));
  EXPECT_EQ(res.exit_code, 128 + SIGHUP) << Describe(res);
  EXPECT_EQ(Field(Status(), "reason"), "\"interrupted\"") << Status();
  EXPECT_EQ(Field(Status(), "signal_name"), "\"SIGHUP\"") << Status();
  EXPECT_EQ(Field(Status(), "stop_signal"), std::to_string(SIGHUP)) << Status();
}

// An agent a signal ended (a crash, a kill from inside) is `signaled`, with the name.
TEST_F(RunSignalsTest, AnAgentEndedByASignalIsSignaledWithItsName) {
  for (const auto& [sig, name] : {std::pair{SIGSEGV, "SIGSEGV"}, std::pair{SIGKILL, "SIGKILL"}}) {
    RunResult res =
        RunAteam({"--workspace", work_.path(), "--out", out_.path(), "--status-json", status()},
                 {"/bin/sh", "-c", "kill -" + std::to_string(sig) + " $$"});
    EXPECT_EQ(res.exit_code, 128 + sig) << Describe(res);
    EXPECT_EQ(Field(Status(), "reason"), "\"signaled\"") << Status();
    EXPECT_EQ(Field(Status(), "signal"), std::to_string(sig)) << Status();
    EXPECT_EQ(Field(Status(), "signal_name"), std::string("\"") + name + "\"") << Status();
    EXPECT_EQ(Field(Status(), "stop_signal"), "null") << Status();
  }
}

TEST_F(RunSignalsTest, BadGraceIsOneLine) {
  RunResult res =
      RunAteam({"--workspace", work_.path(), "--out", out_.path(), "--grace", "soon"}, {"true"});
  EXPECT_EQ(res.exit_code, 125) << Describe(res);
  EXPECT_EQ(res.err,
            "ateam-sandbox run: --grace takes a duration above 0 and at most 365d (e.g. 90s, 30m, "
            "2h, 7d; a bare number is seconds), not 'soon'\n");
}

// A git that says it started, then takes its time: the clone is still running when the
// signal comes.
class SlowClone {
 public:
  SlowClone() {
    // The clone runs as the sandbox's user for a root caller: everything here is theirs
    // to read and the marks directory theirs to write.
    mkdir(dir_.Sub("bin").c_str(), 0755);
    mkdir(dir_.Sub("marks").c_str(), 0777);
    chmod(dir_.Sub("marks").c_str(), 0777);
    WriteFile(dir_.Sub("bin/git"), "#!/bin/sh\necho started > " + dir_.Sub("marks/git") +
                                       "\nexec sleep " + kSleep + "\n");
    chmod(dir_.Sub("bin/git").c_str(), 0755);
    // A repository, so that `run` gets as far as git (the fake one is only on run's PATH).
    MakeOneCommitRepository(repo());
  }
  std::string PathValue() const {
    const char* path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe)
    return "PATH=" + dir_.Sub("bin") + ":" + (path != nullptr ? path : "/usr/bin:/bin");
  }
  bool Started() const { return ReadFile(dir_.Sub("marks/git")).has_value(); }
  std::string repo() const { return dir_.Sub("repo"); }
  std::string root() const { return dir_.Sub("dispatches"); }
  static constexpr char kSleep[] = "4171";

 private:
  RootTempDir dir_;
};

TEST_F(RunSignalsTest, SigintDuringTheCloneStopsItAndLeavesNothing) {
  SlowClone slow;
  std::string ran = out_.Sub("agent-ran");
  Process run =
      Process::Start(RunArgv({"--repo", slow.repo(), "--workspace-root", slow.root(), "--out",
                              out_.path(), "--status-json", status(), "--no-default-allow"},
                             {"/bin/sh", "-c", "touch " + ran}),
                     WithEnv({slow.PathValue()}));
  for (int i = 0; i < 400 && !slow.Started(); ++i) usleep(50000);
  ASSERT_TRUE(slow.Started()) << "the clone never started";
  ASSERT_EQ(kill(run.pid(), SIGINT), 0);
  RunResult res = run.Wait(milliseconds(20000));
  EXPECT_EQ(res.exit_code, 130) << Describe(res);
  EXPECT_EQ(res.err,
            "ateam-sandbox run: interrupted by SIGINT before the agent started: nothing ran\n");
  EXPECT_FALSE(ReadFile(ran).has_value()) << "the agent ran after the interrupt";
  EXPECT_TRUE(DirectoryEntries(slow.root()).empty()) << "the partial clone was left behind";
  EXPECT_TRUE(ProcessesMatching(std::string("sleep ") + SlowClone::kSleep).empty())
      << "git outlived the interrupt";
  EXPECT_EQ(Field(Status(), "reason"), "\"interrupted\"") << Status();
}

// Runs that fail after the clone, and a dry run, leave the dispatch root as they found it.
TEST_F(RunSignalsTest, FailedAndDryRunsLeaveNoDispatchDirectory) {
  RootTempDir scratch;
  std::string repo = scratch.Sub("repo");
  ASSERT_EQ(MakeOneCommitRepository(repo), 0);
  std::string root = scratch.Sub("dispatches");
  const std::vector<Args> failing = {
      {"--allow", "nosuch.invalid"},
      {"--ledger", scratch.Sub("missing/ledger")},
      {"--no-default-allow", "--out", "/proc/ateam-sandbox-test"},
  };
  for (const Args& extra : failing) {
    Args options = {"--repo", repo, "--workspace-root", root};
    options.insert(options.end(), extra.begin(), extra.end());
    RunResult res = RunAteam(options, {"true"});
    EXPECT_EQ(res.exit_code, 125) << Describe(res);
    EXPECT_EQ(std::count(res.err.begin(), res.err.end(), '\n'), 1) << Describe(res);
    EXPECT_TRUE(DirectoryEntries(root).empty()) << extra.front() << " left a dispatch directory";
  }
  RunResult dry = RunAteam(
      {"--repo", repo, "--workspace-root", root, "--no-default-allow", "--dry-run"}, {"true"});
  EXPECT_EQ(dry.exit_code, 0) << Describe(dry);
  EXPECT_NE(dry.out.find("dry run: nothing was created"), std::string::npos) << dry.out;
  EXPECT_TRUE(DirectoryEntries(root).empty()) << "the dry run made a dispatch directory";
}

// The dry run's bwrap line runs as it is with the system's bwrap and gives the agent the
// workspace and out dir it would get.
TEST_F(RunSignalsTest, DryRunBwrapLineRuns) {
  if (access("/usr/bin/bwrap", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/bwrap to run the line";
  if (getuid() == 0 && access("/usr/bin/setpriv", X_OK) != 0) {
    GTEST_SKIP() << "a root caller's line needs setpriv (util-linux)";
  }
  HandToSandboxUser(out_.path());
  RunResult dry =
      RunAteam({"--workspace", work_.path(), "--out", out_.path(), "--no-default-allow",
                "--bwrap-path", "/usr/bin/bwrap", "--dry-run"},
               {"/bin/sh", "-c", "id -u > $ATEAM_OUT/uid; ls -A $HOME > $ATEAM_OUT/home"});
  ASSERT_EQ(dry.exit_code, 0) << Describe(dry);
  EXPECT_NE(dry.out.find("namespaces: user mnt pid net"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("bounding set keeps none"), std::string::npos) << dry.out;
  auto at = dry.out.find("\nbwrap: ");
  ASSERT_NE(at, std::string::npos) << dry.out;
  std::string line = dry.out.substr(at + 8, dry.out.find('\n', at + 1) - at - 8);
  // A root caller's line runs as a leased id it names $LEASED_UID/$LEASED_GID; the out dir
  // was handed to 65534, so that is the one given here.
  RunResult ran = RunCommand({"/bin/sh", "-c", "LEASED_UID=65534 LEASED_GID=65534; " + line});
  ASSERT_EQ(ran.exit_code, 0) << Describe(ran) << "\n" << line;
  std::string uid = ReadFile(out_.Sub("uid")).value_or("");
  EXPECT_EQ(uid, getuid() == 0 ? "65534\n" : std::to_string(getuid()) + "\n");
  EXPECT_EQ(ReadFile(out_.Sub("home")).value_or("<none>"), "");
}

}  // namespace
}  // namespace sbx::integration::run
