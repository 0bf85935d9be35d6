// What `run` leaves behind: processes, state directory, exit codes, --status-json.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "integration/run/run_support.h"

namespace sbx::integration::run {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

class RunLifecycleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"sh", "sleep"});
    if (!missing.empty()) GTEST_SKIP() << missing;
  }
  // A sleep length no other test uses, so its processes can be found in /proc.
  std::string UniqueSleep() { return std::to_string(3000 + getpid() % 5000); }
  // Waits up to `timeout` for no process to match `needle`; returns the leftovers.
  std::vector<int> Leftovers(const std::string& needle, milliseconds timeout) {
    auto deadline = Clock::now() + timeout;
    std::vector<int> pids = ProcessesMatching(needle);
    while (!pids.empty() && Clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(50));
      pids = ProcessesMatching(needle);
    }
    return pids;
  }
  // Every dispatch state directory that may belong to this caller's runs: the per-uid
  // base under /tmp (/run for a root caller) and $XDG_RUNTIME_DIR.
  static std::set<std::string> StateEntries() {
    std::vector<std::string> bases = {"/tmp/ateam-sandbox-" + std::to_string(getuid())};
    if (getuid() == 0) bases.emplace_back("/run/ateam-sandbox-0");
    if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg != nullptr && getuid() != 0) {
      bases.emplace_back(xdg);
    }
    std::set<std::string> entries;
    for (const auto& base : bases) {
      if (DIR* d = opendir(base.c_str())) {
        while (dirent* e = readdir(d)) {
          std::string name = e->d_name;
          if (name.starts_with("dispatch-")) entries.insert(base + "/" + name);
        }
        closedir(d);
      }
    }
    return entries;
  }
  // Whether a process holds a flock on `path`, read from /proc/locks rather than by taking
  // the lock: a lock of ours could make a starting run's own non-blocking lock fail.
  static bool HeldByFlock(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return false;
    std::string key =
        fmt::format(" {:02x}:{:02x}:{} ", major(st.st_dev), minor(st.st_dev), st.st_ino);
    std::istringstream locks(ReadFile("/proc/locks").value_or(""));
    for (std::string line; std::getline(locks, line);) {
      if (line.find(" FLOCK ") != std::string::npos && line.find(key) != std::string::npos) {
        return true;
      }
    }
    return false;
  }
  // The state directories that appeared since `before` and that no run or janitor holds,
  // after waiting up to `timeout` for them to go. Other suites' dispatches (bench smoke,
  // the other tracks of CI) run beside this one as the same uid; theirs are held.
  static std::string NewStateEntries(const std::set<std::string>& before, milliseconds timeout) {
    auto deadline = Clock::now() + timeout;
    for (;;) {
      std::string added;
      for (const auto& entry : StateEntries()) {
        if (!before.contains(entry) && !HeldByFlock(entry)) added += entry + " ";
      }
      if (added.empty() || Clock::now() >= deadline) return added;
      std::this_thread::sleep_for(milliseconds(50));
    }
  }
  TempDir work_, out_, state_;
};

std::string JsonString(const std::string& json, const std::string& key) {
  auto at = json.find("\"" + key + "\": \"");
  if (at == std::string::npos) return "";
  at += key.size() + 5;
  return json.substr(at, json.find('"', at) - at);
}

