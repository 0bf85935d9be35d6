// The limits every `run` sandbox gets (dispatch/plan/limits.h): tmpfs sizes and inode counts,
// the process limit, the sandbox's own inotify limit, no nested user namespaces unless
// asked, no core dumps; and the memory limit where a cgroup can be used. The probe that
// runs inside is limits_probe.cc.
#include <signal.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "integration/run/run_support.h"

namespace sbx::integration::run {
namespace {

using std::chrono::milliseconds;

std::string LimitsProbePath() {
  std::string netclient = NetClientPath();
  return netclient.substr(0, netclient.rfind('/') + 1) + "run_limits_probe";
}

long long Number(const Report& report, const std::string& key) {
  return std::atoll(Get(report, key).c_str());
}

class RunLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"sh", "unshare"});
    if (missing.empty() && access(LimitsProbePath().c_str(), X_OK) != 0) {
      missing = LimitsProbePath() + " is not executable by this user";
    }
    if (!missing.empty()) GTEST_SKIP() << missing;
    HandToSandboxUser(work_.path());
    HandToSandboxUser(out_.path());
  }
  [[nodiscard]] Args Options(const Args& extra = {}) const {
    Args options = {"--workspace", work_.path(), "--out", out_.path(), "--ro", LimitsProbePath()};
    options.insert(options.end(), extra.begin(), extra.end());
    return options;
  }
  [[nodiscard]] Args Probe(const Args& args) const {
    Args command = {LimitsProbePath()};
    command.insert(command.end(), args.begin(), args.end());
    return command;
  }
  static bool Native() { return Backend() == "native"; }
  // Why no cgroup can be used for this caller here (run's one stderr line), or "".
  [[nodiscard]] std::string NoCgroupReason() const {
    RunResult res = RunAteam(Options({"--memory", "8g"}), {"true"});
    auto at = res.err.find("no cgroup for this dispatch");
    if (at == std::string::npos) return "";
    return res.err.substr(at, res.err.find('\n', at) - at);
  }

  TempDir work_, out_;
};

TEST_F(RunLimitsTest, FillingTmpOrTheHomeStopsAtTheTmpfsSize) {
  for (const std::string path : {"/tmp/big", "/home/ateam-sandbox/big"}) {
    RunResult res = RunAteam(Options({"--tmpfs-size", "8m"}), Probe({"write", path, "32"}));
    ASSERT_EQ(res.exit_code, 0) << Describe(res);
    Report report = ParseReport(res.out);
    EXPECT_EQ(Get(report, "errno"), "ENOSPC") << path << ": " << res.out;
    EXPECT_LE(Number(report, "bytes"), 8LL << 20) << path;
    EXPECT_GE(Number(report, "bytes"), 4LL << 20) << path;
  }
}

TEST_F(RunLimitsTest, TmpfsInodeCountIsBounded) {
  if (!Native())
    GTEST_SKIP() << "bwrap has no option for a tmpfs's nr_inodes (docs/bwrap-compat.md)";
  // 16 MiB: one inode per 16 KiB, at least 1024.
  RunResult res = RunAteam(Options({"--tmpfs-size", "16m"}), Probe({"files", "/tmp", "5000"}));
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  Report report = ParseReport(res.out);
  EXPECT_EQ(Get(report, "errno"), "ENOSPC") << res.out;
  EXPECT_LT(Number(report, "files"), 1024);
  EXPECT_GT(Number(report, "files"), 1000);
}

TEST_F(RunLimitsTest, DevAndTheTunnelDirectoryAreTiny) {
  if (!Native()) GTEST_SKIP() << "bwrap has no option for the size of --dev (docs/bwrap-compat.md)";
  for (const std::string path : {"/dev/big", "/run/ateam-tunnel/big"}) {
    // Landlock refuses these writes on its own (EACCES, kernel_surface_test.cc); without
    // its fs part the size of the mount is what stops them.
    RunResult res = RunAteam(Options({"--landlock-allow", "fs"}), Probe({"write", path, "4"}));
    ASSERT_EQ(res.exit_code, 0) << Describe(res);
    Report report = ParseReport(res.out);
    EXPECT_EQ(Get(report, "errno"), "ENOSPC") << path << ": " << res.out;
    EXPECT_LE(Number(report, "bytes"), 64LL << 10) << path;
  }
  // /dev/shm is a tmpfs of its own, large enough for POSIX shared memory.
  RunResult res = RunAteam(Options(), Probe({"write", "/dev/shm/big", "8"}));
  EXPECT_EQ(Get(ParseReport(res.out), "errno"), "none") << Describe(res);
}

