// `run --dry-run` prints the plan and makes nothing: no dispatch directory, no state
// directory, no socket, no process, no cgroup. Checked twice: by what is left on the host,
// and by tracing every call of the dry run that could create something.
#include <gtest/gtest.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "integration/run/run_support.h"

namespace sbx::integration::run {
namespace {

class RunDryRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"git"});
    if (!missing.empty()) GTEST_SKIP() << missing;
    repo_ = scratch_.Sub("repo");
    ASSERT_EQ(MakeOneCommitRepository(repo_), 0);
    ASSERT_EQ(RunCommand({"mkdir", root_, runtime_dir_}).exit_code, 0);
  }

  // Every part of a dispatch that makes something: a fresh clone borrowing from an object
  // cache, routes, a terminal, a cgroup limit (best effort: an unprivileged caller has no
  // cgroup on every host), the ledger.
  [[nodiscard]] Args Options() const {
    return {"--repo",
            repo_,
            "--workspace-root",
            root_,
            "--allow",
            "api.example.test=192.0.2.1:443",
            "--tty",
            "--memory",
            "1G",
            "--limits",
            "best-effort",
            "--ledger",
            scratch_.Sub("ledger"),
            "--object-cache",
            "--cache-root",
            caches_,
            "--dry-run"};
  }
  [[nodiscard]] RunOptions Env() const { return WithEnv({"XDG_RUNTIME_DIR=" + runtime_dir_}); }

  TempDir scratch_;
  std::string repo_;
  std::string root_ = scratch_.Sub("dispatches");
  std::string runtime_dir_ = scratch_.Sub("xdg");
  std::string caches_ = scratch_.Sub("caches");
};

TEST_F(RunDryRunTest, LeavesNothingOnTheHost) {
  RunResult res = RunAteam(Options(), {"true"}, Env());
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  EXPECT_NE(res.out.find("route: api.example.test:443 tls at 127.77.0.2 -> 192.0.2.1:443"),
            std::string::npos)
      << res.out;
  EXPECT_TRUE(DirectoryEntries(root_).empty()) << "the dry run made a dispatch directory";
  EXPECT_TRUE(DirectoryEntries(runtime_dir_).empty()) << "the dry run made a state directory";
  EXPECT_EQ(access(scratch_.Sub("ledger").c_str(), F_OK), -1) << "the dry run opened the ledger";
  EXPECT_EQ(CountLines(res.out, "object cache: " + caches_ + "/"), 1) << res.out;
  EXPECT_EQ(CountLines(res.out, "none yet (nor its cache root): would be filled from"), 1)
      << res.out;
  EXPECT_EQ(access(caches_.c_str(), F_OK), -1) << "the dry run made the cache root";
}

// With the cache there: the dry run says it would be reused and shows its read-only bind,
// and touches nothing (the lock file keeps its time, no lock is taken, nothing is added).
TEST_F(RunDryRunTest, AnObjectCacheThereIsShownReusedAndLeftAlone) {
  Args real = Options();
  real.pop_back();  // --dry-run
  RunResult filled = RunAteam(real, {"true"}, Env());
  ASSERT_EQ(filled.exit_code, 0) << Describe(filled);
  std::string name;
  for (const auto& entry : DirectoryEntries(caches_)) {
    if (entry.ends_with(".lock")) name = entry.substr(0, entry.size() - 5);
  }
  ASSERT_FALSE(name.empty()) << "no cache made";
  const std::string cache = caches_ + "/" + name;
  ASSERT_EQ(RunCommand({"touch", "-d", "2 days ago", cache + ".lock"}).exit_code, 0);
  const std::vector<std::string> before = DirectoryEntries(caches_);
  const std::string stamp = RunCommand({"stat", "-c", "%Y", cache + ".lock"}).out;
  RunResult res = RunAteam(Options(), {"true"}, Env());
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  EXPECT_EQ(CountLines(res.out, "object cache: " + cache + ": passes its checks: would be reused"),
            1)
      << res.out;
  EXPECT_EQ(CountLines(res.out, "bind " + cache + " -> " + cache + " (ro)"), 1) << res.out;
  EXPECT_EQ(CountLines(res.out, "--ro-bind " + cache + " " + cache), 1) << res.out;
  EXPECT_EQ(DirectoryEntries(caches_), before);
  EXPECT_EQ(RunCommand({"stat", "-c", "%Y", cache + ".lock"}).out, stamp) << "the lock was touched";
}

