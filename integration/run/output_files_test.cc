// The files `run` and `harvest` write for the caller (--patch, -o, --ledger, --status-json):
// whatever another user planted at the name is refused before anything starts, never
// written through or waited on, and a failed step leaves no partial file.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "integration/run/run_support.h"

namespace sbx::integration::run {
namespace {

class RunOutputFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"sh", "git"});
    if (!missing.empty()) GTEST_SKIP() << missing;
    repo_ = scratch_.Sub("repo");
    ASSERT_EQ(MakeOneCommitRepository(repo_), 0);
    ASSERT_EQ(mkdir(scratch_.Sub("out").c_str(), 0755), 0);
    HandToSandboxUser(scratch_.Sub("out"));
  }
  // A run that would mark the out dir if its agent started, with `flag` FILE.
  RunResult RunWith(const std::string& flag, const std::string& file) {
    return RunAteam({"--repo", repo_, "--workspace-root", scratch_.Sub("dispatches"), "--out",
                     scratch_.Sub("out"), "--no-default-allow", flag, file},
                    {"/bin/sh", "-c", "touch $ATEAM_OUT/ran"});
  }
  [[nodiscard]] bool AgentRan() const { return access(scratch_.Sub("out/ran").c_str(), F_OK) == 0; }

  RootTempDir scratch_;
  std::string repo_;
};

// A FIFO at the name: one line, 125, the agent never starts, nothing waits on the FIFO.
TEST_F(RunOutputFilesTest, AFifoAtAnyOutputNameIsRefusedBeforeTheSandboxStarts) {
  for (const char* flag : {"--patch", "--ledger", "--status-json"}) {
    std::string fifo = scratch_.Sub(std::string("fifo") + flag);
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    RunResult res = RunWith(flag, fifo);
    EXPECT_FALSE(res.timed_out) << flag << ": " << Describe(res);
    EXPECT_EQ(res.exit_code, 125) << flag << ": " << Describe(res);
    EXPECT_EQ(std::count(res.err.begin(), res.err.end(), '\n'), 1) << Describe(res);
    EXPECT_NE(res.err.find("not a regular file"), std::string::npos) << Describe(res);
    EXPECT_FALSE(AgentRan()) << flag;
    struct stat st {};
    EXPECT_TRUE(lstat(fifo.c_str(), &st) == 0 && S_ISFIFO(st.st_mode)) << flag;
  }
}

TEST_F(RunOutputFilesTest, ASymlinkAtThePatchNameIsRefused) {
  std::string target = scratch_.Sub("target");
  std::string link = scratch_.Sub("link.patch");
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  RunResult res = RunWith("--patch", link);
  EXPECT_EQ(res.exit_code, 125) << Describe(res);
  EXPECT_FALSE(AgentRan());
  EXPECT_NE(access(target.c_str(), F_OK), 0) << "the patch went through the symlink";
}

// Another user's file in a sticky shared directory (/tmp's case): refused, left as it was.
TEST_F(RunOutputFilesTest, AnotherUsersFileAtTheNameIsRefused) {
  if (getuid() != 0) GTEST_SKIP() << "needs root to plant a file of another uid";
  std::string shared = scratch_.Sub("shared");
  ASSERT_EQ(mkdir(shared.c_str(), 0777), 0);
  ASSERT_EQ(chmod(shared.c_str(), 01777), 0);
  for (const char* flag : {"--patch", "--ledger", "--status-json"}) {
    std::string planted = shared + "/" + (flag + 2);
    WriteFile(planted, "planted\n");
    ASSERT_EQ(chown(planted.c_str(), 65534, 65534), 0);
    RunResult res = RunWith(flag, planted);
    EXPECT_EQ(res.exit_code, 125) << flag << ": " << Describe(res);
    EXPECT_NE(res.err.find("belongs to uid 65534"), std::string::npos) << Describe(res);
    EXPECT_FALSE(AgentRan()) << flag;
    EXPECT_EQ(ReadFile(planted).value_or(""), "planted\n") << flag;
  }
}

// The caller's own file is replaced whole by a successful run.
TEST_F(RunOutputFilesTest, TheCallersOwnFileIsReplaced) {
  std::string patch = scratch_.Sub("own.patch");
  WriteFile(patch, "old\n");
  RunResult res = RunAteam({"--repo", repo_, "--workspace-root", scratch_.Sub("dispatches"),
                            "--no-default-allow", "--patch", patch},
                           {"/bin/sh", "-c", "echo new > file"});
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  EXPECT_NE(ReadFile(patch).value_or("").find("+new"), std::string::npos);
}

// harvest -o: a failed harvest leaves the old file as it was, and no temporary file.
TEST_F(RunOutputFilesTest, AFailedHarvestLeavesNoPartialFile) {
  std::string out = scratch_.Sub("harvest.patch");
  WriteFile(out, "old\n");
  RunResult res = RunCommand({AteamPath(), "harvest", repo_, "--base",
                              "0123456789012345678901234567890123456789", "-o", out});
  EXPECT_NE(res.exit_code, 0) << Describe(res);
  EXPECT_EQ(ReadFile(out).value_or(""), "old\n");
  std::string fifo = scratch_.Sub("harvest.fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  RunResult refused = RunCommand({AteamPath(), "harvest", repo_, "-o", fifo});
  EXPECT_EQ(refused.exit_code, 125) << Describe(refused);
  RunResult listing = RunCommand({"/bin/sh", "-c", "ls -A " + scratch_.path()});
  EXPECT_EQ(listing.out.find(".tmp"), std::string::npos) << listing.out;
}

}  // namespace
}  // namespace sbx::integration::run