// A bounded fork bomb: the probe forks until the kernel refuses. Meanwhile this caller can
// still start 100 processes of its own.
TEST_F(RunLimitsTest, ForkBombEndsAtThePidLimitAndTheHostStillForks) {
  if (!Native()) {
    std::string reason = NoCgroupReason();
    if (!reason.empty()) {
      GTEST_SKIP() << "the bwrap backend's process limit is the cgroup's, and here: " << reason;
    }
  }
  std::string release = out_.Sub("release");
  Process run =
      Process::Start(RunArgv(Options({"--pids", "64"}), Probe({"forks", "1000", release})));
  ASSERT_TRUE(run.WaitForOutput("ready", milliseconds(60000))) << run.out();
  Report report = ParseReport(run.out());
  EXPECT_EQ(Get(report, "errno"), "EAGAIN") << run.out();
  EXPECT_LT(Number(report, "forks"), 64);
  EXPECT_GT(Number(report, "forks"), 32);
  // The sandbox holds its whole allowance now: the host is not short of processes.
  std::vector<pid_t> children;
  for (int i = 0; i < 100; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      pause();
      _exit(0);
    }
    if (pid > 0) children.push_back(pid);
  }
  EXPECT_EQ(children.size(), 100U);
  for (pid_t pid : children) kill(pid, SIGKILL);
  for (pid_t pid : children) waitpid(pid, nullptr, 0);
  WriteFile(release, "go");
  RunResult res = run.Wait(milliseconds(30000));
  EXPECT_EQ(res.exit_code, 0) << Describe(res);
}

// The sandbox's user namespace has its own inotify limit (64 instances): the agent cannot
// take the caller's (the kernel charges them to the namespace's creator too).
TEST_F(RunLimitsTest, InotifyInstancesStopAtTheSandboxLimit) {
  if (!Native()) {
    GTEST_SKIP() << "bwrap cannot set the sandbox's user-namespace sysctls (docs/bwrap-compat.md)";
  }
  long host_limit =
      std::atol(ReadFile("/proc/sys/fs/inotify/max_user_instances").value_or("0").c_str());
  if (host_limit < 128) {
    GTEST_SKIP() << "fs.inotify.max_user_instances is " << host_limit
                 << " here: the sandbox's 64 would not fit beside the caller's own";
  }
  std::string release = out_.Sub("release");
  Process run = Process::Start(RunArgv(Options(), Probe({"inotify", "200", release})));
  ASSERT_TRUE(run.WaitForOutput("ready", milliseconds(60000))) << run.out();
  Report report = ParseReport(run.out());
  EXPECT_EQ(Get(report, "errno"), "EMFILE") << run.out();
  EXPECT_EQ(Number(report, "inotify"), 64);
  // While the sandbox holds all it may, this caller still gets an instance of its own.
  int fd = inotify_init1(IN_CLOEXEC);
  EXPECT_GE(fd, 0) << "the caller's inotify instances are used up";
  if (fd >= 0) close(fd);
  WriteFile(release, "go");
  RunResult res = run.Wait(milliseconds(30000));
  EXPECT_EQ(res.exit_code, 0) << Describe(res);
}

TEST_F(RunLimitsTest, NestedUserNamespacesOnlyWithTheFlag) {
  RunResult denied = RunAteam(Options(), {"unshare", "-U", "true"});
  EXPECT_NE(denied.exit_code, 0) << Describe(denied);
  EXPECT_NE(denied.err.find("Operation not permitted"), std::string::npos) << Describe(denied);
  RunResult allowed = RunAteam(Options({"--allow-nested-userns"}), {"unshare", "-U", "true"});
  EXPECT_EQ(allowed.exit_code, 0) << Describe(allowed);
  // A nested sandbox of the agent's own: root in its namespace, and one more level below.
  allowed = RunAteam(Options({"--allow-nested-userns"}),
                     {"unshare", "-Ur", "sh", "-c", "id -u && unshare -U true && echo nested"});
  EXPECT_EQ(allowed.out, "0\nnested\n") << Describe(allowed);
  if (Native()) {
    RunResult value = RunAteam(Options(), {"cat", "/proc/sys/user/max_user_namespaces"});
    EXPECT_EQ(value.out, "0\n") << Describe(value);
    value =
        RunAteam(Options({"--allow-nested-userns"}), {"cat", "/proc/sys/user/max_user_namespaces"});
    EXPECT_EQ(value.out, "16\n") << Describe(value);
  }
}