// Under strace: no process or thread started, no socket bound or listening, no directory
// made (the dispatch root, the state directory's parent, the cgroup tree alike), no file
// created. The sealed memfds of the generated files are not files of any directory.
TEST_F(RunDryRunTest, TracedDryRunStartsAndCreatesNothing) {
  if (access("/usr/bin/strace", X_OK) != 0) {
    GTEST_SKIP() << "no /usr/bin/strace to trace the dry run (scripts/install-deps.sh)";
  }
  const std::string trace = scratch_.Sub("trace");
  Args argv = {"/usr/bin/strace",
               "-f",
               "-qq",
               "-o",
               trace,
               "-e",
               "trace=clone,clone3,fork,vfork,bind,listen,mkdir,mkdirat,mknodat,symlinkat,linkat,"
               "openat,creat"};
  for (const std::string& arg : RunArgv(Options(), {"true"})) argv.push_back(arg);
  RunResult res = RunCommand(argv, Env());
  if (res.exit_code != 0 && res.err.find("ptrace") != std::string::npos) {
    GTEST_SKIP() << "strace cannot trace here: " << res.err;
  }
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  std::istringstream lines(ReadFile(trace).value_or(""));
  std::vector<std::string> made;
  for (std::string line; std::getline(lines, line);) {
    const bool creates =
        line.find("O_CREAT") != std::string::npos || line.find("openat(") == std::string::npos;
    const bool failed = line.find(" = -1 ") != std::string::npos;
    if (creates && !failed) made.push_back(line);
  }
  EXPECT_TRUE(made.empty()) << "the dry run made something:\n" << ::testing::PrintToString(made);
  EXPECT_TRUE(DirectoryEntries(root_).empty());
  EXPECT_TRUE(DirectoryEntries(runtime_dir_).empty());
}

// A root caller's dispatch leases its host ids when it starts: the dry run says from which
// range, names them LEASED_UID and LEASED_GID, and shows no host side of 65534 (the agent
// keeps that uid inside only). No lease is taken: the lease directory gains no file.
TEST_F(RunDryRunTest, ARootCallersDryRunShowsTheLeaseRangeNotTheOverflowIds) {
  if (!IsRoot()) GTEST_SKIP() << "leased host ids are a root caller's: needs root";
  const std::string leases = "/var/lib/ateam-sandbox/leases";
  const std::vector<std::string> before = DirectoryEntries(leases);
  RunResult res = RunAteam(Options(), {"true"}, Env());
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  if (res.out.find("host ids: a uid and gid leased") == std::string::npos) {
    // A user namespace that does not map the built-in block runs every dispatch as its
    // overflow ids: then that is what the dry run shows.
    EXPECT_NE(res.out.find("uid map: 65534 65534 1"), std::string::npos) << res.out;
    GTEST_SKIP() << "this user namespace does not map the lease range: no lease to show";
  }
  EXPECT_NE(res.out.find("uid map: 65534 LEASED_UID 1"), std::string::npos) << res.out;
  EXPECT_NE(res.out.find("gid map: 65534 LEASED_GID 1"), std::string::npos) << res.out;
  EXPECT_NE(res.out.find("setpriv --reuid=\"$LEASED_UID\" --regid=\"$LEASED_GID\""),
            std::string::npos)
      << res.out;
  EXPECT_EQ(res.out.find("uid map: 65534 65534"), std::string::npos) << res.out;
  EXPECT_EQ(res.out.find("--reuid=65534"), std::string::npos) << res.out;
  EXPECT_EQ(DirectoryEntries(leases), before) << "the dry run took a lease";
}

}  // namespace
}  // namespace sbx::integration::run
