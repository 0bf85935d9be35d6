// An unprivileged caller's identities (docs/threat-model.md, "The host identity of a
// dispatch"). By default the sandbox runs as the caller's own uid. With `run --identity
// subuid` and a range in /etc/subuid and /etc/subgid, each dispatch runs as a subordinate
// host uid of its own: two at once are two such uids, neither the caller's; a process of
// one's uid cannot signal the other's agent; and the caller gets its workspace and out dir
// back as its own files.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "integration/run/run_support.h"

namespace sbx::integration::run {
namespace {

using std::chrono::seconds;
using std::chrono::steady_clock;

constexpr seconds kWatchdog{60};

std::string UserNamespaceOf(int pid) {
  std::error_code ec;
  return std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/ns/user", ec);
}

// An agent that marks `me` in `shared`, then waits for `other` (when given) and for "done".
Args WaitingAgent(const TempDir& shared, const std::string& me, const std::string& other,
                  const std::string& tag) {
  std::string script =
      "echo made > made && echo out > \"$ATEAM_OUT/o\" && touch " + shared.Sub(me) + "; ";
  if (!other.empty()) script += "while [ ! -e " + shared.Sub(other) + " ]; do sleep 0.05; done; ";
  script += "while [ ! -e " + shared.Sub("done") + " ]; do sleep 0.05; done";
  return {"sh", "-c", script, tag + "-" + me};
}

// The agent's host uid (the process named by `tag-me` that is not the caller's), or 0.
uid_t AgentUid(const std::string& tag, const std::string& me) {
  for (int pid : ProcessesMatching(tag + "-" + me)) {
    const uid_t uid = UidOfProcess(pid);
    if (uid != 0 && uid != getuid()) return uid;
  }
  return 0;
}

bool WaitForFile(const std::string& path) {
  for (const auto deadline = steady_clock::now() + kWatchdog; steady_clock::now() < deadline;) {
    if (access(path.c_str(), F_OK) == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

uid_t OwnerOf(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? st.st_uid : static_cast<uid_t>(-1);
}

class RunSubordinateIdentityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (IsRoot()) GTEST_SKIP() << "an unprivileged caller's identities: needs a non-root caller";
    std::string missing = MissingPrerequisite({"sh", "nsenter"});
    if (!missing.empty()) GTEST_SKIP() << missing;
    ASSERT_EQ(chmod(shared_.path().c_str(), 0777), 0);
  }
  TempDir shared_;
  const std::string tag_ = "sbx-subordinate-" + std::to_string(getpid());
};

TEST_F(RunSubordinateIdentityTest, ByDefaultTheSandboxIsTheCallersOwnUid) {
  TempDir ws;
  RunResult r;
  std::thread run([&] {
    r = RunAteam({"--workspace", ws.path(), "--rw", shared_.path(), "--no-default-allow"},
                 WaitingAgent(shared_, "own", "", tag_), WithTimeout(seconds(120)));
  });
  uid_t uid = static_cast<uid_t>(-1);
  if (WaitForFile(shared_.Sub("own"))) {
    for (int pid : ProcessesMatching(tag_ + "-own")) uid = UidOfProcess(pid);
  }
  WriteFile(shared_.Sub("done"), "");
  run.join();
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_EQ(uid, getuid()) << "the agent's host uid";
  EXPECT_EQ(OwnerOf(ws.Sub("made")), getuid());
}

TEST_F(RunSubordinateIdentityTest, TwoDispatchesAreTwoSubordinateUidsAndHandBack) {
  const std::string uids = SubordinateRange("/etc/subuid");
  if (uids.empty() || SubordinateRange("/etc/subgid").empty()) {
    GTEST_SKIP() << "/etc/subuid or /etc/subgid grants this user no range";
  }
  const uid_t first = static_cast<uid_t>(std::stoul(uids));
  const uid_t count = static_cast<uid_t>(std::stoul(uids.substr(uids.find(',') + 1)));
  TempDir ws_a, ws_b, out_a, out_b;
  RunResult a;
  RunResult b;
  auto dispatch = [&](const TempDir& ws, const TempDir& out, const std::string& me,
                      const std::string& other, RunResult* result) {
    *result = RunAteam({"--identity", "subuid", "--workspace", ws.path(), "--out", out.path(),
                        "--rw", shared_.path(), "--no-default-allow"},
                       WaitingAgent(shared_, me, other, tag_), WithTimeout(seconds(120)));
  };
  std::thread ta(dispatch, std::cref(ws_a), std::cref(out_a), "A", "B", &a);
  std::thread tb(dispatch, std::cref(ws_b), std::cref(out_b), "B", "A", &b);
  const bool both = WaitForFile(shared_.Sub("A")) && WaitForFile(shared_.Sub("B"));
  const uid_t uid_a = both ? AgentUid(tag_, "A") : 0;
  const uid_t uid_b = both ? AgentUid(tag_, "B") : 0;
  // A process of B's uid, made in B's namespace (its `run` there: the caller's uid in
  // another user namespace), tries to signal A's agent; then one of A's own uid, which may.
  auto signal_from = [&](const std::string& me, uid_t as, int target) {
    for (int pid : ProcessesMatching(tag_ + "-" + me)) {
      if (UidOfProcess(pid) != getuid() || UserNamespaceOf(pid) == UserNamespaceOf(getpid())) {
        continue;
      }
      const std::string inside = std::to_string(as - first + 1);
      return RunCommand({"nsenter", "-U", "-t", std::to_string(pid), "-S", inside, "-G", inside,
                         "sh", "-c", "kill -0 " + std::to_string(target)})
          .exit_code;
    }
    return -1;
  };
  int agent_a = -1;
  for (int pid : ProcessesMatching(tag_ + "-A")) {
    if (uid_a != 0 && UidOfProcess(pid) == uid_a) agent_a = pid;
  }
  const int from_b = agent_a > 0 ? signal_from("B", uid_b, agent_a) : -1;
  const int from_a = agent_a > 0 ? signal_from("A", uid_a, agent_a) : -1;
  WriteFile(shared_.Sub("done"), "");
  ta.join();
  tb.join();
  ASSERT_TRUE(both) << Describe(a) << Describe(b);
  ASSERT_EQ(a.exit_code, 0) << Describe(a);
  ASSERT_EQ(b.exit_code, 0) << Describe(b);
  ASSERT_NE(uid_a, 0U) << "dispatch A's agent was not seen";
  ASSERT_NE(uid_b, 0U) << "dispatch B's agent was not seen";
  EXPECT_NE(uid_a, uid_b) << "two running dispatches share a host uid";
  for (uid_t uid : {uid_a, uid_b}) {
    EXPECT_GE(uid, first);
    EXPECT_LT(uid, first + count) << "not one of the caller's subordinate ids";
  }
  EXPECT_EQ(from_a, 0) << "the probe itself: A's own uid may signal A's agent";
  EXPECT_NE(from_b, 0) << "a process of dispatch B's uid signalled dispatch A's agent";
  EXPECT_NE(from_b, -1) << "dispatch B's `run` in its namespace was not found";
  // Handed back: what the agents wrote is the caller's.
  for (const std::string& path :
       {ws_a.Sub("made"), ws_b.Sub("made"), out_a.Sub("o"), out_b.Sub("o")}) {
    EXPECT_EQ(OwnerOf(path), getuid()) << path;
  }
}

}  // namespace
}  // namespace sbx::integration::run