// The memory limit needs a cgroup: where this caller cannot have one, the test says why.
TEST_F(RunLimitsTest, AllocatingPastTheMemoryLimitEndsWithOom) {
  std::string reason = NoCgroupReason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  TempDir state;
  std::string status = state.Sub("status.json");
  RunResult res =
      RunAteam(Options({"--memory", "64m", "--status-json", status}), Probe({"alloc", "512"}));
  EXPECT_EQ(res.exit_code, 137) << Describe(res);
  EXPECT_EQ(res.out.find("allocated: 512"), std::string::npos) << res.out;
  EXPECT_NE(res.err.find("out of memory"), std::string::npos) << Describe(res);
  std::string json = ReadFile(status).value_or("");
  EXPECT_NE(json.find("\"reason\": \"oom\""), std::string::npos) << json;
  // Below the limit the same allocation works.
  res = RunAteam(Options({"--memory", "512m"}), Probe({"alloc", "128"}));
  EXPECT_EQ(Get(ParseReport(res.out), "allocated"), "128") << Describe(res);
}

// The dispatch's cgroups go with it, also when `run` itself is SIGKILLed (the janitor).
TEST_F(RunLimitsTest, TheCgroupIsRemovedEvenAfterASigkilledRun) {
  std::string reason = NoCgroupReason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  TempDir state;
  std::string release = out_.Sub("release");
  Process run = Process::Start(RunArgv(Options({"--status-json", state.Sub("status.json")}),
                                       Probe({"forks", "4", release})));
  ASSERT_TRUE(run.WaitForOutput("ready", milliseconds(60000))) << run.out();
  // The probe's own cgroup, as /proc shows it from the host.
  std::vector<int> probes = ProcessesMatching(LimitsProbePath() + " forks 4 " + release);
  ASSERT_FALSE(probes.empty());
  std::string cgroups;  // `run` matches too (the command is on its command line)
  for (int pid : probes) {
    std::string text = ReadFile("/proc/" + std::to_string(pid) + "/cgroup").value_or("");
    if (text.find("ateam-sandbox-") != std::string::npos) cgroups = text;
  }
  std::vector<std::string> dirs;
  for (const auto& line : Words(cgroups)) {
    auto at = line.find("ateam-sandbox-");
    if (at == std::string::npos) continue;
    auto colon = line.find(':', line.find(':') + 1);
    std::string controller = line.substr(line.find(':') + 1, colon - line.find(':') - 1);
    std::string path = line.substr(colon + 1);
    dirs.push_back(controller.empty() ? path : controller + ":" + path);
  }
  ASSERT_FALSE(dirs.empty()) << cgroups;
  ASSERT_EQ(kill(run.pid(), SIGKILL), 0);
  run.Wait(milliseconds(5000));
  // Each cgroup directory the sandbox was in, named by the host's mounts.
  for (const auto& dir : dirs) {
    std::string controller = dir.substr(0, dir.find(':'));
    std::string path = dir.substr(dir.find(':') + 1);
    std::string host =
        controller == dir ? "/sys/fs/cgroup" + dir : "/sys/fs/cgroup/" + controller + path;
    bool gone = false;
    for (int i = 0; i < 300 && !gone; ++i) {
      gone = access(host.c_str(), F_OK) != 0;
      if (!gone) std::this_thread::sleep_for(milliseconds(50));
    }
    EXPECT_TRUE(gone) << host << " left behind";
  }
}

