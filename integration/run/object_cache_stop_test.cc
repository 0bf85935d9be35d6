// A stop during `run --repo SRC --object-cache`'s listing of the source's refs or its
// fetch: SIGINT, SIGTERM or the deadline (--timeout) ends the run as during a plain clone
// (130 / 143 / 124, the agent never started), with no workspace, no scratch and no git
// left, the cache as it was; the next cached dispatch from the same source works and the
// cache stays fsck clean.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <csignal>

#include <chrono>
#include <cstdlib>
#include <string>

#include "integration/run/run_support.h"

namespace sbx::integration::run {
namespace {

using std::chrono::milliseconds;

// The slow git's sleep, told apart from the one of the same test run elsewhere on the
// machine (another checkout's suite) by this process's pid.
std::string SleepSeconds() { return "4173." + std::to_string(getpid()); }

class RunObjectCacheStopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"sh", "sleep", "git"});
    if (!missing.empty()) GTEST_SKIP() << missing;
    RunResult real = RunCommand({"sh", "-c", "command -v git"});
    ASSERT_EQ(real.exit_code, 0) << Describe(real);
    std::string real_git = real.out.substr(0, real.out.find('\n'));
    // A git that marks and sleeps on the step $SLOW_ON names (--bare: the cache's fetch, a
    // bare clone; ls-remote: the listing of the source's refs) and is the real one
    // otherwise. Git runs as the dispatch's user: all of this is theirs to read and the
    // marks directory theirs to write.
    mkdir(dir_.Sub("bin").c_str(), 0755);
    mkdir(dir_.Sub("marks").c_str(), 0777);
    chmod(dir_.Sub("marks").c_str(), 0777);
    WriteFile(dir_.Sub("bin/git"),
              "#!/bin/sh\nfor a in \"$@\"; do\n  if [ \"$a\" = \"$SLOW_ON\" ]; then\n    echo "
              "started > " +
                  dir_.Sub("marks/fetch") + "\n    exec sleep " + SleepSeconds() +
                  "\n  fi\ndone\nexec " + real_git + " \"$@\"\n");
    chmod(dir_.Sub("bin/git").c_str(), 0755);
    ASSERT_EQ(MakeOneCommitRepository(dir_.Sub("src")), 0);
  }

  [[nodiscard]] Args Options(const Args& extra) const {
    Args all = {"--workspace-root", dir_.Sub("dispatches"), "--cache-root",   dir_.Sub("caches"),
                "--repo",           dir_.Sub("src"),        "--object-cache", "--no-default-allow",
                "--status-json",    dir_.Sub("status.json")};
    all.insert(all.end(), extra.begin(), extra.end());
    return all;
  }
  // Says so on stdout when it ran and the workspace's history is there.
  static Args Agent() {
    return {"/bin/sh", "-c", "git log --oneline >/dev/null && echo agent-ran"};
  }
  // The environment of a run whose git sleeps on `step`.
  [[nodiscard]] RunOptions SlowOn(const std::string& step) const {
    const char* path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe)
    return WithEnv({"PATH=" + dir_.Sub("bin") + ":" + (path != nullptr ? path : "/usr/bin:/bin"),
                    "SLOW_ON=" + step});
  }
  [[nodiscard]] bool FetchStarted() const { return ReadFile(dir_.Sub("marks/fetch")).has_value(); }
  [[nodiscard]] std::string Status() const {
    return ReadFile(dir_.Sub("status.json")).value_or("");
  }

  void FillTheCache() {
    RunResult first = RunAteam(Options({"--rm"}), {"true"}, WithTimeout(milliseconds(60000)));
    ASSERT_EQ(first.exit_code, 0) << Describe(first);
  }

  // A cached dispatch whose git sleeps on `step`, sent `signal` once the step started.
  RunResult StoppedDuring(const std::string& step, int signal) {
    Process run = Process::Start(RunArgv(Options({}), Agent()), SlowOn(step));
    for (int i = 0; i < 400 && !FetchStarted(); ++i) usleep(50000);
    EXPECT_TRUE(FetchStarted()) << step << " never started";
    EXPECT_EQ(kill(run.pid(), signal), 0);
    return run.Wait(milliseconds(20000));
  }

  // What a stopped run must leave: no dispatch directory, no git, no agent.
  void ExpectNothingLeft(const RunResult& res) {
    EXPECT_TRUE(FetchStarted()) << "the stop did not come during the slow step";
    EXPECT_EQ(res.out.find("agent-ran"), std::string::npos) << "the agent ran after the stop";
    EXPECT_TRUE(DirectoryEntries(dir_.Sub("dispatches")).empty())
        << "the partial workspace or scratch was left behind";
    EXPECT_TRUE(ProcessesMatching("sleep " + SleepSeconds() + " ").empty())
        << "git outlived the stop";
  }

  // A cached dispatch from the same source with the real git: it works, and the cache it
  // leaves is sound.
  void ExpectNextDispatchWorks() {
    RunResult res = RunAteam(Options({}), Agent(), WithTimeout(milliseconds(60000)));
    EXPECT_EQ(res.exit_code, 0) << Describe(res);
    EXPECT_EQ(res.out, "agent-ran\n") << Describe(res);
    for (const auto& name : DirectoryEntries(dir_.Sub("caches"))) {
      if (name.find('.') != std::string::npos) continue;
      Args fsck = {"git", "-C", dir_.Sub("caches/" + name), "fsck", "--no-progress"};
      if (IsRoot()) fsck.insert(fsck.begin() + 3, {"-c", "safe.directory=*"});
      RunResult checked = RunCommand(fsck);
      EXPECT_EQ(checked.exit_code, 0) << name << "\n" << Describe(checked);
    }
  }

  RootTempDir dir_;
};

