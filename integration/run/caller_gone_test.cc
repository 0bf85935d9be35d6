// A caller that goes away is not a stop signal: `run` outlives a parent that exits (unless
// --die-with-parent), its dispatch is known from the start (the "running" record, --id-file)
// and `ls` shows it running until it ends.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

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

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string ShellLine(const Args& argv) {
  std::string line;
  for (const auto& a : argv) line += (line.empty() ? "" : " ") + ShellQuote(a);
  return line;
}

// Polls for `path` (a bound for a test that would hang, never a timing assertion).
bool WaitForFile(const std::string& path) {
  for (int i = 0; i < 3000; ++i) {
    if (access(path.c_str(), F_OK) == 0) return true;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return false;
}

// The run the caller left behind is this process's child now (the harness is a subreaper):
// its wait status, or -1 when it did not end within a minute (it is killed then).
int ReapOrphan(pid_t pid) {
  for (int i = 0; i < 3000; ++i) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(milliseconds(20));
  }
  kill(pid, SIGKILL);
  return -1;
}

class RunCallerGoneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"sh", "sleep", "git"});
    if (!missing.empty()) GTEST_SKIP() << missing;
    repo_ = scratch_.Sub("repo");
    ASSERT_EQ(MakeOneCommitRepository(repo_), 0);
  }
  // A caller shell that starts `run` in the background, prints its pid, waits for
  // `wait_for` (when given) and exits.
  pid_t StartAndLeave(const Args& options, const std::string& agent,
                      const std::string& wait_for = "") {
    // setsid: run in a process group (and session) of its own, as a job of an orchestrator.
    std::string line = "setsid " + ShellLine(RunArgv(options, {"/bin/sh", "-c", agent})) +
                       " </dev/null >/dev/null 2>" + ShellQuote(scratch_.Sub("run.err")) +
                       " & echo $!";
    if (!wait_for.empty()) {
      line += "; while [ ! -e " + ShellQuote(wait_for) + " ]; do sleep 0.05; done";
    }
    RunResult caller = RunCommand({"/bin/sh", "-c", line}, WithTimeout(milliseconds(60000)));
    EXPECT_EQ(caller.exit_code, 0) << Describe(caller);
    return static_cast<pid_t>(std::stoi(caller.out.empty() ? "0" : caller.out));
  }
  [[nodiscard]] std::string root() const { return scratch_.Sub("dispatches"); }
  // A run left by its caller whose agent loops for good, once the agent runs: its pid and
  // its dispatch id.
  void StartAgentThatLoops(pid_t* pid, std::string* id) {
    const std::string id_file = scratch_.Sub("id");
    *pid = StartAndLeave(
        {"--repo", repo_, "--workspace-root", root(), "--no-default-allow", "--id-file", id_file},
        "touch $ATEAM_OUT/ready; while :; do sleep 0.05; done");
    ASSERT_GT(*pid, 0);
    ASSERT_TRUE(WaitForFile(id_file)) << ReadFile(scratch_.Sub("run.err")).value_or("");
    *id = ReadFile(id_file).value_or("");
    ASSERT_EQ(id->size(), 13U) << *id;
    id->pop_back();
    ASSERT_TRUE(WaitForFile(root() + "/" + *id + "/out/ready"));
  }

  RootTempDir scratch_;
  std::string repo_;
};