// What an agent's own sandbox does (Claude Code's Bash tool runs bwrap): only with the flag.
TEST_F(RunLimitsTest, AnAgentsOwnBwrapNeedsTheFlag) {
  if (access("/usr/bin/bwrap", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/bwrap";
  const Args bwrap = {"/usr/bin/bwrap",
                      "--ro-bind",
                      "/",
                      "/",
                      "--dev",
                      "/dev",
                      "--proc",
                      "/proc",
                      "--unshare-all",
                      "--die-with-parent",
                      "--",
                      "sh",
                      "-c",
                      "echo inner-sandbox"};
  RunResult denied = RunAteam(Options(), bwrap);
  EXPECT_NE(denied.exit_code, 0) << Describe(denied);
  RunResult allowed = RunAteam(Options({"--allow-nested-userns"}), bwrap);
  EXPECT_EQ(allowed.exit_code, 0) << Describe(allowed);
  EXPECT_EQ(allowed.out, "inner-sandbox\n") << Describe(allowed);
}

// The status document and the dry run say what this dispatch enforced and what not.
TEST_F(RunLimitsTest, StatusAndDryRunSayWhatIsEnforced) {
  TempDir state;
  std::string status = state.Sub("status.json");
  RunResult res = RunAteam(
      Options({"--status-json", status, "--pids", "300", "--limits", "best-effort"}), {"true"});
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  std::string json = ReadFile(status).value_or("");
  EXPECT_NE(json.find("\"limits\": {\"tmpfs_size\": 2147483648"), std::string::npos) << json;
  EXPECT_NE(json.find("\"pids\": 300"), std::string::npos) << json;
  EXPECT_NE(json.find("nested user namespaces: denied"), std::string::npos) << json;
  bool cgroup = NoCgroupReason().empty();
  EXPECT_EQ(json.find("\"cgroup v") != std::string::npos, cgroup) << json;
  if (!Native()) {
    EXPECT_NE(json.find("bwrap cannot set them"), std::string::npos) << json;
  }
  RunResult dry = RunAteam(Options({"--dry-run"}), {"true"});
  EXPECT_NE(dry.out.find("limit: tmpfs: home and /tmp 2 GiB each"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("rlimit: nproc at most 4096"), std::string::npos) << dry.out;
}

// A limit asked for that this host cannot enforce is refused before anything is made;
// --limits best-effort runs without it, and the status document says so.
TEST_F(RunLimitsTest, AnUnenforceableLimitIsRefusedUnlessBestEffort) {
  std::string reason = NoCgroupReason();
  if (reason.empty()) GTEST_SKIP() << "this caller has a cgroup here: every limit is enforced";
  RootTempDir scratch;
  std::string repo = scratch.Sub("repo");
  ASSERT_EQ(MakeOneCommitRepository(repo), 0);
  std::string root = scratch.Sub("dispatches");
  for (const Args& flag : {Args{"--memory", "1g"}, Args{"--cpus", "0.5"}}) {
    Args options = {"--repo", repo, "--workspace-root", root, "--no-default-allow"};
    options.insert(options.end(), flag.begin(), flag.end());
    RunResult res = RunAteam(options, {"/bin/sh", "-c", "echo ran"});
    EXPECT_EQ(res.exit_code, 125) << Describe(res);
    EXPECT_EQ(std::count(res.err.begin(), res.err.end(), '\n'), 1) << Describe(res);
    EXPECT_NE(res.err.find(flag[0] + " " + flag[1] + ": can't be enforced here"), std::string::npos)
        << Describe(res);
    EXPECT_NE(res.err.find("--limits best-effort"), std::string::npos) << Describe(res);
    EXPECT_EQ(res.out.find("ran"), std::string::npos) << Describe(res);
    RunResult listing = RunCommand({"/bin/sh", "-c", "ls -A " + root + " 2>/dev/null"});
    EXPECT_EQ(listing.out, "") << "a refused run left " << listing.out;
  }
  TempDir state;
  std::string status = state.Sub("status.json");
  RunResult res = RunAteam(
      Options({"--memory", "1g", "--limits", "best-effort", "--status-json", status}), {"true"});
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  std::string json = ReadFile(status).value_or("");
  EXPECT_NE(json.find("\"memory\": \"not enforced\""), std::string::npos) << json;
  RunResult dry = RunAteam(Options({"--memory", "1g", "--dry-run"}), {"true"});
  EXPECT_EQ(dry.exit_code, 125) << Describe(dry);
  RunResult dry_best =
      RunAteam(Options({"--memory", "1g", "--limits", "best-effort", "--dry-run"}), {"true"});
  EXPECT_NE(dry_best.out.find("limit memory: not enforced"), std::string::npos) << dry_best.out;
}

// Where this caller has a cgroup, the status document names it as what enforces memory.
TEST_F(RunLimitsTest, TheStatusDocumentNamesWhatEnforcesEachLimit) {
  TempDir state;
  std::string status = state.Sub("status.json");
  RunResult res = RunAteam(Options({"--limits", "best-effort", "--status-json", status}), {"true"});
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  std::string json = ReadFile(status).value_or("");
  const bool cgroup = NoCgroupReason().empty();
  EXPECT_NE(json.find(cgroup ? "\"memory\": \"cgroup\"" : "\"memory\": \"not enforced\""),
            std::string::npos)
      << json;
  EXPECT_NE(json.find(Native() ? "rlimit nproc\"" : "\"pids\": \""), std::string::npos) << json;
}

TEST_F(RunLimitsTest, NoCoreDumpsAndABoundedFileLimit) {
  RunResult res = RunAteam(Options(), {"sh", "-c", "ulimit -c; ulimit -H -n"});
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  std::vector<std::string> lines = Words(res.out);
  ASSERT_EQ(lines.size(), 2U) << res.out;
  EXPECT_EQ(lines[0], "0");
  EXPECT_LE(std::atoll(lines[1].c_str()), 65536);
}

}  // namespace
}  // namespace sbx::integration::run
