// The host identity of a root caller's dispatches (docs/threat-model.md, "The host
// identity of a dispatch"): two dispatches running at once have two leased host uids,
// neither root's nor the overflow uid, and a host process of another uid (65534, or the
// other dispatch's) can neither signal, trace nor read the first one's processes, nor
// connect to its channels. A lease stays taken while its dispatch directory exists.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "base/child_process.h"
#include "integration/harness.h"
#include "integration/run/run_support.h"

namespace sbx::integration::run {
namespace {

using std::chrono::steady_clock;

bool WaitForFile(const std::string& path, std::chrono::seconds limit) {
  const auto deadline = steady_clock::now() + limit;
  while (access(path.c_str(), F_OK) != 0) {
    if (steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// The route sockets in root's state directories that belong to `owner`.
std::vector<std::string> ChannelsOf(uid_t owner) {
  std::vector<std::string> sockets;
  std::error_code ec;
  for (const auto& dir : std::filesystem::directory_iterator("/run/ateam-sandbox-0", ec)) {
    for (const auto& entry : std::filesystem::directory_iterator(dir.path(), ec)) {
      struct stat st {};
      if (lstat(entry.path().c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && st.st_uid == owner) {
        sockets.push_back(entry.path());
      }
    }
  }
  return sockets;
}

// In a child that became `attacker` (uid and gid): what of `pid` it can reach. Each bit is
// one thing that worked: 1 signal, 2 ptrace, 4 environ, 8 mem, 16 root, 32 a channel.
// `signal_only`: the positive control, which must not stop the process with a ptrace.
int Reach(uid_t attacker, int pid, const std::vector<std::string>& channels,
          bool signal_only = false) {
  pid_t child = fork();
  if (child == 0) {
    if (base::SwitchToIds(attacker, attacker) != 0) _exit(255);
    int reached = 0;
    if (kill(pid, 0) == 0) reached |= 1;
    if (signal_only) _exit(reached);
    if (ptrace(PTRACE_ATTACH, pid, nullptr, nullptr) == 0) reached |= 2;
    const std::string proc = "/proc/" + std::to_string(pid);
    if (int fd = open((proc + "/environ").c_str(), O_RDONLY); fd >= 0) {
      char c = 0;
      if (read(fd, &c, 1) >= 0) reached |= 4;
      close(fd);
    }
    if (int fd = open((proc + "/mem").c_str(), O_RDONLY); fd >= 0) {
      reached |= 8;
      close(fd);
    }
    if (DIR* root = opendir((proc + "/root/").c_str()); root != nullptr) {
      reached |= 16;
      closedir(root);
    }
    for (const std::string& path : channels) {
      int fd = socket(AF_UNIX, SOCK_STREAM, 0);
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
      if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) reached |= 32;
      close(fd);
    }
    _exit(reached);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 254;
}

std::string LeaseRecordOf(const std::string& dispatch_id) {
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator("/var/lib/ateam-sandbox/leases", ec)) {
    std::string text = ReadFile(entry.path()).value_or("");
    if (text.find("dispatch " + dispatch_id + "\n") != std::string::npos) return text;
  }
  return "";
}

std::string LeasedUid(const std::string& record) {
  auto at = record.find("\nuid ");
  return at == std::string::npos ? "" : record.substr(at + 5, record.find('\n', at + 5) - at - 5);
}

std::string DispatchId(const std::string& status_json) {
  const std::string key = R"("dispatch_id": ")";
  auto at = status_json.find(key);
  return at == std::string::npos ? "" : status_json.substr(at + key.size(), 12);
}

class RunIdentityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!IsRoot()) GTEST_SKIP() << "leased host ids are a root caller's: needs root";
    std::string missing = MissingPrerequisite({"sh"});
    if (!missing.empty()) GTEST_SKIP() << missing;
  }
};

TEST_F(RunIdentityTest, TwoRunningDispatchesAreTwoUidsNobodyElseReaches) {
  EchoServer echo;
  TempDir shared, ws_a, ws_b, status_dir;
  ASSERT_EQ(chmod(shared.path().c_str(), 0777), 0);
  const std::string tag = "sbx-identity-" + std::to_string(getpid());
  auto script = [&](const std::string& me, const std::string& other) {
    return "touch " + shared.Sub(me) + "; while [ ! -e " + shared.Sub(other) +
           " ]; do sleep 0.05; done; while [ ! -e " + shared.Sub("done") +
           " ]; do sleep 0.05; done";
  };
  RunResult a;
  RunResult b;
  auto dispatch = [&](const TempDir& ws, const std::string& me, const std::string& other,
                      RunResult* result) {
    *result = RunAteam({"--workspace", ws.path(), "--rw", shared.path(), "--no-default-allow",
                        "--allow", "echo.test=127.0.0.1:" + std::to_string(echo.port()),
                        "--status-json", status_dir.Sub(me + ".json"), "--timeout", "120"},
                       {"sh", "-c", script(me, other), tag + "-" + me},
                       WithTimeout(std::chrono::seconds(150)));
  };
  std::thread ta(dispatch, std::cref(ws_a), "A", "B", &a);
  std::thread tb(dispatch, std::cref(ws_b), "B", "A", &b);
  const bool both = WaitForFile(shared.Sub("A"), std::chrono::seconds(60)) &&
                    WaitForFile(shared.Sub("B"), std::chrono::seconds(60));
  std::vector<int> pids_a = ProcessesMatching(tag + "-A");
  std::vector<int> pids_b = ProcessesMatching(tag + "-B");
  uid_t uid_a = 0;
  uid_t uid_b = 0;
  for (int pid : pids_a) uid_a = UidOfProcess(pid) != 0 ? UidOfProcess(pid) : uid_a;
  for (int pid : pids_b) uid_b = UidOfProcess(pid) != 0 ? UidOfProcess(pid) : uid_b;
  if (both && uid_a != 0 && uid_b != 0) {
    const std::vector<std::string> channels = ChannelsOf(uid_a);
    EXPECT_FALSE(channels.empty()) << "dispatch A's route socket, its uid's";
    int checked = 0;
    for (uid_t attacker : {uid_t{65534}, uid_b}) {
      for (int pid : pids_a) {
        if (UidOfProcess(pid) != uid_a) continue;  // `run` itself, root's
        ++checked;
        // The probe itself works: the dispatch's own uid may signal its own process.
        if (attacker == 65534) {
          EXPECT_NE(Reach(uid_a, pid, {}, /*signal_only=*/true) & 1, 0) << pid;
        }
        EXPECT_EQ(Reach(attacker, pid, channels), 0)
            << "uid " << attacker << " reached pid " << pid << " of uid " << uid_a;
      }
    }
    EXPECT_GT(checked, 0) << "no process of dispatch A ran as its uid";
  }
  WriteFile(shared.Sub("done"), "");
  ta.join();
  tb.join();
  ASSERT_TRUE(both) << Describe(a) << Describe(b);
  EXPECT_EQ(a.exit_code, 0) << Describe(a);
  EXPECT_EQ(b.exit_code, 0) << Describe(b);
  ASSERT_NE(uid_a, 0U) << "no process of dispatch A found";
  ASSERT_NE(uid_b, 0U);
  EXPECT_NE(uid_a, uid_b) << "two running dispatches share a host uid";
  EXPECT_NE(uid_a, 65534U);
  EXPECT_NE(uid_b, 65534U);
  // Handed back: what the agents left is root's.
  struct stat st {};
  ASSERT_EQ(stat(ws_a.path().c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0U);
}

TEST_F(RunIdentityTest, ALeaseIsNotReusedWhileItsDispatchDirectoryExists) {
  RootTempDir root;
  TempDir status_dir, ws;
  std::vector<std::string> uids;
  for (const char* name : {"first", "second"}) {
    const std::string status = status_dir.Sub(std::string(name) + ".json");
    RunResult r = RunAteam({"--workspace", ws.path(), "--workspace-root", root.path(),
                            "--no-default-allow", "--status-json", status},
                           {"sh", "-c", "echo x > $ATEAM_OUT/file"});
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    const std::string id = DispatchId(ReadFile(status).value_or(""));
    ASSERT_EQ(id.size(), 12U) << ReadFile(status).value_or("");
    const std::string record = LeaseRecordOf(id);
    ASSERT_NE(record, "") << "no lease names dispatch " << id;
    EXPECT_NE(record.find(root.Sub(id)), std::string::npos) << record;
    uids.push_back(LeasedUid(record));
    struct stat st {};
    ASSERT_EQ(stat((root.Sub(id) + "/out/file").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 0U) << "the out dir is handed back to root";
  }
  EXPECT_NE(uids[0], uids[1]) << "the first dispatch's directory still exists";
  EXPECT_NE(uids[0], "65534");
}

// --identity subuid is an unprivileged caller's: root's dispatches are leased already.
TEST_F(RunIdentityTest, RootIsRefusedTheSubordinateIdentity) {
  TempDir ws;
  RunResult r = RunAteam({"--identity", "subuid", "--workspace", ws.path()}, {"true"});
  EXPECT_EQ(r.exit_code, 125) << Describe(r);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << Describe(r);
  EXPECT_NE(r.err.find("--identity subuid is for unprivileged callers"), std::string::npos);
}

}  // namespace
}  // namespace sbx::integration::run
