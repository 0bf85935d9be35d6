// The steps around the agent are bounded too: a clone source that never answers ends at
// --timeout, a FIFO the agent left at .git/index does not hang the harvest, and no filter
// driver of the workspace's config runs in the harvest.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <string>

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

// A TCP port on 127.0.0.1 that takes connections (the kernel completes them into the
// backlog) and never answers a byte: a git:// server that stalls.
class StalledServer {
 public:
  StalledServer() : fd_(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (bind(fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        listen(fd_.get(), 16) != 0 ||
        getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      std::abort();
    }
    port_ = ntohs(addr.sin_port);
  }
  [[nodiscard]] int port() const { return port_; }

 private:
  Fd fd_;
  int port_ = 0;
};

class RunDispatchBoundsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"sh", "git", "mkfifo"});
    if (!missing.empty()) GTEST_SKIP() << missing;
    repo_ = scratch_.Sub("repo");
    ASSERT_EQ(MakeOneCommitRepository(repo_), 0);
  }
  [[nodiscard]] std::string Status() const {
    return ReadFile(scratch_.Sub("status.json")).value_or("");
  }

  RootTempDir scratch_;
  std::string repo_;
};

// The clone is inside the dispatch's deadline: a source that never answers ends the run at
// --timeout (reason timeout, 124), with nothing started and nothing left in the root.
TEST_F(RunDispatchBoundsTest, AStalledCloneSourceEndsAtTheTimeout) {
  StalledServer server;
  const std::string root = scratch_.Sub("dispatches");
  RunResult res = RunAteam(
      {"--repo", "git://127.0.0.1:" + std::to_string(server.port()) + "/repo", "--workspace-root",
       root, "--no-default-allow", "--timeout", "2", "--status-json", scratch_.Sub("status.json")},
      {"/bin/sh", "-c", "touch $ATEAM_OUT/ran"}, WithTimeout(milliseconds(60000)));
  EXPECT_FALSE(res.timed_out) << Describe(res);
  EXPECT_EQ(res.exit_code, 124) << Describe(res);
  EXPECT_EQ(Field(Status(), "reason"), "\"timeout\"") << Status();
  for (const auto& name : DirectoryEntries(root)) {
    EXPECT_TRUE(name.starts_with(".")) << "left in the root: " << name;
  }
}

// A FIFO at .git/index: the harvest refuses the git directory instead of blocking on it;
// the run ends harvest-failed, with no patch file.
TEST_F(RunDispatchBoundsTest, AFifoAtTheGitIndexDoesNotHangTheHarvest) {
  const std::string patch = scratch_.Sub("work.patch");
  RunResult res = RunAteam(
      {"--repo", repo_, "--workspace-root", scratch_.Sub("dispatches"), "--no-default-allow",
       "--patch", patch, "--status-json", scratch_.Sub("status.json")},
      {"/bin/sh", "-c", "echo new > file; rm -f .git/index; mkfifo .git/index"},
      WithTimeout(milliseconds(120000)));
  EXPECT_FALSE(res.timed_out) << Describe(res);
  EXPECT_EQ(res.exit_code, 125) << Describe(res);
  EXPECT_EQ(Field(Status(), "reason"), "\"harvest-failed\"") << Status();
  EXPECT_NE(Field(Status(), "patch_error").find("not a regular file"), std::string::npos)
      << Status();
  EXPECT_NE(access(patch.c_str(), F_OK), 0) << "a patch was written";
}

// Standalone harvest: a clean filter the workspace's config names does not run (its output
// would be in the patch); the file's own content is.
TEST_F(RunDispatchBoundsTest, HarvestRunsNoFilterOfTheWorkspace) {
  ASSERT_EQ(
      RunCommand({"git", "-C", repo_, "config", "filter.evil.clean", "sed s/secret/FILTERED/"})
          .exit_code,
      0);
  ASSERT_EQ(RunCommand({"git", "-C", repo_, "config", "filter.evil.required", "true"}).exit_code,
            0);
  WriteFile(repo_ + "/.gitattributes", "* filter=evil\n");
  WriteFile(repo_ + "/notes", "secret words\n");
  const std::string patch = scratch_.Sub("harvest.patch");
  RunResult res = RunCommand({AteamPath(), "harvest", repo_, "-o", patch});
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  std::string text = ReadFile(patch).value_or("");
  EXPECT_NE(text.find("+secret words"), std::string::npos) << text;
  EXPECT_EQ(text.find("FILTERED"), std::string::npos) << text;
}