// With a cache already there and a new commit in the source (the fetch borrows from the
// cache; with nothing new there would be no fetch): SIGINT during the fetch.
TEST_F(RunObjectCacheStopTest, SigintDuringTheFetchStopsItAndKeepsTheCache) {
  ASSERT_NO_FATAL_FAILURE(FillTheCache());
  ASSERT_EQ(RunCommand({"git", "-C", dir_.Sub("src"), "-c", "user.name=t", "-c", "user.email=t@t",
                        "commit", "-q", "--allow-empty", "-m", "new"})
                .exit_code,
            0);
  RunResult res;
  ASSERT_NO_FATAL_FAILURE(res = StoppedDuring("--bare", SIGINT));
  EXPECT_EQ(res.exit_code, 130) << Describe(res);
  EXPECT_EQ(res.err,
            "ateam-sandbox run: interrupted by SIGINT before the agent started: nothing ran\n");
  EXPECT_NE(Status().find("\"reason\": \"interrupted\""), std::string::npos) << Status();
  ExpectNothingLeft(res);
  ExpectNextDispatchWorks();
}

// With a cache and nothing new in the source: SIGTERM while the source's refs are listed
// (the step that finds there is nothing to fetch).
TEST_F(RunObjectCacheStopTest, SigtermDuringTheListingStopsIt) {
  ASSERT_NO_FATAL_FAILURE(FillTheCache());
  RunResult res;
  ASSERT_NO_FATAL_FAILURE(res = StoppedDuring("ls-remote", SIGTERM));
  EXPECT_EQ(res.exit_code, 143) << Describe(res);
  EXPECT_EQ(res.err,
            "ateam-sandbox run: interrupted by SIGTERM before the agent started: nothing ran\n");
  ExpectNothingLeft(res);
  ExpectNextDispatchWorks();
}

// With no cache yet (the first fill): the deadline during the fetch.
TEST_F(RunObjectCacheStopTest, TimeoutDuringTheFetchEndsTheRun) {
  RunOptions slow = SlowOn("--bare");
  slow.timeout = milliseconds(60000);
  RunResult res = RunAteam(Options({"--timeout", "2"}), Agent(), slow);
  EXPECT_FALSE(res.timed_out) << Describe(res);
  EXPECT_EQ(res.exit_code, 124) << Describe(res);
  EXPECT_NE(Status().find("\"reason\": \"timeout\""), std::string::npos) << Status();
  ExpectNothingLeft(res);
  ExpectNextDispatchWorks();
}

}  // namespace
}  // namespace sbx::integration::run