TEST_F(RunCallerGoneTest, RunOutlivesACallerThatExitsAndIsKnownFromTheStart) {
  const std::string id_file = scratch_.Sub("id");
  pid_t pid = StartAndLeave(
      {"--repo", repo_, "--workspace-root", root(), "--no-default-allow", "--id-file", id_file},
      "while [ ! -e go ]; do sleep 0.05; done; echo done > $ATEAM_OUT/done");
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(WaitForFile(id_file)) << ReadFile(scratch_.Sub("run.err")).value_or("");
  std::string id = ReadFile(id_file).value_or("");
  ASSERT_EQ(id.size(), 13U) << id;
  id.pop_back();
  const std::string dir = root() + "/" + id;
  // Its record exists before it ends, and says so.
  std::string record = ReadFile(dir + "/status.json").value_or("");
  EXPECT_EQ(Field(record, "reason"), "\"running\"") << record;
  EXPECT_EQ(Field(record, "exit_code"), "null") << record;
  EXPECT_EQ(Field(record, "dispatch_id"), "\"" + id + "\"") << record;
  RunResult ls = RunCommand({AteamPath(), "ls", "--json", "--workspace-root", root()});
  EXPECT_NE(ls.out.find("\"state\": \"running\""), std::string::npos) << ls.out;
  // The caller is long gone; the agent carries on when told to.
  WriteFile(dir + "/workspace/go", "");
  int status = ReapOrphan(pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << status << " " << ReadFile(scratch_.Sub("run.err")).value_or("");
  EXPECT_EQ(ReadFile(dir + "/out/done").value_or("<none>"), "done\n");
  record = ReadFile(dir + "/status.json").value_or("");
  EXPECT_EQ(Field(record, "reason"), "\"exited\"") << record;
  EXPECT_EQ(Field(record, "exit_code"), "0") << record;
}

TEST_F(RunCallerGoneTest, DieWithParentStopsTheDispatchAsSigtermWould) {
  const std::string out = scratch_.Sub("out");
  ASSERT_EQ(mkdir(out.c_str(), 0755), 0);
  HandToSandboxUser(out);
  const std::string status_file = scratch_.Sub("status.json");
  pid_t pid =
      StartAndLeave({"--repo", repo_, "--workspace-root", root(), "--out", out,
                     "--no-default-allow", "--die-with-parent", "--status-json", status_file},
                    "trap 'echo TERM > $ATEAM_OUT/got; exit 9' TERM; touch "
                    "$ATEAM_OUT/ready; while :; do sleep 0.05; done",
                    out + "/ready");
  ASSERT_GT(pid, 0);
  int status = ReapOrphan(pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 9)
      << status << " " << ReadFile(scratch_.Sub("run.err")).value_or("");
  EXPECT_EQ(ReadFile(out + "/got").value_or("<none>"), "TERM\n");
  std::string doc = ReadFile(status_file).value_or("");
  EXPECT_EQ(Field(doc, "reason"), "\"interrupted\"") << doc;
  EXPECT_EQ(Field(doc, "stop_signal"), std::to_string(SIGTERM)) << doc;
}

// The open directories of `pid` whose path has `needle` in it.
std::vector<std::string> OpenDirsOf(pid_t pid, const std::string& needle) {
  std::vector<std::string> found;
  const std::string fds = "/proc/" + std::to_string(pid) + "/fd";
  for (const auto& name : DirectoryEntries(fds)) {
    char target[4096];
    ssize_t n = readlink((fds + "/" + name).c_str(), target, sizeof(target) - 1);
    if (n <= 0) continue;
    std::string path(target, static_cast<size_t>(n));
    if (path.find(needle) != std::string::npos) found.push_back(path);
  }
  return found;
}

// The cgroup directories named after the dispatch `id` (dispatch/host/cgroup.h).
std::string CgroupDirsOf(const std::string& id) {
  return RunCommand({"/bin/sh", "-c",
                     "find /sys/fs/cgroup -maxdepth 12 -type d -name '*" + id + "*' 2>/dev/null"})
      .out;
}

// `kill -9 -PGID` of run's whole group: the janitor, in a group of its own, still removes
// the state directory and the cgroups; `ls` shows the dispatch lost, and gc removes it.
TEST_F(RunCallerGoneTest, AGroupKillLeavesNoStateDirOrCgroup) {
  pid_t pid = 0;
  std::string id;
  StartAgentThatLoops(&pid, &id);
  if (HasFatalFailure()) return;
  std::vector<std::string> state = OpenDirsOf(pid, "/dispatch-");
  ASSERT_EQ(state.size(), 1U) << "run's state directory";
  pid_t group = getpgid(pid);
  ASSERT_GT(group, 0);
  ASSERT_NE(group, getpgid(0)) << "run must have a group of its own for this test";
  ASSERT_EQ(kill(-group, SIGKILL), 0);
  ReapOrphan(pid);
  // The janitor works after run is gone: bounded polls for its effects.
  bool clean = false;
  for (int i = 0; i < 1500 && !clean; ++i) {
    clean = access(state[0].c_str(), F_OK) != 0 && CgroupDirsOf(id).empty();
    if (!clean) std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_NE(access(state[0].c_str(), F_OK), 0) << "left: " << state[0];
  EXPECT_EQ(CgroupDirsOf(id), "");
  RunResult ls = RunCommand({AteamPath(), "ls", "--json", "--workspace-root", root()});
  EXPECT_NE(ls.out.find("\"state\": \"lost\""), std::string::npos) << ls.out;
  RunResult gc = RunCommand({AteamPath(), "gc", "--workspace-root", root()});
  EXPECT_EQ(gc.exit_code, 0) << Describe(gc);
  EXPECT_NE(access((root() + "/" + id).c_str(), F_OK), 0) << gc.out;
}

// `kill -9` of run's group and of its janitor at once: nothing removes the cgroups then, so
// `gc` does: never while the run is going (its state directory is locked and names it),
// and once it is gone.
TEST_F(RunCallerGoneTest, GcRemovesTheCgroupsOfARunKilledWithItsJanitor) {
  if (geteuid() != 0) GTEST_SKIP() << "a dispatch's cgroup on this host is v1, a root caller's";
  pid_t pid = 0;
  std::string id;
  StartAgentThatLoops(&pid, &id);
  if (HasFatalFailure()) return;
  const std::string cgroups = CgroupDirsOf(id);
  if (cgroups.empty()) GTEST_SKIP() << "no cgroup for a dispatch here (ateam-sandbox doctor)";
  RunResult kept = RunCommand({AteamPath(), "gc", "--workspace-root", root()});
  EXPECT_EQ(kept.exit_code, 0) << Describe(kept);
  EXPECT_EQ(CgroupDirsOf(id), cgroups) << kept.out;
  // The janitor first (run's forked child with run's command line, in a group of its own),
  // then run's group: the janitor never sees run go. Only the janitor: the sandbox's
  // supervisor, also a group of its own, names the root too, and killing it first would
  // let run see its sandbox end and clean up before its group is killed.
  const pid_t group = getpgid(pid);
  const std::string run_cmdline = ReadFile(fmt::format("/proc/{}/cmdline", pid)).value_or("");
  ASSERT_FALSE(run_cmdline.empty());
  int janitors = 0;
  for (int p : ProcessesMatching(root())) {
    if (p != pid && getpgid(p) != group &&
        ReadFile(fmt::format("/proc/{}/cmdline", p)).value_or("") == run_cmdline) {
      janitors += kill(p, SIGKILL) == 0 ? 1 : 0;
    }
  }
  ASSERT_EQ(janitors, 1) << "run's janitor";
  ASSERT_EQ(kill(-group, SIGKILL), 0);
  ReapOrphan(pid);
  EXPECT_EQ(CgroupDirsOf(id), cgroups) << "the janitor was not killed in time";
  RunResult gc = RunCommand({AteamPath(), "gc", "--workspace-root", root()});
  EXPECT_EQ(gc.exit_code, 0) << Describe(gc);
  // Another root caller's run, of a build that does not name its dispatch, keeps every
  // cgroup (a machine shared with other builds; never CI's single one).
  if (gc.out.find("names none yet") != std::string::npos) {
    GTEST_SKIP() << "another run on this machine does not name its dispatch: " << gc.out;
  }
  EXPECT_NE(gc.out.find("removed orphaned cgroup"), std::string::npos) << gc.out;
  EXPECT_EQ(CgroupDirsOf(id), "") << gc.out;
}

}  // namespace
}  // namespace sbx::integration::run