// --dry-run prints no secret: a variable named like one (and the presets' key variables)
// shows *** for its value, in the env lines and the bwrap line alike.
TEST_F(RunDispatchBoundsTest, DryRunMasksSecretValues) {
  RunResult res = RunAteam({"--repo", repo_, "--workspace-root", scratch_.Sub("dispatches"),
                            "--no-default-allow", "--dry-run", "--setenv", "MY_API_TOKEN=hunter2",
                            "--setenv", "Db_Password=swordfish", "--setenv", "PLAIN=visible"},
                           {"/bin/true"});
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  EXPECT_EQ(res.out.find("hunter2"), std::string::npos) << res.out;
  EXPECT_EQ(res.out.find("swordfish"), std::string::npos) << res.out;
  EXPECT_NE(res.out.find("MY_API_TOKEN=***"), std::string::npos) << res.out;
  EXPECT_NE(res.out.find("PLAIN=visible"), std::string::npos) << res.out;
}

// A nested repository the agent made under a name that is not UTF-8 (with an escape
// sequence in it): the status document still parses with a strict UTF-8 JSON parser, and
// run's line about it reaches the terminal escaped.
TEST_F(RunDispatchBoundsTest, TheStatusDocumentIsValidUtf8WhateverTheNames) {
  std::string missing = MissingPrerequisite({"python3"});
  if (!missing.empty()) GTEST_SKIP() << missing;
  RunResult res = RunAteam(
      {"--repo", repo_, "--workspace-root", scratch_.Sub("dispatches"), "--no-default-allow",
       "--status-json", scratch_.Sub("status.json")},
      {"/bin/sh", "-c", "d=$(printf 'n\\377\\033[2Jx'); mkdir \"$d\" && git -C \"$d\" init -q"});
  ASSERT_EQ(res.exit_code, 0) << Describe(res);
  EXPECT_EQ(Field(Status(), "workspace_tainted"), "true") << Status();
  RunResult parsed = RunCommand({"python3", "-c",
                                 "import json, sys; d = json.loads(open(sys.argv[1], "
                                 "'rb').read().decode('utf-8', 'strict')); "
                                 "print(''.join(d['workspace_taint']))",
                                 scratch_.Sub("status.json")});
  EXPECT_EQ(parsed.exit_code, 0) << Describe(parsed);
  EXPECT_NE(parsed.out.find("n\\xff"), std::string::npos) << parsed.out;
  EXPECT_EQ(res.err.find('\x1b'), std::string::npos) << res.err;
  EXPECT_EQ(res.err.find('\xff'), std::string::npos) << res.err;
}

// --rm removes a tree deeper than any descriptor budget (300 levels the agent made), even
// when the run failed.
TEST_F(RunDispatchBoundsTest, RmRemovesATreeOfAnyDepth) {
  const std::string root = scratch_.Sub("dispatches");
  RunResult res =
      RunAteam({"--repo", repo_, "--workspace-root", root, "--no-default-allow", "--rm"},
               {"/bin/sh", "-c",
                "i=0; while [ $i -lt 300 ]; do mkdir d && cd d || exit 1; "
                "echo x > f; i=$((i+1)); done"});
  // Deeper than the git guard's check walks: it fails closed (git-guard-incomplete).
  EXPECT_EQ(res.exit_code, 125) << Describe(res);
  for (const auto& name : DirectoryEntries(root)) {
    EXPECT_TRUE(name.starts_with(".")) << "left in the root: " << name;
  }
}

// The git guard's check after the agent fails closed on a tree deeper than it walks, where a
// nested repository could hide: reason git-guard-incomplete, exit 125, the workspace
// tainted, and no --patch written from it.
TEST_F(RunDispatchBoundsTest, GitMetadataTooDeepToCheckFailsClosed) {
  RunResult res = RunAteam(
      {"--repo", repo_, "--workspace-root", scratch_.Sub("dispatches"), "--no-default-allow",
       "--status-json", scratch_.Sub("status.json"), "--patch", scratch_.Sub("work.patch")},
      {"/bin/sh", "-c",
       "i=0; while [ $i -lt 210 ]; do mkdir d && cd d || exit 1; i=$((i+1)); done; "
       "git init -q && git config core.fsmonitor 'touch /tmp/pwned'"});
  EXPECT_EQ(res.exit_code, 125) << Describe(res);
  EXPECT_EQ(Field(Status(), "reason"), "\"git-guard-incomplete\"") << Status();
  EXPECT_EQ(Field(Status(), "workspace_tainted"), "true") << Status();
  EXPECT_NE(res.err.find("did not finish: directories deeper than 200 levels"), std::string::npos)
      << res.err;
  struct stat st {};
  EXPECT_NE(stat(scratch_.Sub("work.patch").c_str(), &st), 0);
}

}  // namespace
}  // namespace sbx::integration::run