TEST_F(RunLifecycleTest, NormalExitLeavesNothingButTheOutDir) {
  std::set<std::string> before = StateEntries();
  std::string status = state_.Sub("status.json");
  std::string marker = ProbeHostPath() + " sleep " + UniqueSleep();
  // A background sleeper that outlives the command must be killed with the sandbox.
  RunResult res = RunAteam(
      {"--workspace", work_.path(), "--out", out_.path(), "--status-json", status, "--allow",
       "api.example.test=127.0.0.1:9"},
      {"/bin/sh", "-c", marker + " >/dev/null & echo kept > " + out_.Sub("kept") + "; exit 3"});
  EXPECT_EQ(res.exit_code, 3) << Describe(res);
  EXPECT_TRUE(Leftovers(marker, milliseconds(3000)).empty()) << "dispatch processes remain";
  EXPECT_EQ(ReadFile(out_.Sub("kept")).value_or(""), "kept\n");
  std::string json = ReadFile(status).value_or("");
  for (const char* field :
       {"dispatch_id", "workspace", "out", "backend", "routes", "exit_code", "reason"}) {
    EXPECT_NE(json.find("\"" + std::string(field) + "\":"), std::string::npos)
        << field << " missing in " << json;
  }
  EXPECT_NE(json.find("\"exit_code\": 3"), std::string::npos) << json;
  EXPECT_EQ(JsonString(json, "workspace"), work_.path()) << json;
  EXPECT_EQ(JsonString(json, "backend"), Backend()) << json;
  EXPECT_NE(json.find("api.example.test"), std::string::npos) << json;
  std::string id = JsonString(json, "dispatch_id");
  ASSERT_FALSE(id.empty()) << json;
  EXPECT_EQ(NewStateEntries(before, milliseconds(0)), "") << "state directory left behind";
}

// Nothing of the dispatch is left on the host: no process, no state directory (the
// janitor removes it; dispatch/host/state_janitor.h), while the out dir keeps its files.
TEST_F(RunLifecycleTest, SigkilledRunTakesTheSandboxWithIt) {
  std::set<std::string> before = StateEntries();
  std::string marker = ProbeHostPath() + " sleep " + UniqueSleep();
  Process run = Process::Start(RunArgv({"--workspace", work_.path(), "--out", out_.path()},
                                       {ProbeHostPath(), "sleep", UniqueSleep()}));
  ASSERT_TRUE(run.WaitForOutput("sleeping", milliseconds(20000))) << run.out();
  ASSERT_FALSE(ProcessesMatching(marker).empty());
  ASSERT_EQ(kill(run.pid(), SIGKILL), 0);  // only `run` itself, not its process group
  RunResult res = run.Wait(milliseconds(5000));
  EXPECT_EQ(res.term_signal, SIGKILL);
  std::vector<int> left = Leftovers(marker, milliseconds(5000));
  for (int pid : left) kill(pid, SIGKILL);  // never leak them into later tests
  EXPECT_TRUE(left.empty()) << "sandbox survived its runner";
  EXPECT_EQ(NewStateEntries(before, milliseconds(5000)), "") << "state directory left behind";
}

// --timeout ends the whole sandbox: exit 124, the status says so, no process and no state
// directory is left.
TEST_F(RunLifecycleTest, TimeoutEndsEverythingAndExits124) {
  std::set<std::string> before = StateEntries();
  std::string marker = ProbeHostPath() + " sleep " + UniqueSleep();
  std::string status = state_.Sub("status-timeout.json");
  RunResult res = RunAteam({"--workspace", work_.path(), "--out", out_.path(), "--timeout", "1",
                            "--status-json", status},
                           {ProbeHostPath(), "sleep", UniqueSleep()});
  EXPECT_EQ(res.exit_code, 124) << Describe(res);
  EXPECT_EQ(res.err, "ateam-sandbox run: --timeout 1 expired: the whole sandbox was killed\n")
      << Describe(res);
  std::vector<int> left = Leftovers(marker, milliseconds(5000));
  for (int pid : left) kill(pid, SIGKILL);
  EXPECT_TRUE(left.empty()) << "the sandbox outlived its timeout";
  EXPECT_EQ(NewStateEntries(before, milliseconds(5000)), "") << "state directory left behind";
  std::string json = ReadFile(status).value_or("");
  EXPECT_EQ(JsonString(json, "reason"), "timeout") << json;
}

TEST_F(RunLifecycleTest, AgentKilledBySigkillGives137) {
  RunResult res = RunAteam({"--workspace", work_.path(), "--out", out_.path()},
                           {ProbeHostPath(), "kill-self", "9"});
  EXPECT_EQ(res.exit_code, 137) << Describe(res);
}

}  // namespace
}  // namespace sbx::integration::run
